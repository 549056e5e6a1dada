//! OpenAI's Responses API (issue 16, part 3), against a mock that speaks it: input items,
//! function calls and their outputs, reasoning carried back with its encrypted content and
//! `store: false`, usage with cached tokens, streamed and not, and the same faults as the other
//! providers, retried or not in the same way.

use crate::common::mock_model::{Dialect, MODEL_ID, MockModel, Reply, Turn, call, text};
use crate::common::*;
use serde_json::json;

fn yaml(name: &str, base_url: &str, stream: bool) -> String {
    job_yaml(name, base_url, stream).replace("  name: mock-model\n", "  name: mock-model\n  api: responses\n")
}

async fn happy(stream: bool) {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    let read = Turn {
        content: "Reading the check.".into(),
        calls: vec![("read_file".into(), json!({"path": "check.sh"}).to_string())],
    };
    mock.turn(read, stream)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), stream)
        .turn(text("Fixed status.txt."), stream);
    let run = run_job(&repo, &yaml("responses", &mock.base_url, stream), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r.auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!((r.body["model"].as_str(), r.body["stream"].as_bool()), (Some("mock-model"), Some(stream)));
        assert!(r.body["instructions"].as_str().unwrap().contains("Make check.sh pass."));
        assert_eq!(r.body["tools"][0]["type"], "function");
        assert_eq!(r.body["tools"][0]["strict"], false);
    }
    // The second request carries the first turn back: its reasoning (encrypted, no id), its
    // text, its call, and the call's output.
    let input = reqs[1].body["input"].as_array().unwrap().clone();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "message", "function_call", "function_call_output"], "{input:#?}");
    assert_eq!(input[1], json!({"type": "reasoning", "summary": [], "encrypted_content": "enc-1"}));
    assert_eq!(input[3]["call_id"], "call_1_0");
    assert!(input[4]["output"].as_str().unwrap().contains("grep -qx fixed"));
    let last = reqs[2].body["input"].to_string();
    assert!(last.contains("enc-1") && last.contains("enc-2"), "every turn's reasoning is carried");
    mock.assert_pairing();
    let report = run.report();
    assert_eq!(report["usage"]["prompt_tokens"], 300);
    assert_eq!(report["usage"]["cached_prompt_tokens"], 192);
    assert_eq!(report["model_id"], MODEL_ID);
    assert_eq!(repo.show("hone/responses", "status.txt"), "fixed");
    run.assert_no_secret(KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_streamed() {
    happy(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_not_streamed() {
    happy(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_models_use_the_responses_api_without_being_told() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true).turn(text("Done."), true);
    let y = job_yaml("codex", &mock.base_url, true)
        .replace("provider: openai-compatible\n  name: mock-model", "provider: openai\n  name: gpt-5-codex");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body = &mock.requests()[0].body;
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]), "OpenAI itself returns reasoning encrypted");
    assert!(body["prompt_cache_key"].as_str().unwrap().starts_with("hone-"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_retried_and_counted() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    let fix = call("write_file", json!({"path": "status.txt", "content": "fixed\n"}));
    mock.push(Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "1".into())],
        body: r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
    });
    let event = |data: serde_json::Value| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap());
    let mut failed = fix.responses_sse(1, false)[..2].to_vec();
    failed.push(event(json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The server had an error"}}})));
    mock.push(Reply::Frames(failed, false));
    let mut limited = fix.responses_sse(1, false)[..1].to_vec();
    limited.push(event(json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null})));
    mock.push(Reply::Frames(limited, false));
    mock.push(Reply::Frames(fix.responses_sse(1, false), false));
    mock.push(Reply::Frames(fix.responses_sse(1, false)[..2].to_vec(), true));
    mock.turn(Turn::default().with_call("write_file", "{\"path\": ").with_call("teleport", "{}"), true);
    mock.turn(text(""), true);
    mock.turn(fix, true).turn(text("done"), true);
    let y = yaml("rfaults", &mock.base_url, true)
        .replace("max_attempts: 4", "max_attempts: 8")
        .replace("idle_timeout: 10s", "idle_timeout: 1s");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let f = &run.report()["faults"];
    for (kind, n) in [
        ("rate_limited", 2),
        ("server_error", 1),
        ("stream_cut", 1),
        ("idle_timeout", 1),
        ("empty_answer", 1),
        ("invalid_tool_call", 2),
    ] {
        assert_eq!(f[kind], n, "{kind}: {f}");
    }
    let retry = run.events().into_iter().find(|e| e["type"] == "model_retry").unwrap();
    assert_eq!(retry["delay_ms"], 1000, "Retry-After is honoured");
    let after_bad = mock.requests().into_iter().find(|r| r.body["input"].to_string().contains("teleport")).unwrap();
    let outputs: Vec<String> = after_bad.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].as_str().unwrap().to_string())
        .collect();
    assert!(outputs.iter().filter(|o| o.starts_with("error E_INVALID_ARGS")).count() >= 2, "{outputs:?}");
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_errors_exit_3_with_the_providers_message() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    mock.push(Reply::Status {
        code: 400,
        headers: vec![],
        body: r#"{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}"#.into(),
    });
    let run = run_job(&repo, &yaml("rbad", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 1);
    let err = &run.report()["errors"][0];
    assert_eq!(err["code"], "E_MODEL");
    assert!(err["message"].as_str().unwrap().contains("'temperature' is not supported"), "{err}");
}

/// An answer of reasoning only, cut at the output limit (`incomplete`, `max_output_tokens`).
fn reasoning_cut(n: usize) -> Reply {
    Reply::Json(json!({
        "id": format!("resp_cut_{n}"), "object": "response", "model": MODEL_ID, "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "reasoning", "id": format!("rs_cut_{n}"), "summary": [], "encrypted_content": format!("enc-cut-{n}")}],
        "usage": {"input_tokens": 100, "output_tokens": 4096, "total_tokens": 4196}
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_cut_at_the_output_limit_is_continued_not_asked_again() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    mock.push(reasoning_cut(1));
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let run = run_job(&repo, &yaml("cutreason", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    // The second request carries the cut reasoning back, so the model goes on from it instead
    // of starting its reasoning over (and being cut at the same place again).
    let input = reqs[1].body["input"].to_string();
    assert!(input.contains("enc-cut-1"), "{input}");
    let report = run.report();
    assert!(report["faults"].get("empty_answer").is_none(), "{}", report["faults"]);
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_cut_again_and_again_ends_the_run_saying_to_raise_the_limit() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    for n in 1..=6 {
        mock.push(reasoning_cut(n));
    }
    let run = run_job(&repo, &yaml("cutforever", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 3, "three cut answers in a row, then it stops");
    let error = run.report()["errors"].to_string();
    assert!(error.contains("max_output_tokens"), "{error}");
}
