//! `hone fleet`: many repositories, bounded concurrency, honest aggregate reports, resume,
//! sharding and merge.

use crate::common::repo::git;
use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Records when each mutating request arrived and when its answer was ready (before hone can
/// have it), and answers with a new PR.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Instant, Instant)>>>);

impl Respond for Recorder {
    fn respond(&self, r: &Request) -> ResponseTemplate {
        let arrived = Instant::now();
        let mut seen = self.0.lock().unwrap();
        let n = seen.len() + 1;
        let repo = r.url.path().split('/').nth(3).unwrap_or("x").to_string();
        let reply = ResponseTemplate::new(201)
            .set_body_json(json!({"number": n, "html_url": format!("https://github.example/o/{repo}/pull/{n}")}));
        seen.push((arrived, Instant::now()));
        reply
    }
}

/// Bare origins for 11 URL targets (one always fails its check, one needs no change) and one
/// path that is not a repository.
fn setup(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..11 {
        let work = dir.join(format!("src{i}"));
        let origin = dir.join(format!("origins/r{i:02}.git"));
        let (status, check) = match i {
            3 => ("broken\n", "echo 'this repo can never pass'; exit 1\n"),
            5 => ("fixed\n", CHECK_SH),
            _ => ("broken\n", CHECK_SH),
        };
        origin_with(dir, &work, &origin, status, check);
        lines.push(format!("  - url: {}", origin.display()));
    }
    std::fs::create_dir_all(dir.join("not-a-repo")).unwrap();
    lines.push("  - path: not-a-repo".into());
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.join("job.yaml"),
        "version: 1\nname: fleetjob\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nlimits: { max_fix_attempts: 0 }\nplan: false\npr: { enabled: true }\n",
    )
    .unwrap();
    lines
}

fn fleet_file(dir: &Path, lines: &[String], workspace: &str) -> PathBuf {
    let p = dir.join(format!("fleet-{workspace}.yaml"));
    std::fs::write(
        &p,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nconcurrency: 4\nworkspace: {workspace}\n", lines.join("\n")),
    )
    .unwrap();
    p
}

async fn fleet(args: &[&str], dir: &Path, gh: &MockServer) -> Run {
    let uri: &'static str = gh.uri().leak();
    run_hone_env(args, &[], dir.join("unused"), &[("GITHUB_TOKEN", "ghp_fleet0123456789"), ("GITHUB_API_URL", uri)])
        .await
}

/// A mock GitHub API where no repository has an open PR yet, and every new PR is recorded.
async fn github_creating_prs() -> (MockServer, Recorder) {
    let gh = MockServer::start().await;
    let rec = Recorder::default();
    Mock::given(method("GET"))
        .and(path_regex("^/repos/[^/]+/[^/]+/pulls$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&gh)
        .await;
    Mock::given(method("POST"))
        .and(path_regex("^/repos/[^/]+/[^/]+/pulls$"))
        .respond_with(rec.clone())
        .mount(&gh)
        .await;
    (gh, rec)
}

/// A JSON file hone wrote (`fleet.json`, a repository's `report.json`).
fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{} is missing: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The entry of the repository whose id ends with `id` in a fleet report.
fn repo_entry<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["repos"].as_array().unwrap().iter().find(|r| r["id"].as_str().unwrap().ends_with(id)).unwrap()
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string()))
        .collect()
}

