//! A run killed mid-run (SIGKILL to hone's whole process group) loses nothing and blocks nothing:
//! the next run on the checkout saves the killed run's work under `refs/hone/<job>/`, puts the
//! checkout back on its branch, clean, and goes on; a live run's checkout is refused.

use crate::common::mock_model::{MockModel, Reply, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// `hone run job.yaml` in its own process group (so that the test can kill all of it).
pub(super) fn spawn_run(repo: &Path, env: &[(&str, &str)]) -> Child {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hone"));
    cmd.args(["run", SPEC])
        .current_dir(repo)
        .env("HONE_TEST_API_KEY", KEY)
        .env("HONE_MEMORY_DIR", fresh_memory_dir())
        .envs(env.iter().copied())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.spawn().expect("hone starts")
}

/// SIGKILL to the run's whole process group, and the run reaped.
pub(super) fn kill_group(mut child: Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
}

/// Wait (bounded) until `done` holds: an event the test can observe, never a fixed time.
pub(super) fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(90), "{what} did not happen");
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

/// The run marker hone keeps in the git dir while it works.
fn marker(repo: &TestRepo) -> Option<Value> {
    let text = std::fs::read_to_string(repo.path.join(".git/hone/run.json")).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// Whether process `pid` is stopped (SIGSTOP).
fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).is_some_and(|s| s == "T")
}

/// The next run of the job recovered the killed run `id`: its work is on the killed ref, the
/// run went on and succeeded, and the checkout is back on `main`, clean, without a marker.
async fn next_run_recovers(repo: &TestRepo, yaml: &str, mock: &MockModel, job: &str, id: &str) -> Value {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let run = run_job(repo, yaml, &[]).await;
    assert_eq!(run.code, 0, "the next run is not blocked: {}", run.stderr);
    let report = run.report();
    let saved = format!("refs/hone/{job}/killed-{id}");
    assert_eq!(report["recovered"]["run_id"], id, "{report:#}");
    assert_eq!(report["recovered"]["saved_ref"], saved.as_str());
    assert_eq!(report["recovered"]["restored_to"], "main");
    let warned = report["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("a killed run"));
    assert!(warned, "the report says so: {report:#}");
    assert_eq!(repo.head_branch(), "main");
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
    assert!(marker(repo).is_none(), "the marker goes once the checkout is back");
    report
}

pub(super) fn killed_id(repo: &TestRepo) -> String {
    let m = marker(repo).expect("the killed run left its marker");
    m["run_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_while_the_model_answers_is_saved_and_undone_by_the_next() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "partial\n"})), false)
        .turn(call("write_file", json!({"path": "notes/new.txt", "content": "untracked\n"})), false)
        .push(Reply::Stall(vec![]));
    let yaml = job_yaml("killed-session", &mock.base_url, false);
    commit_spec(&repo, &yaml);
    let child = spawn_run(&repo.path, &[]);
    wait_until("the third model request", || mock.requests().len() >= 3);
    kill_group(child);
    assert_eq!(repo.head_branch(), "hone/killed-session", "the kill left the checkout mid-run");
    let id = killed_id(&repo);
    next_run_recovers(&repo, &yaml, &mock, "killed-session", &id).await;
    let saved = format!("refs/hone/killed-session/killed-{id}");
    assert_eq!(repo.show(&saved, "status.txt"), "partial");
    assert_eq!(repo.show(&saved, "notes/new.txt"), "untracked", "untracked files are saved too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_during_its_check_is_saved_and_undone_by_the_next() {
    require!(Need::UserNamespaces);
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().display().to_string();
    std::fs::write(marks.path().join("block"), "").unwrap();
    // The check blocks once, after the change: it says it started, then waits to be killed.
    let check = format!(
        "if [ -e {m}/block ] && grep -qx fixed status.txt; then rm {m}/block; touch {m}/started; sleep 300; fi\n{CHECK_SH}"
    );
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", &check), ("src/lib.txt", "hello\n")]);
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{m}\"]\n");
    let yaml = with_policy(&repo, &job_yaml("killed-check", &mock.base_url, false), &policy);
    commit_spec(&repo, &yaml);
    let child = spawn_run(&repo.path, &[]);
    let started = marks.path().join("started");
    wait_until("the check's start", || started.exists());
    kill_group(child);
    let id = killed_id(&repo);
    next_run_recovers(&repo, &yaml, &mock, "killed-check", &id).await;
    assert_eq!(repo.show(&format!("refs/hone/killed-check/killed-{id}"), "status.txt"), "fixed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_between_its_commit_and_the_restore_is_saved_and_undone_by_the_next() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let yaml = job_yaml("killed-commit", &mock.base_url, false);
    commit_spec(&repo, &yaml);
    let child = spawn_run(&repo.path, &[("HONE_TEST_STOP_AT", "after-commit")]);
    let pid = child.id();
    wait_until("hone's stop after its commit", || stopped(pid));
    kill_group(child);
    let committed = repo.git(&["rev-parse", "hone/killed-commit"]);
    assert_ne!(committed, repo.git(&["rev-parse", "main"]), "the killed run had committed");
    let id = killed_id(&repo);
    let report = next_run_recovers(&repo, &yaml, &mock, "killed-commit", &id).await;
    assert_eq!(report["recovered"]["saved_sha"], committed.as_str(), "the killed run's commit is kept");
    assert_eq!(repo.show(&format!("refs/hone/killed-commit/killed-{id}"), "status.txt"), "fixed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_is_not_taken_over_and_hone_recover_undoes_a_killed_one() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "partial\n"})), false)
        .push(Reply::Stall(vec![]));
    let yaml = job_yaml("live", &mock.base_url, false);
    commit_spec(&repo, &yaml);
    let child = spawn_run(&repo.path, &[]);
    wait_until("the second model request", || mock.requests().len() >= 2);
    let id = killed_id(&repo);
    // Another job on the same checkout while the first works: refused, nothing touched.
    let other = job_yaml("other", &mock.base_url, false);
    let run = run_job_outside(&repo, &other, &[], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("E_CONFLICT") && run.stderr.contains("another hone run"), "{}", run.stderr);
    assert_eq!(marker(&repo).unwrap()["run_id"], id.as_str(), "the live run's marker stays");
    assert_eq!(repo.head_branch(), "hone/live");
    assert_eq!(repo.file("status.txt"), "partial\n", "the live run's work is untouched");
    // The same job again, with the same report dir as the live run: refused before that dir,
    // the live run's, is emptied.
    let events = repo.path.join(".hone/reports/events.jsonl");
    let live_events = std::fs::read_to_string(&events).expect("the live run's events");
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_hone"))
        .args(["run", SPEC])
        .current_dir(&repo.path)
        .env("HONE_TEST_API_KEY", KEY)
        .env("HONE_MEMORY_DIR", fresh_memory_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    let now = std::fs::read_to_string(&events).expect("the live run's events are still there");
    assert!(now.starts_with(&live_events), "the live run's report dir was emptied");
    let recover = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hone"));
        cmd.arg("recover").args(args).arg("--repo").arg(&repo.path).output().unwrap()
    };
    let refused = recover(&[]);
    assert_eq!(refused.status.code(), Some(2), "hone recover refuses a live run too");
    kill_group(child);
    let out = recover(&["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    let saved = format!("refs/hone/live/killed-{id}");
    assert_eq!(said["recovered"]["saved_ref"], saved.as_str());
    assert_eq!(repo.show(&saved, "status.txt"), "partial");
    assert_eq!(repo.head_branch(), "main");
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
    assert!(marker(&repo).is_none());
    let again = recover(&[]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to recover"));
}
