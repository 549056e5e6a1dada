//! `hone run --continue REF` (issue 16, part 1): a second attempt starts from the work a failed
//! run saved, after the baseline, with the failed run's account shown to the model; a ref that
//! is not there, or work that no longer applies, stops the run before any request.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;

fn first_message(mock: &MockModel) -> String {
    let msgs = mock.requests()[0].body["messages"].as_array().unwrap().clone();
    msgs.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_attempt_goes_on_from_the_saved_work() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "notes.txt", "content": "the check wants `fixed`\n"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("Done, I think."), false);
    let yaml = job_yaml("again", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let first = run_job(&repo, &yaml, &[]).await;
    assert_eq!(first.code, 1, "{}", first.stderr);
    assert_eq!(first.report()["saved_ref"], "refs/hone/again/failed");

    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let yaml = job_yaml("again", &mock.base_url, false);
    let run = run_job(&repo, &yaml, &["--continue", "failed"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let note = first_message(&mock);
    assert!(note.contains("This run continues an earlier attempt"), "{note}");
    assert!(note.contains("2 file(s): `notes.txt`, `status.txt`"), "{note}");
    assert!(note.contains("unverified work of a failed run of again"), "the failed run's account: {note}");
    let mut files = committed(&repo, "hone/again");
    files.sort();
    assert_eq!(files, ["notes.txt", "status.txt"], "the saved work is part of the change");
    assert_eq!(repo.show("hone/again", "notes.txt"), "the check wants `fixed`");
    let report = run.report();
    assert!(report["continued_from"].as_str().unwrap().starts_with("refs/hone/again/failed ("), "{report:#}");
    let baseline = &report["baseline"][0];
    assert_eq!(baseline["passed"], false, "the baseline is the base's, before the saved work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_work_that_is_missing_or_no_longer_applies_stops_the_run_first() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let yaml = job_yaml("gone", &mock.base_url, false);
    let run = run_job(&repo, &yaml, &["--continue", "failed"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot find the saved work `refs/hone/gone/failed`"), "{}", run.stderr);
    assert!(mock.requests().is_empty());

    // Saved work whose file the base has since changed.
    mock.turn(call("write_file", json!({"path": "src/lib.txt", "content": "hello, saved\n"})), false)
        .turn(text("Done."), false);
    let yaml = job_yaml("moved", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    assert_eq!(run_job(&repo, &yaml, &[]).await.code, 1);
    std::fs::write(repo.path.join("src/lib.txt"), "hello, changed on main\n").unwrap();
    repo.git(&["commit", "-qam", "main moves on"]);
    let mock = MockModel::start().await;
    let run =
        run_job(&repo, &job_yaml("moved", &mock.base_url, false), &["--continue", "refs/hone/moved/failed"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let err = &run.report()["errors"][0];
    assert_eq!(err["code"], "E_CONFLICT");
    assert!(err["message"].as_str().unwrap().contains("does not apply to the base any more"), "{err}");
    assert!(mock.requests().is_empty(), "no request was made");
    assert!(repo.is_clean(), "the checkout is left as it was");
}

/// From the failed run's report dir (even when it is the report dir of this run, cleared for
/// it): the saved work, and the conversation that made it, so the model goes on where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_a_report_dir_the_model_gets_its_conversation_back() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "check.sh"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("Out of ideas: the check wants something else."), false);
    let yaml = job_yaml("convo", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let first = run_job(&repo, &yaml, &[]).await;
    assert_eq!(first.code, 1, "{}", first.stderr);

    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let dir = first.report_dir.to_str().unwrap().to_string();
    let run = run_job(&repo, &job_yaml("convo", &mock.base_url, false), &["--continue", &dir]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let msgs = mock.requests()[0].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"], "{msgs:#?}");
    assert_eq!(msgs[6]["content"], "Out of ideas: the check wants something else.");
    let note = msgs[7]["content"].as_str().unwrap();
    assert!(
        note.starts_with("This run continues an earlier attempt that did not pass its checks (the conversation above)"),
        "{note}"
    );
    assert_eq!(roles.iter().filter(|r| **r == "system").count(), 1, "this run's own system prompt only");
    mock.assert_pairing();
    assert!(run.report()["continued_from"].as_str().unwrap().starts_with("refs/hone/convo/failed"));
}

/// Saved work with a binary file applies (a patch without the file's bytes would not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_work_with_a_binary_file_applies() {
    let repo = broken_repo();
    // Saved work made by hand, as a failed run leaves it: a commit on the base, on the ref.
    let bytes: Vec<u8> = (0u8..=255).cycle().take(3000).collect();
    std::fs::write(repo.path.join("logo.bin"), &bytes).unwrap();
    std::fs::write(repo.path.join("status.txt"), "fixed\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "hone: unverified work"]);
    repo.git(&["update-ref", "refs/hone/bin/failed", "HEAD"]);
    repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
    let mock = MockModel::start().await;
    mock.turn(text("The saved work is right."), false);
    let run = run_job(&repo, &job_yaml("bin", &mock.base_url, false), &["--continue", "failed"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown = std::process::Command::new("git")
        .args(["show", "hone/bin:logo.bin"])
        .current_dir(&repo.path)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(shown, bytes, "the binary file, byte for byte");
}

/// Issue 24, seen 3: an unreadable transcript on `--continue` was reported as
/// `error[E_SPEC]: hone: error[E_IO]: …` (the wrong code, the prefix twice). The error keeps its
/// own code, the report's message carries no rendered prefix, and stderr renders it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_transcript_is_reported_once_with_its_own_code() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("Done, I think."), false);
    let yaml = job_yaml("unread", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let first = run_job(&repo, &yaml, &[]).await;
    assert_eq!(first.code, 1, "{}", first.stderr);
    // A copy of the report dir whose transcript is a directory: not a regular file.
    let copy = repo.path.parent().unwrap().join("unreadable-reports");
    std::fs::create_dir_all(copy.join("transcript.jsonl")).unwrap();
    std::fs::copy(first.report_dir.join("report.json"), copy.join("report.json")).unwrap();

    let mock = MockModel::start().await;
    let run = run_job(&repo, &yaml, &["--continue", copy.to_str().unwrap()]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let err = &run.report()["errors"][0];
    assert_eq!(err["code"], "E_IO", "{err}");
    let message = err["message"].as_str().unwrap();
    assert!(!message.contains("error["), "no rendered prefix in the record: {message}");
    assert!(message.starts_with("cannot read "), "{message}");
    assert_eq!(run.stderr.matches("error[").count(), 1, "rendered once: {}", run.stderr);
    assert!(run.stderr.contains("error[E_IO]: cannot read "), "{}", run.stderr);
    assert!(!run.stderr.contains("E_SPEC"), "{}", run.stderr);
    assert!(mock.requests().is_empty());
}
