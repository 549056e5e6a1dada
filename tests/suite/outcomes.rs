//! Outcomes are promises: `success` means the task's change exists and passed the checks; a check
//! that cannot run stops the run before the model starts; the model ends with `finish`; and the
//! history sent to a provider never holds arguments that are not JSON.

use crate::common::mock_model::{MockModel, Turn, call, text};
use crate::common::*;
use serde_json::json;

/// Writes JUnit for three tests: `status` fails until status.txt says fixed; `math` and `other`
/// pass while math.txt says 4 and other.txt says ok.
const RUNNER: &str = r#"fails=0
tc() { if [ "$2" = ok ]; then echo "<testcase classname=\"suite\" name=\"$1\"/>"; else fails=$((fails+1)); echo "<testcase classname=\"suite\" name=\"$1\"><failure message=\"$1 failed\"/></testcase>"; fi; }
{
  echo '<testsuite name="suite">'
  if grep -qx fixed status.txt; then tc status ok; else tc status bad; fi
  if grep -qx 4 math.txt; then tc math ok; else tc math bad; fi
  if grep -qx ok other.txt; then tc other ok; else tc other bad; fi
  echo '</testsuite>'
} > test-results.xml
echo "$fails failing"
[ $fails -eq 0 ]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_rolled_back_to_the_base_is_a_failure_not_a_success() {
    let mock = MockModel::start().await;
    let spec = user_spec("rollback", &mock.base_url).replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        "  - { name: tests, run: \"sh runner.sh\", expect: no-regression, junit: test-results.xml, timeout: 30s }",
    );
    let repo = user_repo("job.yaml", &spec, &[("runner.sh", RUNNER), ("math.txt", "4\n"), ("other.txt", "ok\n")]);
    // The change breaks two tests that passed; hone rolls it back; the model then stops.
    mock.turn(call("write_file", json!({"path": "math.txt", "content": "5\n"})), false)
        .turn(call("write_file", json!({"path": "other.txt", "content": "broken\n"})), false)
        .turn(text("Changed math and other."), false)
        .turn(text("I cannot find another way."), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert!(report["commit"].is_null(), "{report}");
    assert!(!report["rollbacks"].as_array().unwrap().is_empty());
    assert!(repo.git(&["branch", "--list", "hone/rollback"]).is_empty(), "no branch for a change that is gone");
    let why = report["errors"][0]["message"].as_str().unwrap();
    assert!(why.contains("`tests`") && why.contains("suite::math") && why.contains("rolled back"), "{why}");
    let summary = run.read("summary.md");
    assert!(summary.contains("rolled back") && summary.contains("suite::math"), "{summary}");
    assert!(run.stdout.contains("rolled back"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_changed_with_accepted_checks_is_no_change() {
    let mock = MockModel::start().await;
    let spec = user_spec("nothing", &mock.base_url);
    let repo = user_repo("job.yaml", &spec.replace("sh check.sh", "true"), &[]);
    mock.turn(text("Nothing needed to change."), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["status"], "no_change");
    assert!(committed(&repo, "main").is_empty());
}

async fn unrunnable(name: &str, check: &str) -> (Run, MockModel, crate::common::repo::TestRepo) {
    let mock = MockModel::start().await;
    let spec =
        user_spec(name, &mock.base_url).replace(r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#, check);
    let repo = user_repo("job.yaml", &spec, &[]);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    (run, mock, repo)
}

fn fix(mock: &MockModel) {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_cannot_run_stops_the_run_before_the_first_model_request() {
    for (name, check, expect_in_output) in [
        ("typo", r#"  - { name: tests, run: "pytset -q", timeout: 30s }"#, "not found"),
        (
            "nomodule",
            r#"  - { name: tests, run: "python3 -m hone_no_such_module -q", timeout: 30s }"#,
            "No module named",
        ),
        ("nojunit", r#"  - { name: tests, run: "true", junit: out.xml, timeout: 30s }"#, "wrote no JUnit file"),
    ] {
        let (run, mock, _repo) = unrunnable(name, check).await;
        assert_eq!(run.code, 2, "{name}: stdout: {}\nstderr: {}", run.stdout, run.stderr);
        assert!(mock.requests().is_empty(), "{name}: the model was asked before the checks could run");
        let report = run.report();
        assert_eq!(report["status"], "invalid_input", "{name}");
        assert_eq!(report["errors"][0]["code"], "E_CHECK", "{name}");
        let msg = report["errors"][0]["message"].as_str().unwrap();
        assert!(msg.contains("`tests`") && msg.contains(expect_in_output), "{name}: {msg}");
        assert!(run.stdout.contains("`tests`"), "{name}: {}", run.stdout);
        assert!(run.stderr.contains(expect_in_output), "{name}: {}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junit_check_whose_file_is_missing_at_the_end_is_never_accepted() {
    let mock = MockModel::start().await;
    // The runner writes its JUnit file only while keep.txt exists; the model deletes it.
    let spec = user_spec("junitgone", &mock.base_url).replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        "  - { name: tests, run: \"test -f keep.txt && echo '<testsuite/>' > r.xml; true\", junit: r.xml, expect: no-regression, timeout: 30s }",
    );
    let spec = format!("{}policy: policy.yaml\n", spec.replace("max_fix_attempts: 2", "max_fix_attempts: 0"));
    let repo = user_repo("job.yaml", &spec, &[("keep.txt", "x\n"), ("policy.yaml", OPEN_POLICY)]);
    mock.turn(call("run_cmd", json!({"command": "rm keep.txt"})), false).turn(text("done"), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.report()["verify"][0]["accepted"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_blocked_fails_the_run_with_the_models_reason_and_saves_the_work() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("blocked", &mock.base_url), &[]);
    mock.turn(call("write_file", json!({"path": "notes.txt", "content": "tried\n"})), false).turn(
        call(
            "finish",
            json!({"outcome": "blocked", "summary": "Started on it.", "reason": "the fix needs a database migration"}),
        ),
        false,
    );
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 1, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert_eq!(report["finish"]["outcome"], "blocked");
    assert_eq!(report["errors"][0]["code"], "E_BLOCKED");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("needs a database migration"));
    assert_eq!(report["saved_ref"], "refs/hone/blocked/failed");
    assert!(run.read("summary.md").contains("needs a database migration"));
    assert!(run.stdout.contains("needs a database migration"), "{}", run.stdout);
    assert_eq!(repo.show("refs/hone/blocked/failed", "notes.txt"), "tried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_done_goes_to_verification_and_its_summary_is_the_final_message() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("done", &mock.base_url), &[]);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(call("finish", json!({"outcome": "done", "summary": "Marked the status fixed."})), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let msg = repo.git(&["log", "-1", "--format=%s", "hone/done"]);
    assert_eq!(msg, "hone: Marked the status fixed.");
    assert_eq!(mock.requests().len(), 2, "finish ends the loop without another request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_arguments_that_are_not_json_never_go_back_to_the_provider() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("badjson", &mock.base_url), &[]);
    // The mock answers like llama-server: a history with unparsable arguments is a 500.
    mock.turn(Turn::default().with_call("write_file", "{\"path\": \"status.txt\", \"content\": "), false);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(mock.rejected(), 0, "a request carried arguments that are not JSON");
    let reqs = mock.requests();
    let history = reqs[1].body["messages"].as_array().unwrap();
    let result = history.last().unwrap()["content"].as_str().unwrap();
    assert!(result.contains("E_INVALID_ARGS") && result.contains("not valid JSON"), "{result}");
    assert_eq!(committed(&repo, "hone/badjson"), ["status.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_checks_leave_behind_is_never_the_change() {
    // A check that writes a log and a cache in the repository (no .gitignore): the model did
    // nothing, so nothing is committed and the run is `no_change`.
    let mock = MockModel::start().await;
    let check = "echo ran >> check.log; mkdir -p .test-cache && date > .test-cache/last; sh check.sh";
    let spec = user_spec("leftovers", &mock.base_url).replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        &format!("  - {{ name: check, run: \"{check}\", expect: no-regression, timeout: 30s }}"),
    );
    let repo = user_repo("job.yaml", &spec, &[]);
    mock.turn(text("Nothing I can do."), false);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.report()["status"], "no_change");
    assert!(repo.git(&["branch", "--list", "hone/leftovers"]).is_empty(), "a commit of the check's files was made");
    assert!(!repo.path.join("check.log").exists() && !repo.path.join(".test-cache").exists(), "the leftovers stayed");
    // The model's real change is committed without them.
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/leftovers"), ["status.txt"]);
}
