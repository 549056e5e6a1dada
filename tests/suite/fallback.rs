//! `model.fallback`: when the job's model stays unavailable after its retries, the run goes on
//! with the next model (another provider's API), with the same history; errors another model
//! would not fix never fall back.

use crate::common::mock_model::{Dialect, MockModel, Reply, call, text};
use crate::common::*;
use serde_json::{Value, json};

/// The job's model at `first` (OpenAI-compatible, priced at 10/20), falling back to Anthropic at
/// `second` (priced at 1/2).
fn yaml(name: &str, first: &str, second: &str) -> String {
    job_yaml(name, first, true).replace(
        "verify:",
        &format!(
            "  pricing: {{ input: 10.0, output: 20.0 }}\n  fallback:\n    - provider: anthropic\n      name: claude-sonnet-4-5\n      base_url: {second}\n      api_key_env: HONE_TEST_API_KEY\n      pricing: {{ input: 1.0, output: 2.0 }}\nverify:"
        ),
    )
}

fn rate_limited(mock: &MockModel, times: usize) {
    for _ in 0..times {
        mock.push(Reply::Status {
            code: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
        });
    }
}

fn dollars(usage: &Value, input: f64, output: f64) -> f64 {
    (usage["prompt_tokens"].as_f64().unwrap() * input + usage["completion_tokens"].as_f64().unwrap() * output) / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_rate_limited_past_its_retries_hands_the_run_to_the_fallback() {
    let repo = broken_repo();
    let first = MockModel::start().await;
    let second = MockModel::start_as(Dialect::Anthropic).await;
    first.turn(call("read_file", json!({"path": "check.sh"})), true);
    rate_limited(&first, 4);
    second
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true)
        .turn(text("Fixed."), true);
    let run = run_job(&repo, &yaml("fallback", &first.base_url, &second.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(repo.show("hone/fallback", "status.txt"), "fixed");
    assert_eq!(first.requests().len(), 5, "one answer, then 4 attempts (max_attempts) rate limited");
    // The second model got the same history, in its own API: the first model's tool call and
    // its result as tool_use and tool_result blocks.
    let handed = &second.requests()[0].body;
    let messages = handed["messages"].to_string();
    assert!(messages.contains("\"tool_use\"") && messages.contains("read_file"), "{messages}");
    assert!(messages.contains("\"tool_result\"") && messages.contains("grep -qx fixed"), "{messages}");
    second.assert_pairing();

    let report = run.report();
    let models = report["models"].as_array().unwrap();
    assert_eq!(models.len(), 2, "{report:#}");
    assert_eq!(
        (models[0]["provider"].as_str(), models[0]["model"].as_str()),
        (Some("openai-compatible"), Some("mock-model"))
    );
    assert_eq!((models[0]["from_turn"].as_u64(), models[0]["turns"].as_u64()), (Some(1), Some(1)));
    assert!(models[0]["switched_because"].is_null());
    assert_eq!(
        (models[1]["provider"].as_str(), models[1]["model"].as_str()),
        (Some("anthropic"), Some("claude-sonnet-4-5"))
    );
    assert_eq!(
        (models[1]["from_turn"].as_u64(), models[1]["turns"].as_u64()),
        (Some(3), Some(2)),
        "first asked at turn 3"
    );
    let why = models[1]["switched_because"].as_str().unwrap();
    assert!(why.contains("rate_limited") && why.contains("gave up after 4"), "{why}");
    // The cost: each model's tokens at its own prices.
    let expected = dollars(&models[0]["usage"], 10.0, 20.0) + dollars(&models[1]["usage"], 1.0, 2.0);
    assert!(expected > 0.0);
    let usd = report["cost"]["usd"].as_f64().unwrap();
    assert!((usd - expected).abs() < 1e-5, "{usd} vs {expected}");
    let total = report["usage"]["total_tokens"].as_u64().unwrap();
    let parts: u64 = models.iter().map(|m| m["usage"]["total_tokens"].as_u64().unwrap()).sum();
    assert_eq!(total, parts);

    let events = run.events();
    let switched: Vec<&Value> = events.iter().filter(|e| e["type"] == "model_switched").collect();
    assert_eq!(switched.len(), 1, "{events:#?}");
    assert_eq!(switched[0]["from"], "openai-compatible/mock-model");
    assert_eq!(switched[0]["to"], "anthropic/claude-sonnet-4-5");
    let answered: Vec<&str> =
        events.iter().filter(|e| e["type"] == "turn_completed").map(|e| e["model"].as_str().unwrap()).collect();
    assert_eq!(
        answered,
        ["openai-compatible/mock-model", "anthropic/claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"]
    );
    let summary = std::fs::read_to_string(run.report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| Fallback | anthropic `claude-sonnet-4-5` from turn 3"), "{summary}");
    run.assert_no_secret(KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_never_falls_back() {
    let repo = broken_repo();
    let first = MockModel::start().await;
    let second = MockModel::start_as(Dialect::Anthropic).await;
    first.push(Reply::Status {
        code: 401,
        headers: vec![],
        body: r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#.into(),
    });
    let run = run_job(&repo, &yaml("nofallback", &first.base_url, &second.base_url), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(second.requests().is_empty(), "a wrong key is fixed, not hidden behind another model");
    let report = run.report();
    assert_eq!(report["models"].as_array().unwrap().len(), 1);
    assert!(run.events().iter().all(|e| e["type"] != "model_switched"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_model_unavailable_ends_the_run_naming_the_last() {
    let repo = broken_repo();
    let first = MockModel::start().await;
    let second = MockModel::start_as(Dialect::Anthropic).await;
    rate_limited(&first, 4);
    // The fallback has its own retry policy: the default, 5 attempts.
    for _ in 0..5 {
        second.push(Reply::Status {
            code: 529,
            headers: vec![],
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        });
    }
    let run = run_job(&repo, &yaml("allbusy", &first.base_url, &second.base_url), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!((first.requests().len(), second.requests().len()), (4, 5), "{:#?}", run.events());
    let report = run.report();
    let models = report["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[1]["turns"], 0);
    let error = report["errors"].to_string();
    assert!(error.contains("overloaded"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_models_encrypted_reasoning_does_not_go_to_the_new_one() {
    let repo = broken_repo();
    let first = MockModel::start_as(Dialect::Responses).await;
    let second = MockModel::start_as(Dialect::Responses).await;
    first.turn(call("read_file", json!({"path": "check.sh"})), false);
    rate_limited(&first, 4);
    second
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let y = job_yaml("reasoning", &first.base_url, false).replace(
        "verify:",
        &format!("  api: responses\n  fallback:\n    - {{ provider: openai-compatible, name: other, api: responses, stream: false, base_url: {}, api_key_env: HONE_TEST_API_KEY }}\nverify:", second.base_url),
    );
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let handed = &second.requests()[0].body["input"];
    let kinds: Vec<&str> = handed.as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"reasoning"), "{handed:#}");
    assert!(
        kinds.contains(&"function_call") && kinds.contains(&"function_call_output"),
        "the history itself goes: {kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fell_back_replays_in_step() {
    let repo = broken_repo();
    let first = MockModel::start().await;
    let second = MockModel::start_as(Dialect::Anthropic).await;
    first.turn(call("read_file", json!({"path": "check.sh"})), false);
    rate_limited(&first, 4);
    second
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let y = yaml("replayed", &first.base_url, &second.base_url).replace("stream: true", "stream: false");
    let y = y.replace("      pricing: { input: 1.0", "      stream: false\n      pricing: { input: 1.0");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let transcript = std::fs::read_to_string(run.report_dir.join("transcript.jsonl")).unwrap();
    assert!(transcript.contains("\"type\":\"model_switched\""), "{transcript}");
    drop((first, second));
    let dir = run.report_dir.to_str().unwrap();
    let cwd = repo.dir.path();
    let r = run_in(cwd, &["replay", dir], &[], cwd.join("unused-replay")).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("hone replay: the run did what the recorded one did"), "{}", r.stdout);
    // As recorded: the switch, not a context-length error and a compaction in its place.
    assert!(r.stderr.contains("going on with anthropic/claude-sonnet-4-5"), "{}", r.stderr);
    assert!(!r.stderr.contains("context"), "{}", r.stderr);
}
