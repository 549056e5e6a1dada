//! Cancellation: SIGTERM mid-command stops the run in order.

use crate::common::mock_model::{MockModel, call};
use crate::common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_command_aborts_cleanly_with_exit_130() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let marker = format!("hone-cancel-{}", std::process::id());
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let started = marks.join("cmd-started");
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "partial\n"})), false)
        .turn(call("run_cmd", json!({"command": format!("touch {} && sh -c 'trap \"\" TERM; sleep 300; echo {marker}' & sleep 300", started.display())})), false);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let yaml = with_policy(&repo, &job_yaml("cancel", &mock.base_url, false), &policy);
    commit_spec(&repo, &yaml);
    let child = spawn_job(Path::new(env!("CARGO_BIN_EXE_hone")), &repo.path);
    let started2 = started.clone();
    tokio::task::spawn_blocking(move || wait_for_file(&started2, Duration::from_secs(60))).await.unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let run = Run {
        code: 130,
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        report_dir: repo.path.join(".hone/reports"),
    };
    let report = run.report();
    assert_eq!(report["status"], "cancelled");
    assert_eq!(report["exit_code"], 130);
    assert_eq!(report["states"].as_array().unwrap().last().unwrap()["state"], "ABORTED");
    assert_eq!(run.events().last().unwrap()["type"], "run_completed");
    assert!(run.read("junit.xml").contains("cancelled"));
    // The user's checkout is back as it was; the partial work is saved on a private ref.
    assert_eq!(repo.head_branch(), "main");
    assert!(repo.is_clean());
    assert_eq!(report["saved_ref"], "refs/hone/cancel/failed");
    assert_eq!(repo.show("refs/hone/cancel/failed", "status.txt"), "partial");
    let alive = survivors(&marker);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
}
