//! Answers (`output:`): the model's `result` checked against the job's schema, sent back with the
//! errors until it is valid or the attempts are used up; read-only jobs (`change: none`), whose
//! repository no tool and no command can change.

use crate::common::actions::output_value;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

const TRIAGE_SCHEMA: &str = r#"{"type": "object", "additionalProperties": false, "required": ["labels", "priority"],
 "properties": {"labels": {"type": "array", "items": {"enum": ["bug", "docs", "question"]}, "minItems": 1},
                "priority": {"enum": ["low", "high"]}}}"#;

/// A read-only triage job as a user keeps it: under `.github/hone/`, its schema in a file beside it.
fn triage_repo(base_url: &str, extra: &str) -> crate::common::repo::TestRepo {
    let spec = user_spec("triage", base_url)
        .replace("task: Make check.sh pass.", "task: \"Triage issue 7: the CLI crashes on empty input.\"")
        + "change: none\noutput:\n  schema_file: triage.schema.json\n"
        + extra;
    user_repo(".github/hone/triage.yaml", &spec, &[(".github/hone/triage.schema.json", TRIAGE_SCHEMA)])
}

fn finish(result: Value) -> crate::common::mock_model::Turn {
    call("finish", json!({"outcome": "done", "summary": "A crash: a bug.", "result": result}))
}

/// The content of the tool result the model got in request `i` (the last message).
fn last_result(mock: &MockModel, i: usize) -> String {
    let reqs = mock.requests();
    let msgs = reqs[i].body["messages"].as_array().unwrap();
    msgs.last().unwrap()["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_answer_on_the_first_try_is_the_runs_output_everywhere() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "");
    mock.turn(finish(json!({"labels": ["bug"], "priority": "high"})), false);
    let (out, summary) = (repo.dir.path().join("gh-output"), repo.dir.path().join("gh-summary"));
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", out.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let run = run_in(&repo.path, &["run", ".github/hone/triage.yaml"], &env, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "success");
    assert_eq!(report["change"], "none");
    assert_eq!(report["output"], json!({"labels": ["bug"], "priority": "high"}));
    assert_eq!(report["output_check"]["attempts"], 1);
    assert_eq!(report["output_check"]["valid"], true);
    assert!(report["finish"]["result"].is_null(), "the answer is kept once, as `output`");
    assert!(report["commit"].is_null());
    assert!(!report["warnings"].to_string().contains("not verified"), "a read-only job needs no checks");
    // The schema went to the provider with the `finish` tool, as its `result` parameter.
    let reqs = mock.requests();
    let tools = reqs[0].body["tools"].as_array().unwrap();
    let finish = tools.iter().find(|t| t["function"]["name"] == "finish").unwrap();
    assert_eq!(finish["function"]["parameters"]["properties"]["result"]["required"], json!(["labels", "priority"]));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(!names.contains(&"write_file") && !names.contains(&"apply_patch"), "{names:?}");
    // The event, summary.md and the Action's `result` output.
    assert!(run.events().iter().any(|e| e["type"] == "output_accepted" && e["result"]["priority"] == "high"));
    assert!(run.read("summary.md").contains("### Result"), "{}", run.read("summary.md"));
    let result = output_value(&std::fs::read_to_string(&out).unwrap(), "result");
    assert_eq!(serde_json::from_str::<Value>(&result).unwrap(), report["output"]);
    assert!(repo.is_clean(), "nothing changed in the work tree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_answer_goes_back_with_its_errors_and_the_corrected_one_is_kept() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "");
    mock.turn(text("It is a bug, high priority."), false)
        .turn(finish(json!({"labels": ["urgent"], "priority": "high"})), false)
        .turn(finish(json!({"labels": ["bug"], "priority": "high"})), false);
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    // A text answer is asked to come through `finish`; the invalid result gets its errors.
    assert!(last_result(&mock, 1).contains("`result` is missing"), "{}", last_result(&mock, 1));
    let told = last_result(&mock, 2);
    assert!(told.contains("at /labels/0") && told.contains("attempt 2 of 3"), "{told}");
    let report = run.report();
    assert_eq!(report["output"]["labels"], json!(["bug"]));
    assert_eq!(report["output_check"]["attempts"], 3);
    assert_eq!(report["output_check"]["errors"], json!([]));
    let rejected = run.events().iter().filter(|e| e["type"] == "output_rejected").count();
    assert_eq!(rejected, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_never_validates_fails_with_the_last_errors() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "");
    let spec = repo.file(".github/hone/triage.yaml") + "  max_attempts: 2\n";
    std::fs::write(repo.path.join(".github/hone/triage.yaml"), spec).unwrap();
    repo.git(&["commit", "-qam", "two attempts"]);
    mock.turn(finish(json!({"labels": [], "priority": "high"})), false)
        .turn(finish(json!({"labels": ["bug"], "priority": "urgent"})), false);
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert_eq!(report["errors"][0]["code"], "E_OUTPUT");
    assert!(report["output"].is_null());
    assert_eq!(report["output_check"]["attempts"], 2);
    let errors = report["output_check"]["errors"].to_string();
    assert!(errors.contains("at /priority"), "the last attempt's errors: {errors}");
    assert_eq!(report["output_check"]["rejected"]["priority"], "urgent");
    assert!(run.stdout.contains("E_OUTPUT"), "{}", run.stdout);
    assert!(run.read("summary.md").contains("No valid answer after 2 attempt(s)"));
    assert_eq!(mock.requests().len(), 2, "no request after the last attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_job_cannot_write_with_a_tool_or_a_command() {
    require!(Need::UserNamespaces);
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "policy: ../../policy.yaml\n");
    std::fs::write(repo.path.join("policy.yaml"), OPEN_POLICY).unwrap();
    repo.git(&["add", "policy.yaml"]);
    repo.git(&["commit", "-qm", "policy"]);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "pwned\n"})), false)
        .turn(call("run_cmd", json!({"command": "echo pwned > status.txt; echo new > planted.txt"})), false)
        .turn(call("run_cmd", json!({"command": "echo scratch > /tmp/notes && cat /tmp/notes"})), false)
        .turn(finish(json!({"labels": ["bug"], "priority": "low"})), false);
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(last_result(&mock, 1).contains("E_POLICY_DENIED"), "{}", last_result(&mock, 1));
    let cmd = last_result(&mock, 2);
    assert!(cmd.contains("Read-only file system"), "the jail refused the write: {cmd}");
    assert!(last_result(&mock, 3).contains("scratch"), "/tmp stays writable: {}", last_result(&mock, 3));
    assert_eq!(repo.file("status.txt"), "broken\n");
    assert!(!repo.path.join("planted.txt").exists());
    assert!(repo.is_clean());
    assert!(run.report()["commit"].is_null());
    assert_eq!(repo.git(&["branch", "--list", "hone/*"]), "", "no branch made");
}

