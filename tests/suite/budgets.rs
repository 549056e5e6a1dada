//! Budgets: turns and wall time.

use crate::common::mock_model::{MockModel, call};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_budget_runs_out() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    for _ in 0..5 {
        mock.turn(call("list_dir", json!({})), false);
    }
    let yaml = job_yaml("turns", &mock.base_url, false).replace("max_turns: 10", "max_turns: 3");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 3);
    let report = run.report();
    assert_eq!(report["status"], "budget_exhausted");
    assert_eq!(report["errors"][0]["code"], "E_BUDGET");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("turn budget (3)"));
    assert_junit_valid(&run.report_dir.join("junit.xml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_time_budget_runs_out_and_kills_the_running_command() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    // A unique marker so the test can look for survivors of the process group.
    let marker = format!("hone-wall-{}", std::process::id());
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(call("run_cmd", json!({"command": format!("sh -c 'sleep 300; echo {marker}' & sleep 300")})), false);
    let yaml = job_yaml("wall", &mock.base_url, false).replace("max_wall_time: 60s", "max_wall_time: 2s");
    let yaml = with_policy(&repo, &yaml, OPEN_POLICY);
    let started = std::time::Instant::now();
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    // It ended on its 2 s budget, not on the 300 s command (a bound 30 times the budget: safe).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // The budget must run out while the command runs (it starts ~0.2 s into the run on a loaded
    // 2-core machine); if a slower machine ever gets there too late, this says so.
    let ran = run.events().iter().any(|e| e["type"] == "tool_call_started" && e["tool"] == "run_cmd");
    assert!(ran, "the wall-time budget ran out before the command started: the test needs a longer budget");
    let report = run.report();
    assert_eq!(report["status"], "budget_exhausted");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("wall-time budget (2s)"));
    // The partial work is saved, not committed, and the checkout is restored.
    assert_eq!(report["saved_ref"], "refs/hone/wall/failed");
    assert!(repo.is_clean() && repo.head_branch() == "main");
    let alive = survivors(&marker);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
}
