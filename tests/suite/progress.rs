//! A CI log shows the run as it happens: a line per state change, turn, tool call and check on
//! stderr; `--quiet` silences them; under GitHub Actions the phases are groups and every failing
//! check is an `::error` annotation, with or without file positions.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;

fn script(mock: &MockModel) {
    mock.turn(call("run_cmd", json!({"command": "sh check.sh"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_lines_by_default_and_none_with_quiet() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("progress", &mock.base_url), &[]);
    script(&mock);
    let run = run_in(&repo.path, &["run", "job.yaml"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    for want in [
        "hone: job `progress` on ",
        "check `check` (baseline): fails (exit 1)",
        "── EXECUTING: planning is off",
        "turn 1: 1 tool call(s), 100 prompt + 20 completion tokens",
        "  run_cmd sh check.sh → exit 1 (",
        "  write_file status.txt → ok (",
        "check `check` (attempt 1): pass (",
        "committed ",
        "── DONE: success",
    ] {
        assert!(run.stderr.contains(want), "missing `{want}` in:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("{\"schema_version\""), "raw events are not progress");
    assert_eq!(run.stdout.lines().count(), 1, "stdout is the result line only: {}", run.stdout);
    script(&mock);
    let quiet =
        run_in(&repo.path, &["run", "job.yaml", "--quiet"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(quiet.stderr.trim().is_empty(), "--quiet printed: {}", quiet.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_actions_phases_are_groups_and_a_failing_check_is_an_error_annotation() {
    let mock = MockModel::start().await;
    let spec = user_spec("actions", &mock.base_url).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let repo = user_repo("job.yaml", &spec, &[]);
    mock.turn(text("I changed nothing."), false);
    let out = repo.dir.path().join("gh-output");
    let env = [("RUST_LOG", ""), ("GITHUB_ACTIONS", "true"), ("GITHUB_OUTPUT", out.to_str().unwrap())];
    let run = run_in(&repo.path, &["run", "job.yaml"], &env, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("::group::hone EXECUTING: planning is off"), "{}", run.stderr);
    assert_eq!(run.stderr.matches("::group::").count(), run.stderr.matches("::endgroup::").count(), "{}", run.stderr);
    // check.sh prints no file position: the check still gets an annotation.
    let errors: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::error")).collect();
    assert!(
        errors.iter().any(|l| l.starts_with("::error title=hone%3A check check failed::`check` (exit 1)")),
        "{errors:?}\n{}",
        run.stdout
    );
    assert!(errors.iter().any(|l| l.contains("E_BUILD_FAIL")), "{errors:?}");
}
