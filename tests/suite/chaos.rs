//! A model layer that survives anything: one run through every fault, loops, text-only models.

use crate::common::mock_model::{MockModel, Reply, Turn, call, text};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chaos_sequence_survives_to_success_and_every_fault_is_counted() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let fix = call("write_file", json!({"path": "status.txt", "content": "fixed\n"}));
    // Request 1: rate limit, server error, a cut stream, a stalled stream, then bad tool calls.
    mock.push(Reply::Status { code: 429, headers: vec![("retry-after".into(), "0".into())], body: "{}".into() });
    mock.push(Reply::Status { code: 500, headers: vec![], body: r#"{"error":{"message":"internal"}}"#.into() });
    let mut cut = fix.sse(1, false);
    cut.pop();
    mock.push(Reply::Sse(cut));
    mock.push(Reply::Stall(fix.sse(1, false)[..2].to_vec()));
    mock.turn(Turn::default().with_call("write_file", "{\"path\": ").with_call("teleport", "{}"), true);
    // Request 2: an empty answer, then a degenerate one; request 3: the fix; request 4: done.
    mock.turn(text(""), true);
    mock.turn(text(&"{".repeat(80)), true);
    mock.turn(fix, true).turn(text("Fixed after a rough ride."), true);
    let yaml = job_yaml("chaos", &mock.base_url, true)
        .replace("max_attempts: 4", "max_attempts: 8")
        .replace("idle_timeout: 10s", "idle_timeout: 1s");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let faults = &report["faults"];
    for (kind, n) in [
        ("rate_limited", 1),
        ("server_error", 1),
        ("stream_cut", 1),
        ("idle_timeout", 1),
        ("empty_answer", 1),
        ("repetition", 1),
        ("invalid_tool_call", 2),
    ] {
        assert_eq!(faults[kind], n, "fault {kind}: {faults}");
    }
    assert_eq!(report["fault_classes"], json!({"retryable": 5, "recoverable": 3}));
    assert_eq!(mock.remaining(), 0);
    mock.assert_pairing();
    // The degenerate answer never entered the history; a note asked for a new answer.
    let last = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(!last.contains(&"{".repeat(60)));
    assert!(last.contains("degenerated into repetition"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_stuck_in_a_loop_is_warned_then_stopped() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    for _ in 0..6 {
        mock.turn(call("list_dir", json!({"path": "src"})), false);
    }
    let run = run_job(&repo, &job_yaml("loop", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["faults"]["loop"], 1);
    assert!(report["faults"]["loop_warning"].as_u64().unwrap() >= 1);
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("same tool call with the same result 5 times"));
    let fourth = mock.requests()[3].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(fourth["role"], "user");
    assert!(fourth["content"].as_str().unwrap().contains("try a different approach"));
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_only_model_calls_tools_through_json_in_its_answers() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(text("I'll fix the status.\n```json\n{\"tool\": \"write_file\", \"args\": {\"path\": \"status.txt\", \"content\": \"fixed\\n\"}}\n```"), false)
        .turn(text("The status file now says fixed."), false);
    let yaml = job_yaml("textmode", &mock.base_url, false)
        .replace("  stream: false\n", "  stream: false\n  tool_mode: text\n");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert!(reqs.iter().all(|r| r.body.get("tools").is_none()), "no native tools are sent in text mode");
    let sys = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(sys.contains("# Calling tools") && sys.contains("- write_file:"));
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert!(msgs.iter().all(|m| m["role"] != "tool" && m.get("tool_calls").is_none()));
    assert!(msgs.last().unwrap()["content"].as_str().unwrap().starts_with("Result of the tool call:"));
    assert_eq!(repo.show("hone/textmode", "status.txt"), "fixed");
}
