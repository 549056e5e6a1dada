//! Provider faults: rate limits, cut streams, bad tool calls.

use crate::common::mock_model::{MockModel, Reply, Turn, call, text};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_with_retry_after_is_honoured_then_succeeds() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.push(Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "1".into())],
        body: r#"{"error":{"message":"Rate limit reached"}}"#.into(),
    });
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true).turn(text("ok"), true);
    let run = run_job(&repo, &job_yaml("ratelimit", &mock.base_url, true), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 3);
    let report = run.report();
    assert_eq!(report["model_retries"]["by_kind"]["rate_limited"], 1);
    let retry = run.events().into_iter().find(|e| e["type"] == "model_retry").expect("a model_retry event");
    // The backoff alone would wait 10ms; Retry-After says 1s.
    assert_eq!(retry["delay_ms"], 1000);
    assert_eq!(retry["class"], "retryable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_answer_is_retried() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let t = call("write_file", json!({"path": "status.txt", "content": "fixed\n"}));
    let mut cut = t.sse(1, false);
    cut.truncate(cut.len() - 1); // drop the second half of the arguments, and no finish_reason
    mock.push(Reply::Sse(cut));
    mock.turn(t, true).turn(text("ok"), true);
    let run = run_job(&repo, &job_yaml("cut", &mock.base_url, true), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["model_retries"]["by_kind"]["stream_cut"], 1);
    assert_eq!(mock.requests().len(), 3);
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_hits_the_idle_timeout_and_is_retried() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let t = call("write_file", json!({"path": "status.txt", "content": "fixed\n"}));
    mock.push(Reply::Stall(t.sse(1, false)[..1].to_vec()));
    mock.turn(t, true).turn(text("ok"), true);
    let run = run_job(&repo, &stalling_job_yaml("stall", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["model_retries"]["by_kind"]["idle_timeout"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_arguments_and_unknown_tools_become_error_results() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let bad = Turn::default()
        .with_call("write_file", "{\"path\": \"status.txt\", \"content\": ")
        .with_call("frobnicate", "{}");
    mock.turn(bad, true)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true)
        .turn(text("ok"), true);
    let run = run_job(&repo, &job_yaml("badargs", &mock.base_url, true), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    let results: Vec<&str> =
        msgs.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].starts_with("error E_INVALID_ARGS") && results[0].contains("not valid JSON"), "{}", results[0]);
    assert!(
        results[1].starts_with("error E_INVALID_ARGS") && results[1].contains("unknown tool `frobnicate`"),
        "{}",
        results[1]
    );
    let calls = run.report()["tool_calls"].as_array().unwrap().clone();
    assert_eq!(calls[0]["code"], "E_INVALID_ARGS");
    assert_eq!(calls[1]["code"], "E_INVALID_ARGS");
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_errors_are_not_retried_and_exit_3() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.push(Reply::Status {
        code: 401,
        headers: vec![],
        body: format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#),
    });
    let run = run_job(&repo, &job_yaml("auth", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 1);
    let report = run.report();
    assert_eq!(report["errors"][0]["code"], "E_MODEL");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("Incorrect API key provided: [REDACTED]"));
    run.assert_no_secret(KEY);
    assert!(repo.is_clean() && repo.head_branch() == "main");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_until_retries_run_out_exit_3() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    for _ in 0..4 {
        mock.push(Reply::Status { code: 503, headers: vec![], body: "{}".into() });
    }
    let run = run_job(&repo, &job_yaml("down", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(run.report()["model_retries"]["by_kind"]["server_error"], 3);
}
