//! Budgets: turns and wall time.

use crate::common::mock_model::{MockModel, Reply, call, text};
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

/// `model.pricing` with the mock's usage per turn (100 prompt tokens, 64 of them cached, 20 out):
/// 36 × $10 + 64 × $1 + 20 × $1000 per million = $0.020424 a turn.
const PRICED: &str = "  pricing: { input: 10, cached_input: 1, output: 1000 }\n  max_output_tokens: 10\n";
const PER_TURN: f64 = 0.020424;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reports_its_cost_the_model_that_answered_and_its_version() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("list_dir", json!({})), false);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let yaml = job_yaml("cost", &mock.base_url, false)
        .replace("  api_key_env: HONE_TEST_API_KEY\n", &format!("  api_key_env: HONE_TEST_API_KEY\n{PRICED}"));
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let cost = report["cost"]["usd"].as_f64().unwrap();
    assert!((cost - 3.0 * PER_TURN).abs() < 1e-9, "{cost}");
    assert_eq!(report["cost"]["pricing"]["cache_write"], 10.0, "cache writes default to the input price");
    assert_eq!(report["model"], "mock-model");
    assert_eq!(report["model_id"], crate::common::mock_model::MODEL_ID);
    assert_eq!(report["hone_version"], env!("CARGO_PKG_VERSION"));
    let summary = run.read("summary.md");
    assert!(summary.contains("| Cost | $0.0613 |"), "{summary}");
    assert!(summary.contains("(answered by `mock-model-2026-11-01`)"), "{summary}");

    // Without prices, the cost is not made up.
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let run = run_job(&repo, &job_yaml("no-cost", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.report()["cost"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_budget_stops_the_run_before_a_request_that_could_exceed_it() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    for i in 0..9 {
        mock.turn(call("list_dir", json!({"path": if i % 2 == 0 { "." } else { "src" }})), false);
    }
    let yaml = job_yaml("cost-cap", &mock.base_url, false)
        .replace("  api_key_env: HONE_TEST_API_KEY\n", &format!("  api_key_env: HONE_TEST_API_KEY\n{PRICED}"))
        .replace("max_fix_attempts: 2 }", "max_fix_attempts: 2, max_cost_usd: 0.15 }");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "budget_exhausted", "{:#}", report["errors"]);
    let err = &report["errors"][0];
    assert_eq!(err["code"], "E_BUDGET");
    let msg = err["message"].as_str().unwrap();
    assert!(msg.starts_with("the cost budget ($0.15) would be exceeded:"), "{msg}");
    let made = mock.requests().len();
    assert!((2..9).contains(&made), "it stopped part way: {made} requests");
    let cost = report["cost"]["usd"].as_f64().unwrap();
    assert!((cost - made as f64 * PER_TURN).abs() < 1e-9 && cost <= 0.15, "{cost}");
    assert_eq!(report["cost"]["limit_usd"], 0.15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_count_against_the_cost_budget_and_empty_answers_are_paid_for() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    // An empty answer (billed, then asked again), then the fix.
    mock.turn(text(""), false);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let priced = |name: &str, base: &str| {
        job_yaml(name, base, false)
            .replace("  api_key_env: HONE_TEST_API_KEY\n", &format!("  api_key_env: HONE_TEST_API_KEY\n{PRICED}"))
    };
    let run = run_job(&repo, &priced("paid", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cost = run.report()["cost"]["usd"].as_f64().unwrap();
    // Three answers were billed: the empty one, the write, and the last word.
    assert_eq!(mock.requests().len(), 3);
    assert!((cost - 3.0 * PER_TURN).abs() < 1e-9, "the empty answer is in the cost: {cost}");

    // Failed attempts count at the most they could cost: the retries stop at the budget.
    let mock = MockModel::start().await;
    for _ in 0..6 {
        mock.push(Reply::Status { code: 503, headers: vec![], body: "{}".into() });
    }
    let yaml = priced("retry-cap", &mock.base_url)
        .replace("max_attempts: 4", "max_attempts: 6")
        .replace("max_fix_attempts: 2 }", "max_fix_attempts: 2, max_cost_usd: 0.15 }");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "budget_exhausted");
    let msg = report["errors"][0]["message"].as_str().unwrap();
    assert!(msg.starts_with("the cost budget ($0.15) would be exceeded by a retry"), "{msg}");
    assert!(mock.requests().len() < 6, "{} attempts", mock.requests().len());
}
