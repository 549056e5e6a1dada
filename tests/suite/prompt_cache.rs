//! Prompt caching at the provider: after the second turn, at least 95% of each prompt is a prefix
//! the provider saw (and was asked to cache) on the request before; OpenAI requests carry one
//! `prompt_cache_key` per run; what the provider read from its cache is in the report and summary.

use crate::common::mock_model::{Dialect, MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

/// A run of several turns: the history grows with every tool call and its result.
fn five_turns(mock: &MockModel, stream: bool) {
    mock.turn(call("read_file", json!({"path": "check.sh"})), stream)
        .turn(call("list_dir", json!({"path": "."})), stream)
        .turn(call("grep", json!({"pattern": "fixed", "path": "."})), stream)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), stream)
        .turn(text("Set status.txt to fixed."), stream);
}

/// Strip the cache markers, which are not part of the prompt.
fn unmarked(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| k.as_str() != "cache_control").map(|(k, v)| (k.clone(), unmarked(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// The prompt in the order the provider reads it, one unit per tool, system prompt and message
/// block (Anthropic) or message (OpenAI).
fn units(body: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in body["tools"].as_array().into_iter().flatten() {
        out.push(unmarked(t).to_string());
    }
    for s in body["system"].as_array().into_iter().flatten() {
        out.push(unmarked(s).to_string());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["content"].as_array() {
            Some(blocks) => out.extend(blocks.iter().map(|b| format!("{}:{}", m["role"], unmarked(b)))),
            None => out.push(unmarked(m).to_string()),
        }
    }
    out
}

/// For each request after the second: the share of its prompt (in bytes) that is the previous
/// request's whole prompt, which must be its exact prefix.
fn cached_shares(bodies: &[Value]) -> Vec<f64> {
    bodies
        .windows(2)
        .skip(1)
        .map(|w| {
            let (before, now) = (units(&w[0]), units(&w[1]));
            assert!(now.starts_with(&before), "the history was rewritten between two requests");
            let size = |u: &[String]| u.iter().map(String::len).sum::<usize>() as f64;
            size(&before) / size(&now)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_reads_all_but_the_newest_turn_from_the_cache() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Anthropic).await;
    five_turns(&mock, true);
    let yaml = job_yaml("cached", &mock.base_url, true)
        .replace("provider: openai-compatible\n  name: mock-model", "provider: anthropic\n  name: claude-sonnet-4-5");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bodies: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 5);
    for b in &bodies {
        // The tools, the system prompt and the newest block: within the API's limit of four.
        assert_eq!(b.to_string().matches("cache_control").count(), 3, "{b}");
        let newest = b["messages"].as_array().unwrap().last().unwrap()["content"].as_array().unwrap().last().unwrap();
        assert_eq!(newest["cache_control"]["type"], "ephemeral", "{newest}");
    }
    let shares = cached_shares(&bodies);
    assert!(shares.iter().all(|s| *s >= 0.95), "cacheable shares after the second turn: {shares:?}");
    let report = run.report();
    assert_eq!(report["usage"]["cached_prompt_tokens"], 300, "60 read from the cache per request");
    let summary = std::fs::read_to_string(run.report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("(300 of 500 prompt tokens cached, 60%)"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_requests_carry_one_cache_key_per_run_and_only_grow() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    five_turns(&mock, false);
    let yaml = job_yaml("cached", &mock.base_url, false)
        .replace("provider: openai-compatible\n  name: mock-model", "provider: openai\n  name: gpt-4.1");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bodies: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let keys: Vec<&Value> = bodies.iter().map(|b| &b["prompt_cache_key"]).collect();
    let run_id = run.report()["run_id"].as_str().unwrap().to_string();
    assert!(keys.iter().all(|k| k.as_str() == Some(&format!("hone-{run_id}"))), "{keys:?}");
    let shares = cached_shares(&bodies);
    assert!(shares.iter().all(|s| *s >= 0.95), "cacheable shares after the second turn: {shares:?}");
    assert_eq!(run.report()["usage"]["cached_prompt_tokens"], 320);

    // Another run, another key; a local OpenAI-compatible server is never sent one.
    let mock2 = MockModel::start().await;
    mock2
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let repo2 = broken_repo();
    let run2 = run_job(&repo2, &job_yaml("plain", &mock2.base_url, false), &[]).await;
    assert_eq!(run2.code, 0, "{}", run2.stderr);
    assert!(mock2.requests().iter().all(|r| r.body.get("prompt_cache_key").is_none()), "{}", run2.stderr);
}