/// The first run over the 12 targets: each repository's status and error code, the aggregate
/// reports, and no shared work tree or report dir.
fn assert_first_fleet_report(ws: &Path) {
    let report = read_json(&ws.join("fleet.json"));
    let st = statuses(&report);
    let get = |id: &str| st.iter().find(|(i, _)| i.ends_with(id)).map(|(_, s)| s.as_str()).unwrap_or("missing");
    assert_eq!(get("r03"), "failed");
    assert_eq!(get("r05"), "no_change");
    assert_eq!(get("not-a-repo"), "failed");
    let created = st.iter().filter(|(_, s)| s == "pr_created").count();
    assert_eq!(created, 9, "{st:?}");
    assert_eq!(repo_entry(&report, "not-a-repo")["code"], "E_GIT");
    assert_eq!(repo_entry(&report, "r03")["code"], "E_BUILD_FAIL");
    // No two repos shared a work tree or a report dir.
    let dirs: std::collections::HashSet<&str> =
        report["repos"].as_array().unwrap().iter().map(|r| r["report_dir"].as_str().unwrap()).collect();
    assert_eq!(dirs.len(), 12);
    let mut trees = std::collections::HashSet::new();
    for r in report["repos"].as_array().unwrap() {
        let p = Path::new(r["report_dir"].as_str().unwrap()).join("report.json");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("every repository has a report")).unwrap();
        // One refused at intake (not a repository) has no work tree to share.
        if let Some(tree) = v["repo"].as_str() {
            assert!(trees.insert(tree.to_string()), "two runs shared a work tree");
        }
    }
    assert_junit_valid(&ws.join("fleet-junit.xml"));
    assert!(std::fs::read_to_string(ws.join("fleet-summary.md")).unwrap().contains("| Repository | Status |"));
}

/// Nine PRs, created one at a time: each request arrives at least 1 s (hone's minimum gap) after
/// the previous one was answered. hone starts its gap when it has the answer, which is after the
/// mock made it, so this holds exactly, with no allowance for a slow machine.
fn assert_prs_created_one_at_a_time(rec: &Recorder) {
    let mut times = rec.0.lock().unwrap().clone();
    assert_eq!(times.len(), 9);
    times.sort();
    for w in times.windows(2) {
        let gap = w[1].0.saturating_duration_since(w[0].1);
        assert!(gap >= std::time::Duration::from_secs(1), "mutations overlapped or were not spaced: {gap:?}");
    }
}

/// Someone makes r03's check passable on origin, and r03 already has an open PR (#77) on its
/// branch, which the next run must update (once) rather than duplicate.
async fn make_r03_passable_with_an_open_pr(dir: &Path, gh: &MockServer) {
    let fix = dir.join("fix-r03");
    git(dir, &["clone", "-q", dir.join("origins/r03.git").to_str().unwrap(), fix.to_str().unwrap()]);
    std::fs::write(fix.join("check.sh"), CHECK_SH).unwrap();
    git(
        &fix,
        &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "make the check passable"],
    );
    git(&fix, &["push", "-q", "origin", "main"]);
    Mock::given(method("GET"))
        .and(wiremock::matchers::path("/repos/origins/r03/pulls"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!([{"number": 77, "html_url": "https://github.example/o/r03/pull/77", "user": {"login": "hone-bot"}}]),
        ))
        .with_priority(1)
        .mount(gh)
        .await;
    // The token's user opened it: it is hone's PR to update.
    let me = json!({"login": "hone-bot", "type": "User"});
    Mock::given(method("GET"))
        .and(wiremock::matchers::path("/user"))
        .respond_with(ResponseTemplate::new(200).set_body_json(me))
        .mount(gh)
        .await;
    Mock::given(method("PATCH"))
        .and(wiremock::matchers::path("/repos/origins/r03/pulls/77"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"number": 77})))
        .expect(1)
        .mount(gh)
        .await;
}