/// With the jail off (`sandbox: off`), a command can write; the run then fails, and the change is
/// neither committed nor saved, and is gone from the checkout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_job_whose_command_wrote_without_a_jail_fails_and_keeps_nothing() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "policy: ../../policy.yaml\n");
    std::fs::write(repo.path.join("policy.yaml"), format!("{OPEN_POLICY}sandbox: off\n")).unwrap();
    repo.git(&["add", "policy.yaml"]);
    repo.git(&["commit", "-qm", "policy"]);
    mock.turn(call("run_cmd", json!({"command": "echo pwned > status.txt"})), false)
        .turn(finish(json!({"labels": ["bug"], "priority": "low"})), false);
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["errors"][0]["code"], "E_POLICY_DENIED");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("read-only job"));
    assert!(report["saved_ref"].is_null() && report["commit"].is_null());
    assert_eq!(repo.file("status.txt"), "broken\n");
}

/// Marking a plan step done in a read-only job neither saves a checkpoint ref nor can roll the
/// tree back (a checkpoint writes the index; a rollback resets the work tree, outside the jail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_job_keeps_no_checkpoint() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "");
    let spec = repo.file(".github/hone/triage.yaml").replace("plan: false\n", "plan: true\n");
    std::fs::write(repo.path.join(".github/hone/triage.yaml"), spec).unwrap();
    repo.git(&["commit", "-qam", "plan"]);
    let before = repo.git(&["for-each-ref", "refs/hone"]);
    let steps = json!({"steps": [{"title": "read", "status": "done"}, {"title": "answer", "status": "in_progress"}]});
    mock.turn(call("update_plan", steps), false).turn(finish(json!({"labels": ["bug"], "priority": "low"})), false);
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(repo.git(&["for-each-ref", "refs/hone"]), before, "no ref saved");
    assert!(!run.events().iter().any(|e| e["type"] == "checkpoint"));
}

/// An answer nested deeper than reports and `fleet.json` can hold is refused like any invalid one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_nested_too_deep_is_refused() {
    let mock = MockModel::start().await;
    let spec =
        user_spec("deep", &mock.base_url) + "change: none\noutput:\n  schema: {type: object}\n  max_attempts: 1\n";
    let repo = user_repo("job.yaml", &spec, &[]);
    let mut v = json!(1);
    for i in 0..40 {
        v = json!({format!("k{i}"): [v]});
    }
    mock.turn(call("finish", json!({"outcome": "done", "summary": "x", "result": v})), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["errors"][0]["code"], "E_OUTPUT");
    assert!(report["output_check"]["errors"].to_string().contains("nested deeper than 32"), "{report}");
}

/// A read-only job answers about the checkout it is given: a PR event (a fork's PR here) neither
/// turns it into autofix nor skips it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_job_for_a_fork_pr_event_is_answered_not_skipped() {
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let gh = wiremock::MockServer::start().await;
    let event = repo.dir.path().join("event.json");
    std::fs::write(&event, r#"{"action": "opened", "number": 3, "pull_request": {"number": 3}}"#).unwrap();
    let mock = MockModel::start().await;
    mock.turn(call("finish", json!({"outcome": "done", "summary": "x", "result": {"migration": false}})), false);
    let (uri, ev) = (gh.uri(), event.to_str().unwrap().to_string());
    let env = [
        ("GITHUB_TOKEN", crate::suite::autofix::TOKEN),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_API_URL", uri.as_str()),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", ev.as_str()),
    ];
    let yaml = job_yaml("classify", &mock.base_url, false) + "change: none\noutput:\n  schema: {type: object}\n";
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.report()["output"], json!({"migration": false}));
    assert!(gh.received_requests().await.unwrap_or_default().is_empty(), "no forge request");
}

/// A read-only job refuses, before any model request, what would make hone write into the tree:
/// uncommitted work it would have to tell from a change, and saved work to take up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_job_refuses_allow_dirty_and_continue_up_front() {
    let mock = MockModel::start().await;
    let repo = triage_repo(&mock.base_url, "repo: { allow_dirty: true }\n");
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml"]).await;
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("cannot use `repo.allow_dirty`"), "{}", run.stderr);
    let repo = triage_repo(&mock.base_url, "");
    let run = run_user(&repo, &["run", ".github/hone/triage.yaml", "--continue", "failed"]).await;
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("`--continue`"), "{}", run.stderr);
    assert!(mock.requests().is_empty(), "no model request");
}
