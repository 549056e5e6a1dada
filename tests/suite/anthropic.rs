//! The Anthropic provider, against a mock that speaks the Messages API and its SSE event names:
//! the same happy-path and fault scenarios as the OpenAI provider.

use crate::common::mock_model::{Dialect, MockModel, Reply, Turn, call, text};
use crate::common::*;
use serde_json::json;

fn yaml(name: &str, base_url: &str, stream: bool) -> String {
    job_yaml(name, base_url, stream)
        .replace("provider: openai-compatible\n  name: mock-model", "provider: anthropic\n  name: claude-sonnet-4-5")
}

async fn happy(stream: bool) {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Anthropic).await;
    mock.turn(
        Turn {
            content: "Reading the check.".into(),
            calls: vec![("read_file".into(), json!({"path": "check.sh"}).to_string())],
        },
        stream,
    )
    .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), stream)
    .turn(text("Fixed status.txt."), stream);
    let run = run_job(&repo, &yaml("anthropic", &mock.base_url, stream), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r.auth.as_deref(), Some(KEY), "the key goes in x-api-key");
        assert_eq!(r.body["model"], "claude-sonnet-4-5");
        assert_eq!(r.body["stream"], stream);
        assert_eq!(r.body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(r.body["tools"].as_array().unwrap().last().unwrap()["cache_control"]["type"], "ephemeral");
        assert!(r.body["tools"][0]["input_schema"].is_object());
    }
    let second = reqs[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(second["role"], "user");
    assert_eq!(second["content"][0]["type"], "tool_result");
    assert!(second["content"][0]["content"].as_str().unwrap().contains("grep -qx fixed"));
    mock.assert_pairing();
    let report = run.report();
    assert_eq!(report["provider"], "anthropic");
    assert_eq!(report["usage"]["prompt_tokens"], 300, "cached input tokens count as prompt tokens");
    assert_eq!(report["usage"]["cached_prompt_tokens"], 180, "cache_read_input_tokens, summed");
    assert_eq!(repo.show("hone/anthropic", "status.txt"), "fixed");
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
async fn faults_are_retried_and_counted() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Anthropic).await;
    let fix = call("write_file", json!({"path": "status.txt", "content": "fixed\n"}));
    mock.push(Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "1".into())],
        body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.into(),
    });
    mock.push(Reply::Status {
        code: 529,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    });
    let mut overloaded = fix.anthropic_sse(1, false)[..2].to_vec();
    overloaded.push("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into());
    mock.push(Reply::Frames(overloaded, false));
    let mut cut = fix.anthropic_sse(1, false);
    cut.truncate(cut.len() - 2);
    mock.push(Reply::Frames(cut, false));
    mock.push(Reply::Frames(fix.anthropic_sse(1, false)[..1].to_vec(), true));
    mock.turn(Turn::default().with_call("write_file", "{\"path\": ").with_call("teleport", "{}"), true);
    mock.turn(text(""), true);
    mock.turn(fix, true).turn(text("done"), true);
    let y = yaml("afaults", &mock.base_url, true)
        .replace("max_attempts: 4", "max_attempts: 8")
        .replace("idle_timeout: 10s", "idle_timeout: 1s");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let f = &report["faults"];
    for (kind, n) in [
        ("rate_limited", 1),
        ("overloaded", 2),
        ("stream_cut", 1),
        ("idle_timeout", 1),
        ("empty_answer", 1),
        ("invalid_tool_call", 2),
    ] {
        assert_eq!(f[kind], n, "{kind}: {f}");
    }
    let retry = run.events().into_iter().find(|e| e["type"] == "model_retry").unwrap();
    assert_eq!(retry["delay_ms"], 1000, "Retry-After is honoured");
    // Error results go back as tool_result blocks marked is_error.
    let reqs = mock.requests();
    let after_bad = reqs.iter().find(|r| r.body["messages"].to_string().contains("teleport")).unwrap();
    let last = after_bad.body["messages"].as_array().unwrap().last().unwrap().clone();
    let results: Vec<&serde_json::Value> =
        last["content"].as_array().unwrap().iter().filter(|b| b["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{last}");
    assert!(
        results
            .iter()
            .all(|b| b["is_error"] == true && b["content"].as_str().unwrap().starts_with("error E_INVALID_ARGS")),
        "{last}"
    );
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_errors_exit_3_with_the_providers_message() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Anthropic).await;
    mock.push(Reply::Status {
        code: 400,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}"#
            .into(),
    });
    let run = run_job(&repo, &yaml("abad", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 1);
    assert!(run.report()["errors"][0]["message"].as_str().unwrap().contains("max_tokens: must be positive"));
}