/// The report.json of every repository that succeeded the first time (all but r03).
fn successful_reports(ws: &Path) -> Vec<String> {
    (0..11)
        .filter(|i| *i != 3)
        .map(|i| std::fs::read_to_string(ws.join(format!("reports/origins__r{i:02}/report.json"))).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_reports_each_repo_honestly_and_resumes_only_the_failures() {
    let dir = tempfile::tempdir().unwrap();
    let lines = setup(dir.path());
    let (gh, rec) = github_creating_prs().await;
    let file = fleet_file(dir.path(), &lines, "ws");
    let run = fleet(&["fleet", file.to_str().unwrap()], dir.path(), &gh).await;
    assert_eq!(run.code, 1, "one repo failed, so the fleet fails: {}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("12 repositories"), "{}", run.stdout);
    let ws = dir.path().join("ws");
    assert_first_fleet_report(&ws);
    assert_prs_created_one_at_a_time(&rec);

    // --resume: only the failures run again; the others keep their results untouched. r03 can now
    // pass, and already has an open PR on its branch: the PR is updated, not duplicated.
    make_r03_passable_with_an_open_pr(dir.path(), &gh).await;
    let before = successful_reports(&ws);
    let run = fleet(&["fleet", file.to_str().unwrap(), "--resume"], dir.path(), &gh).await;
    assert_eq!(run.code, 1, "the non-repository still fails: {}", run.stderr);
    assert_eq!(before, successful_reports(&ws), "successful repos were not touched");
    assert_eq!(rec.0.lock().unwrap().len(), 9, "no PR was created again");
    let report = read_json(&ws.join("fleet.json"));
    assert_eq!(report["repos"].as_array().unwrap().iter().filter(|r| r["resumed"] == true).count(), 10);
    let st = statuses(&report);
    assert_eq!(st.iter().find(|(i, _)| i.ends_with("r03")).unwrap().1, "pr_updated");
    gh.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_and_merge_give_the_same_aggregate_as_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let lines = setup(dir.path());
    let gh = MockServer::start().await;
    let whole = fleet_file(dir.path(), &lines, "whole");
    let run = fleet(&["fleet", whole.to_str().unwrap(), "--dry-run"], dir.path(), &gh).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let m = fleet(&["fleet", whole.to_str().unwrap(), "--emit-matrix", "3"], dir.path(), &gh).await;
    assert_eq!(m.code, 0, "{}", m.stderr);
    let matrix: Value = serde_json::from_str(m.stdout.trim()).unwrap();
    let shards: Vec<String> =
        matrix["include"].as_array().unwrap().iter().map(|s| s["shard"].as_str().unwrap().to_string()).collect();
    assert_eq!(shards, ["1/3", "2/3", "3/3"]);
    let mut dirs = Vec::new();
    for (k, s) in shards.iter().enumerate() {
        let f = fleet_file(dir.path(), &lines, &format!("shard{k}"));
        let run = fleet(&["fleet", f.to_str().unwrap(), "--dry-run", "--shard", s], dir.path(), &gh).await;
        let shard: Value = read_json(&dir.path().join(format!("shard{k}/fleet.json")));
        let failed = statuses(&shard).iter().any(|(_, s)| s == "failed");
        assert_eq!(run.code, if failed { 1 } else { 0 }, "shard {s}: {}", run.stderr);
        dirs.push(dir.path().join(format!("shard{k}")));
    }
    let out = dir.path().join("merged");
    let mut args = vec!["fleet".to_string(), "merge".into()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = fleet(&args, dir.path(), &gh).await;
    assert_eq!(merged.code, 1, "{}", merged.stderr);
    let a: Value = read_json(&dir.path().join("whole/fleet.json"));
    let b: Value = read_json(&out.join("fleet.json"));
    assert_eq!(statuses(&a), statuses(&b));
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["exit_code"], b["exit_code"]);
    assert!(gh.received_requests().await.expect("wiremock records requests").is_empty(), "dry runs call no API");
    // --only failed: the two failures run again; the other nine are carried over.
    let again = fleet(&["fleet", whole.to_str().unwrap(), "--dry-run", "--only", "failed"], dir.path(), &gh).await;
    assert_eq!(again.code, 1, "{}", again.stderr);
    let a2: Value = read_json(&dir.path().join("whole/fleet.json"));
    let rerun: Vec<&str> = a2["repos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resumed"] != true)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(rerun.len(), 2, "{rerun:?}");
    assert!(rerun.iter().any(|i| i.ends_with("r03")) && rerun.iter().any(|i| i.ends_with("not-a-repo")), "{rerun:?}");
    // Under --json, stdout is only events, each tagged with its repository.
    let j = fleet(&["fleet", whole.to_str().unwrap(), "--dry-run", "--json"], dir.path(), &gh).await;
    assert_eq!(j.code, 1, "{}", j.stderr);
    let events: Vec<Value> = j.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is JSONL only")).collect();
    assert!(events.iter().all(|e| e["repo"].is_string()), "every event names its repo");
    let completed: std::collections::HashSet<&str> =
        events.iter().filter(|e| e["type"] == "run_completed").map(|e| e["repo"].as_str().unwrap()).collect();
    assert_eq!(completed.len(), 12, "one run_completed per repository, including the one refused at intake");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_fleet_writes_the_reports_and_exits_130() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let lines = setup(dir.path());
    let marker = format!("hone-fleet-cancel-{}", std::process::id());
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let started = marks.join("started");
    let script = format!(
        "turns:\n  - tool_calls:\n      - {{ name: run_cmd, arguments: {{ command: \"touch {} && sleep 300 && echo {marker}\" }} }}\n",
        started.display()
    );
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    std::fs::write(
        dir.path().join("policy.yaml"),
        format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display()),
    )
    .unwrap();
    let job = std::fs::read_to_string(dir.path().join("job.yaml")).unwrap();
    std::fs::write(dir.path().join("job.yaml"), format!("{job}policy: policy.yaml\n")).unwrap();
    let file = fleet_file(dir.path(), &lines[..4], "ws");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hone"))
        .args(["fleet", file.to_str().unwrap()])
        .env_remove("GITHUB_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let s2 = started.clone();
    tokio::task::spawn_blocking(move || wait_for_file(&s2, std::time::Duration::from_secs(60))).await.unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = read_json(&dir.path().join("ws/fleet.json"));
    assert_eq!(report["exit_code"], 130);
    assert!(statuses(&report).iter().all(|(_, s)| s == "cancelled"), "{:?}", statuses(&report));
    let alive = survivors(&marker);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
}

/// A dry run pushed nothing, so `--resume` must not count it as done: the real run does the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_a_dry_run_does_the_real_work() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = setup(dir.path()).into_iter().filter(|l| l.contains("r00") || l.contains("r01")).collect();
    let (gh, rec) = github_creating_prs().await;
    let file = fleet_file(dir.path(), &lines, "ws");
    let preview = fleet(&["fleet", file.to_str().unwrap(), "--dry-run"], dir.path(), &gh).await;
    assert_eq!(preview.code, 0, "{}", preview.stderr);
    assert!(rec.0.lock().unwrap().is_empty(), "a dry run opens no PR");
    let run = fleet(&["fleet", file.to_str().unwrap(), "--resume"], dir.path(), &gh).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = read_json(&dir.path().join("ws/fleet.json"));
    assert_eq!(statuses(&report).iter().filter(|(_, s)| s == "pr_created").count(), 2, "{report}");
    assert_eq!(report["repos"].as_array().unwrap().iter().filter(|r| r["resumed"] == true).count(), 0);
    assert_eq!(rec.0.lock().unwrap().len(), 2, "both PRs were opened by the real run");
    for i in ["r00", "r01"] {
        let origin = dir.path().join(format!("origins/{i}.git"));
        assert_eq!(git(&origin, &["branch", "--list", "hone/fleetjob"]).trim(), "hone/fleetjob", "{i} was pushed");
    }
}

/// Setup runs per repository: where it fails, that repository is `failed` with `E_SETUP`, and
/// the others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_whose_setup_fails_is_failed_and_the_others_go_on() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        setup(dir.path()).into_iter().filter(|l| ["r00", "r01", "r03"].iter().any(|r| l.contains(r))).collect();
    // r03's check.sh says "never": its setup fails.
    let job = std::fs::read_to_string(dir.path().join("job.yaml")).unwrap();
    let job = job.replace("verify:\n", "setup:\n  - { name: deps, run: \"! grep -q never check.sh\" }\nverify:\n");
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let (gh, rec) = github_creating_prs().await;
    let file = fleet_file(dir.path(), &lines, "ws");
    let run = fleet(&["fleet", file.to_str().unwrap()], dir.path(), &gh).await;
    let report: Value = read_json(&dir.path().join("ws/fleet.json"));
    let r03 = repo_entry(&report, "r03");
    assert_eq!((r03["status"].as_str(), r03["code"].as_str()), (Some("failed"), Some("E_SETUP")), "{report:#}");
    for r in ["r00", "r01"] {
        assert_eq!(repo_entry(&report, r)["status"], "pr_created", "{report:#}");
    }
    assert_eq!(rec.0.lock().unwrap().len(), 2);
    assert_ne!(run.code, 0, "a failed repository makes the fleet's exit code say so");
}
