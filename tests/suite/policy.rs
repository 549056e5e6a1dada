//! The policy in a real run: denials are tool errors, the run goes on, and every decision is
//! audited; invalid policies (including examples that disagree with the rules) exit 2.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_command_is_a_tool_error_and_the_run_goes_on() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("run_cmd", json!({"command": "ls && timeout 5 curl -s https://example.com"})), false)
        .turn(call("read_file", json!({"path": "config/.env"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let policy = "version: 1\ncommands:\n  default: deny\n  allow: [\"ls *\", \"timeout *\"]\n  deny: [\"curl *\"]\n";
    let yaml = with_policy(&repo, &job_yaml("deny", &mock.base_url, false), policy);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    let result = |i: usize| {
        reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
    };
    let denied = result(1);
    assert!(
        denied.starts_with("error E_POLICY_DENIED: denied by the policy: `curl -s https://example.com`"),
        "{denied}"
    );
    assert!(denied.contains("rule: commands.deny[0] `curl *`"), "{denied}");
    let env = result(2);
    assert!(env.starts_with("error E_POLICY_DENIED") && env.contains("default.read_deny"), "{env}");
    let report = run.report();
    assert_eq!(report["policy"]["denied"], 2);
    assert_eq!(report["policy"]["denials"][0]["rule"], "commands.deny[0] `curl *`");
    assert_eq!(report["policy"]["denials"][1]["subject"], "config/.env");
    // Named absolute (the spec's directory joined with its `policy:` path), from wherever it is read.
    let policy = repo.path.canonicalize().unwrap().join("policy.yaml");
    assert_eq!(report["policy"]["source"], policy.to_str().unwrap());
    let audit: Vec<serde_json::Value> = run.events().into_iter().filter(|e| e["type"] == "policy_decision").collect();
    assert_eq!(audit.len(), 3, "{audit:#?}");
    assert!(audit.iter().all(|e| e["trace_id"].as_str().unwrap().starts_with(report["run_id"].as_str().unwrap())));
    assert_eq!(audit.iter().filter(|e| e["allowed"] == false).count(), 2);
    assert!(run.read("summary.md").contains("success"));
}

async fn validate(policy: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.yaml"), policy).unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, "version: 1\ntask: t\nmodel: { provider: openai-compatible, name: m, base_url: \"http://127.0.0.1:9/v1\" }\npolicy: policy.yaml\n").unwrap();
    let r = run_hone(&["validate", spec.to_str().unwrap()], &[], dir.path().join("r")).await;
    let prefix = format!("{}/", dir.path().display());
    Run { stderr: r.stderr.replace(&prefix, ""), ..r }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_that_disagree_with_the_rules_make_the_policy_invalid() {
    let policy = "version: 1\ncommands:\n  default: deny\n  allow: [\"python -m pytest *\"]\n  examples:\n    allow: [\"python -m pytest -q\"]\n    deny: [\"bash -c 'curl x'\", \"python -m pytest; ls\", \"python -m pytest tests/\"]\n";
    let r = validate(policy).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    let want = "policy.yaml:7:56: error[E_POLICY] at `commands.examples.deny[2]`: the rules allow `python -m pytest tests/`, but the example expects the opposite (commands.allow[0] `python -m pytest *`)";
    assert!(r.stderr.starts_with(want), "{}", r.stderr);
    assert_eq!(r.stderr.matches("error[E_POLICY]").count(), 1, "{}", r.stderr);
    let ok = validate(&policy.replace(", \"python -m pytest tests/\"", "")).await;
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert!(ok.stdout.contains("policy.yaml: network off, sandbox on"), "{}", ok.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_errors_have_positions_and_suggestions() {
    let r = validate("version: 1\ncommands: { defualt: deny }\nnetwork: maybe\npaths: { write_deny: ['[x'] }\n").await;
    assert_eq!(r.code, 2);
    insta::assert_snapshot!(r.stderr.trim_end());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_policy_allows_the_verify_commands_and_read_only_inspection_only() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("run_cmd", json!({"command": "sh check.sh"})), false)
        .turn(call("run_cmd", json!({"command": "sed -i s/broken/fixed/ status.txt"})), false)
        .turn(
            call("run_cmd", json!({"command": "cat status.txt | tail -5; grep -n broken status.txt; git diff"})),
            false,
        )
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let run = run_job(&repo, &job_yaml("default", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    let result = |i: usize| {
        reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
    };
    assert!(result(1).starts_with("exit code: 1") && result(1).contains("status.txt says 'broken'"), "{}", result(1));
    assert!(
        result(2).starts_with("error E_POLICY_DENIED") && result(2).contains("commands.default: deny"),
        "{}",
        result(2)
    );
    // The denial names what the policy does allow, so the model need not guess.
    assert!(result(2).contains("`cat *`") && result(2).contains("`sh check.sh *`"), "{}", result(2));
    assert!(result(3).starts_with("exit code: 0") && result(3).contains("1:broken"), "{}", result(3));
    // And the system prompt said so before the first command.
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("# What the policy allows") && system.contains("`grep *`"), "{system}");
    assert!(system.contains("Paths you may not read: `**/.env`"), "{system}");
    let report = run.report();
    assert_eq!(report["policy"]["source"], "built-in default");
    assert_eq!(report["policy"]["sandbox"]["network_isolated"], true);
}
