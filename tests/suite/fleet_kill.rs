//! A fleet killed with SIGKILL (its whole process group) loses nothing and leaves nothing stuck:
//! before any repository finished, after some had, and while the aggregate reports were being
//! written, `--resume` ends with every repository done, and a repository that had finished is
//! never run again (its report untouched, no model request for it).

use crate::common::mock_model::{Turn, call, text};
use crate::common::repo::git;
use crate::common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const REPOS: usize = 6;

/// A model that knows which repository asks (each repository's AGENTS.md names it): it fixes
/// the check and says so, except for the repositories it holds, whose first request it never
/// answers. Every request is recorded with its repository.
#[derive(Default)]
struct Model {
    held: Mutex<HashSet<String>>,
    asked: Mutex<Vec<String>>,
    arrived: tokio::sync::Notify,
}

impl Model {
    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    fn hold(&self, names: &[&str]) {
        *self.held.lock().unwrap() = names.iter().map(|n| n.to_string()).collect();
    }

    /// Wait until each of `names` has asked (a request is an observable event, not a time).
    async fn wait_for(&self, names: &[&str]) {
        let all_asked = || names.iter().all(|n| self.asked().iter().any(|a| a == n));
        tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                let notified = self.arrived.notified();
                if all_asked() {
                    return;
                }
                notified.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{names:?} never asked the model; asked: {:?}", self.asked()));
    }
}

async fn answer(
    axum::extract::State(m): axum::extract::State<Arc<Model>>,
    body: axum::Json<Value>,
) -> axum::Json<Value> {
    let seen = body.0.to_string();
    let name =
        (1..=REPOS).map(|i| format!("r{i}")).find(|n| seen.contains(&format!("kill-{n}-end"))).unwrap_or_default();
    m.asked.lock().unwrap().push(name.clone());
    m.arrived.notify_waiters();
    if m.held.lock().unwrap().contains(&name) {
        std::future::pending::<()>().await;
    }
    let last_is_tool = body.0["messages"].as_array().and_then(|a| a.last()).is_some_and(|l| l["role"] == "tool");
    let turn: Turn = if last_is_tool {
        text("status.txt says fixed now.")
    } else {
        call("write_file", json!({"path": "status.txt", "content": "fixed\n"}))
    };
    axum::Json(turn.json(1))
}

async fn start_model() -> (Arc<Model>, String) {
    let m = Arc::new(Model::default());
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer)).with_state(m.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (m, format!("http://{addr}/v1"))
}

/// Six bare origins whose check fails until status.txt says fixed, each with an AGENTS.md that
/// names it; the job (the model above, no push, no PR); the fleet file, 2 at a time.
fn setup(dir: &Path, base_url: &str) -> PathBuf {
    let mut lines = Vec::new();
    for i in 1..=REPOS {
        let (work, origin) = (dir.join(format!("src/r{i}")), dir.join(format!("origins/r{i}.git")));
        origin_with(dir, &work, &origin, "broken\n", CHECK_SH);
        std::fs::write(work.join("AGENTS.md"), format!("This is repository kill-r{i}-end.\n")).unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "agents"]);
        git(&work, &["push", "-q", origin.to_str().unwrap(), "HEAD:refs/heads/main"]);
        lines.push(format!("  - url: {}", origin.display()));
    }
    let job = format!("{}git: {{ push: false }}\npr: {{ enabled: false }}\n", user_spec("killjob", base_url));
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let file = dir.join("fleet.yaml");
    let text = format!("version: 1\njob: job.yaml\nrepos:\n{}\nconcurrency: 2\nworkspace: ws\n", lines.join("\n"));
    std::fs::write(&file, text).unwrap();
    file
}

/// `hone fleet FILE [extra]` in a process group of its own (so the test can kill all of it).
fn spawn(file: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hone"));
    cmd.args(["fleet", file.to_str().unwrap(), "--quiet"])
        .args(extra)
        .env("HONE_TEST_API_KEY", KEY)
        .env("HONE_MEMORY_DIR", fresh_memory_dir())
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_APP_ID")
        .env_remove("GITLAB_TOKEN")
        .env_remove("CI_JOB_TOKEN")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    cmd.spawn().expect("hone starts")
}

/// SIGKILL to hone's whole process group, and reap it.
fn kill_group(mut child: std::process::Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let status = child.wait().unwrap();
    assert!(status.code().is_none(), "hone was killed, it did not exit: {status:?}");
}

/// `hone fleet FILE --resume` to its end.
async fn resume(file: &Path) -> std::process::Output {
    let child = spawn(file, &["--resume"], &[]);
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap()
}

