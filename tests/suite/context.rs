//! What reaches the model's context: compaction keeps every request of a long run under the
//! window, and the repo map carries no definitions from files the policy denies reading.

use crate::common::mock_model::{MockModel, Reply, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

const WINDOW: u64 = 12_000;

fn big_repo() -> TestRepo {
    let big: String = (1..=3000).map(|i| format!("line {i}: {}\n", "lorem ipsum dolor sit amet ".repeat(2))).collect();
    TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("big.txt", &big)])
}

fn yaml(name: &str, url: &str) -> String {
    job_yaml(name, url, false)
        .replace("  stream: false\n", &format!("  stream: false\n  context_window: {WINDOW}\n"))
        .replace("max_turns: 10", "max_turns: 90")
        .replace("plan: false\n", "plan: false\ntools: { max_read_bytes: 6000 }\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_with_large_outputs_stays_under_the_window() {
    let repo = big_repo();
    let mock = MockModel::start().await;
    for i in 0..64 {
        mock.turn(call("read_file", json!({"path": "big.txt", "start_line": 1 + i * 40})), false);
    }
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let run = run_job(&repo, &yaml("long", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 66);
    for (i, r) in reqs.iter().enumerate() {
        let size = r.body["messages"].to_string().len() as u64 / 4;
        assert!(size < WINDOW, "request {i} is ~{size} tokens, over the {WINDOW}-token window");
    }
    mock.assert_pairing();
    let report = run.report();
    assert!(report["compactions"].as_u64().unwrap() >= 2, "{}", report["compactions"]);
    let reuse = report["prefix_reuse_avg"].as_f64().unwrap();
    assert!(reuse > 0.5 && reuse < 1.0, "most requests extend the previous one: {reuse}");
    // System prompt and task survive compaction verbatim.
    let last = reqs.last().unwrap().body["messages"].as_array().unwrap().clone();
    assert_eq!(last[0], reqs[0].body["messages"][0]);
    assert_eq!(last[1], reqs[0].body["messages"][1]);
    assert!(last[2]["content"].as_str().unwrap().starts_with("[hone compacted"));
    assert!(run.events().iter().any(|e| e["type"] == "compacted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_error_compacts_and_retries() {
    let repo = big_repo();
    let mock = MockModel::start().await;
    for i in 0..4 {
        mock.turn(call("read_file", json!({"path": "big.txt", "start_line": 1 + i * 40})), false);
    }
    mock.push(Reply::Status { code: 400, headers: vec![], body: r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#.into() });
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let run = run_job(&repo, &yaml("ctxerr", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["faults"]["context_length"], 1);
    assert_eq!(report["compactions"], 1);
    let reqs = mock.requests();
    let (failed, retried) = (&reqs[4], &reqs[5]);
    assert!(retried.body["messages"].to_string().len() < failed.body["messages"].to_string().len() / 2 + 2000);
    mock.assert_pairing();
}

/// The deny rule of the repo-map test, added to a policy.
const DENY_SECRET_STUFF: &str = "paths:\n  read_deny: [\"secret_stuff/**\"]\n";

/// Run a job under `policy` over a repository with a visible `app.py` and a Python file under
/// `secret_stuff/`; the system prompt of the first request, and the body of every request.
async fn what_the_model_saw(name: &str, policy: &str) -> (String, Vec<String>) {
    let repo = TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        ("app.py", "def visible_function():\n    pass\n"),
        ("secret_stuff/hidden.py", "def leaked_definition_name():\n    pass\n"),
    ]);
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let yaml = with_policy(&repo, &job_yaml(name, &mock.base_url, false), policy);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0].body["messages"][0];
    assert_eq!(first["role"], "system");
    let system = first["content"].as_str().unwrap().to_string();
    (system, reqs.iter().map(|r| r.body.to_string()).collect())
}

/// The repo map lists file names, but takes definitions only from files the model may read: a
/// function in a file under a `read_deny` glob never reaches the model, in the system prompt or
/// anywhere else. The control run, without the rule, shows the same definition in the map, so
/// its absence is the rule's doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definitions_from_read_denied_files_never_reach_the_model() {
    let (system, requests) = what_the_model_saw("denied", &format!("{OPEN_POLICY}{DENY_SECRET_STUFF}")).await;
    assert!(system.contains("# Repository map"), "{system}");
    assert!(system.contains("visible_function"), "the map has the readable file's definitions: {system}");
    assert!(!system.contains("leaked_definition_name"), "the map leaks a read-denied definition: {system}");
    for (i, body) in requests.iter().enumerate() {
        assert!(!body.contains("leaked_definition_name"), "request {i} leaks a read-denied definition: {body}");
    }

    let (system, _) = what_the_model_saw("allowed", OPEN_POLICY).await;
    assert!(system.contains("visible_function"), "{system}");
    assert!(system.contains("leaked_definition_name"), "without the rule the definition is in the map: {system}");
}

/// A directory's instruction file came with the first tool result under it; compaction later
/// summarizes that result away, and the summary restates the file, so every later request still
/// carries it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_a_directorys_instructions_once_given() {
    let repo = big_repo();
    std::fs::create_dir(repo.path.join("sub")).unwrap();
    std::fs::write(repo.path.join("sub/AGENTS.md"), "NESTED-MARKER-77: use the sub tool\n").unwrap();
    std::fs::write(repo.path.join("sub/x.txt"), "x\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "nested instructions"]);
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "sub/x.txt"})), false);
    for i in 0..30 {
        mock.turn(call("read_file", json!({"path": "big.txt", "start_line": 1 + i * 40})), false);
    }
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let run = run_job(&repo, &yaml("nested", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.report()["compactions"].as_u64().unwrap() >= 1, "the test needs a compaction");
    for (i, r) in mock.requests().iter().enumerate().skip(1) {
        let carried = r.body["messages"].to_string().matches("NESTED-MARKER-77").count();
        assert_eq!(carried, 1, "request {i} carries the nested instructions {carried} times");
    }
}