/// Each repository's report.json, by name, where it has one.
fn reports(ws: &Path) -> BTreeMap<String, String> {
    (1..=REPOS)
        .filter_map(|i| {
            let p = ws.join(format!("reports/origins__r{i}/report.json"));
            std::fs::read_to_string(p).ok().map(|t| (format!("r{i}"), t))
        })
        .collect()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// After the resume: every repository done, the aggregate reports whole and in agreement, and
/// `resumed` exactly for `carried`.
fn assert_all_done(ws: &Path, carried: &[&str]) {
    let report = read_json(&ws.join("fleet.json"));
    assert_eq!(report["exit_code"], 0, "{report:#}");
    let repos = report["repos"].as_array().unwrap();
    assert_eq!(repos.len(), REPOS, "{report:#}");
    for r in repos {
        let name = r["id"].as_str().unwrap().trim_start_matches("origins__");
        assert_eq!(r["status"], "succeeded", "{name}: {r:#}");
        assert_eq!(r["resumed"], carried.contains(&name), "{name}: {r:#}");
        assert_eq!(r["report_dir"], ws.join(format!("reports/origins__{name}")).display().to_string());
    }
    assert_junit_valid(&ws.join("fleet-junit.xml"));
    let junit = std::fs::read_to_string(ws.join("fleet-junit.xml")).unwrap();
    assert_eq!(junit.matches("<testsuite ").count(), REPOS, "{junit}");
    let summary = std::fs::read_to_string(ws.join("fleet-summary.md")).unwrap();
    assert!((1..=REPOS).all(|i| summary.contains(&format!("origins__r{i}"))), "{summary}");
}

fn names(asked: &[String]) -> Vec<String> {
    let mut n: Vec<String> = asked.iter().cloned().collect::<HashSet<_>>().into_iter().collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_any_repository_finished_the_resume_runs_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let (model, url) = start_model().await;
    let file = setup(dir.path(), &url);
    model.hold(&["r1", "r2"]);
    let child = spawn(&file, &[], &[]);
    model.wait_for(&["r1", "r2"]).await;
    kill_group(child);
    let ws = dir.path().join("ws");
    assert!(!ws.join("fleet.json").exists(), "killed: no aggregate report");
    model.hold(&[]);
    let before = model.asked().len();
    let out = resume(&file).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&model.asked()[before..]), (1..=REPOS).map(|i| format!("r{i}")).collect::<Vec<_>>());
    assert_all_done(&ws, &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_four_finished_the_resume_runs_only_the_other_two() {
    let dir = tempfile::tempdir().unwrap();
    let (model, url) = start_model().await;
    let file = setup(dir.path(), &url);
    // Two workers take r1..r4 in turn; each takes r5 or r6 only once its last one is recorded.
    model.hold(&["r5", "r6"]);
    let child = spawn(&file, &[], &[]);
    model.wait_for(&["r5", "r6"]).await;
    kill_group(child);
    let ws = dir.path().join("ws");
    assert!(!ws.join("fleet.json").exists(), "killed: no aggregate report");
    let finished = reports(&ws);
    for n in ["r1", "r2", "r3", "r4"] {
        assert!(finished.contains_key(n), "{n} finished before the kill: {:?}", finished.keys());
    }
    model.hold(&[]);
    let before = model.asked().len();
    let out = resume(&file).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&model.asked()[before..]), ["r5", "r6"], "only the unfinished ones asked the model");
    let after = reports(&ws);
    for n in ["r1", "r2", "r3", "r4"] {
        assert_eq!(after[n], finished[n], "{n}'s report was not touched");
    }
    assert_all_done(&ws, &["r1", "r2", "r3", "r4"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_the_aggregate_reports_are_written_the_resume_rebuilds_them_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (model, url) = start_model().await;
    let file = setup(dir.path(), &url);
    let ws = dir.path().join("ws");
    // Every repository done, killed before fleet.json was written.
    let mark = dir.path().join("holding");
    let hold = format!("fleet.json:{}", mark.display());
    let child = spawn(&file, &[], &[("HONE_TEST_FLEET_HOLD", &hold)]);
    let m = mark.clone();
    tokio::task::spawn_blocking(move || wait_for_file(&m, Duration::from_secs(120))).await.unwrap();
    kill_group(child);
    assert!(!ws.join("fleet.json").exists());
    assert_eq!(names(&model.asked()).len(), REPOS);
    let asked = model.asked().len();
    let finished = reports(&ws);
    // The resume, killed between fleet.json and fleet-junit.xml: each file is whole or absent.
    std::fs::remove_file(&mark).unwrap();
    let hold = format!("fleet-junit.xml:{}", mark.display());
    let child = spawn(&file, &["--resume"], &[("HONE_TEST_FLEET_HOLD", &hold)]);
    let m = mark.clone();
    tokio::task::spawn_blocking(move || wait_for_file(&m, Duration::from_secs(120))).await.unwrap();
    kill_group(child);
    assert_eq!(read_json(&ws.join("fleet.json"))["repos"].as_array().unwrap().len(), REPOS);
    assert!(!ws.join("fleet-junit.xml").exists() && !ws.join("fleet-summary.md").exists());
    // The last resume writes them all, and nothing ran again.
    let out = resume(&file).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(model.asked().len(), asked, "no repository asked the model again: {:?}", &model.asked()[asked..]);
    assert_eq!(reports(&ws), finished, "no report was touched");
    assert_all_done(&ws, &["r1", "r2", "r3", "r4", "r5", "r6"]);
}

/// `hone fleet merge` reads the same record: a shard killed after some repositories finished
/// merges as what it finished, the rest `cancelled`, never silently dropped; after its resume the
/// merge is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_merges_from_its_journal_and_its_resume_completes_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let (model, url) = start_model().await;
    let file = setup(dir.path(), &url);
    // Shard 1/2 is r1, r3, r5: two workers, r5 held once r1 and r3 are recorded.
    model.hold(&["r5"]);
    let child = spawn(&file, &["--shard", "1/2"], &[]);
    model.wait_for(&["r5"]).await;
    // r5 is taken once one of r1, r3 is recorded: wait for the other's line too (the header's
    // and two more).
    let ws = dir.path().join("ws");
    let j = ws.join("fleet.state.jsonl");
    tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        while std::fs::read_to_string(&j).unwrap_or_default().lines().count() < 3 {
            assert!(start.elapsed() < Duration::from_secs(120), "r1 and r3 were never recorded");
            std::thread::park_timeout(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    kill_group(child);
    let merged = dir.path().join("merged");
    let args = ["fleet", "merge", ws.to_str().unwrap(), "--out", merged.to_str().unwrap()];
    let run = run_hone_env(&args, &[], dir.path().join("unused"), &[]).await;
    assert_eq!(run.code, 130, "a repository never finished: {}\n{}", run.stdout, run.stderr);
    let m = read_json(&merged.join("fleet.json"));
    let st: Vec<(String, String)> =
        m["repos"].as_array().unwrap().iter().map(|r| (r["id"].to_string(), r["status"].to_string())).collect();
    assert_eq!(st.len(), 3, "{m:#}");
    assert!(st.iter().any(|(i, s)| i.contains("r5") && s == "\"cancelled\""), "{m:#}");
    model.hold(&[]);
    let before = model.asked().len();
    let child = spawn(&file, &["--shard", "1/2", "--resume"], &[]);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&model.asked()[before..]), ["r5"]);
    let run = run_hone_env(&args, &[], dir.path().join("unused"), &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let m = read_json(&merged.join("fleet.json"));
    assert!(m["repos"].as_array().unwrap().iter().all(|r| r["status"] == "succeeded"), "{m:#}");
}

/// Apply `edit` to each repository's result in the journal and in fleet.json (the record an
/// older hone resumed from), as someone with the out dir (a shared CI artifact) could.
fn edit_record(ws: &Path, edit: impl Fn(&mut Value), extra: Value) {
    let journal = ws.join("fleet.state.jsonl");
    let mut lines: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.iter_mut().filter_map(|l| l.get_mut("repo")).for_each(|r| edit(&mut r["result"]));
    lines.push(json!({"repo": {"result": extra.clone(), "at_ms": 1}}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if journal.exists() {
        std::fs::write(&journal, text).unwrap();
    }
    let mut report = read_json(&ws.join("fleet.json"));
    report["repos"].as_array_mut().unwrap().iter_mut().for_each(&edit);
    report["repos"].as_array_mut().unwrap().push(extra);
    std::fs::write(ws.join("fleet.json"), report.to_string()).unwrap();
}

/// The record may only make hone skip or re-run a repository of the fleet file: a repository it
/// adds is not one, a changed source or status re-runs it, and a path it names is never used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_record_only_decides_which_repositories_of_the_fleet_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (model, url) = start_model().await;
    let file = setup(dir.path(), &url);
    let out = tokio::task::spawn_blocking({
        let child = spawn(&file, &[], &[]);
        move || child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let ws = dir.path().join("ws");
    let elsewhere = dir.path().join("elsewhere");
    let edit = |r: &mut Value| match r["id"].as_str().unwrap() {
        "origins__r1" => r["report_dir"] = json!(elsewhere.display().to_string()),
        "origins__r2" => r["source"] = json!("https://evil.example/acme/r2"),
        "origins__r3" => r["status"] = json!("failed"),
        _ => {}
    };
    let extra = json!({"id": "origins__evil", "source": elsewhere.display().to_string(), "status": "succeeded",
        "code": null, "error": null, "pr_url": null, "duration_ms": 1, "tokens": 0, "report_dir": elsewhere.display().to_string(),
        "job_hash": "x"});
    edit_record(&ws, edit, extra);
    let before = model.asked().len();
    let out = resume(&file).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&model.asked()[before..]), ["r2", "r3"], "a changed source or status runs again");
    // Every repository is the fleet file's, with its own report dir: none is the record's.
    assert_all_done(&ws, &["r1", "r4", "r5", "r6"]);
    let report = read_json(&ws.join("fleet.json"));
    let shown = report.to_string();
    assert!(!shown.contains("evil") && !shown.contains(elsewhere.to_str().unwrap()), "{report:#}");
    assert!(!elsewhere.exists());
}
