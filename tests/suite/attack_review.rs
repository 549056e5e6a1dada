//! Issue 22, the fresh-eyes review of "every action hone takes outside the jail": each test is an
//! attack on one row of that table in docs/security.md, by a hostile model (scripted tool calls),
//! a hostile repository or a tampered report dir, that hone must hold against.

use super::jail_support::{cmd, spec};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;
use std::path::Path;

/// A directory outside the repository holding `files`, as a user's home would.
fn victim(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(d.path().join(name), body).unwrap();
    }
    d
}

/// The victim directory holds exactly `files`, unchanged, and nothing else.
fn assert_untouched(outside: &Path, files: &[(&str, &str)]) {
    let mut names: Vec<String> =
        std::fs::read_dir(outside).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want: Vec<&str> = files.iter().map(|f| f.0).collect();
    want.sort();
    assert_eq!(names, want, "hone created or removed files outside the repository");
    for (name, body) in files {
        assert_eq!(&std::fs::read_to_string(outside.join(name)).unwrap(), body, "`{name}` changed outside");
    }
}

/// `update_plan` with one step in `status`.
fn plan(status: &str) -> serde_json::Value {
    json!({"steps": [{"title": "step", "intent": "", "status": status, "expected_files": []}],
           "verification": "the check", "risk": "low"})
}

/// A checkpoint stages the model's new `d/x.txt` in the index. A later command swaps `d` for a
/// link to a directory outside that holds an `x.txt`, and makes the change too large to save
/// (so nothing stages the index again). The restore at the end must not remove `x.txt` outside
/// through the link: libgit2's checkout deletes what the index has and HEAD does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_restore_removes_nothing_through_a_link_the_index_still_names() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let files = [("x.txt", "the user's file\n")];
    let outside = victim(&files);
    let mock = MockModel::start().await;
    let swap =
        format!("rm -rf d && ln -s {} d && for i in $(seq 1 20); do echo $i > f$i.txt; done", outside.path().display());
    mock.turn(call("update_plan", plan("in_progress")), false)
        .turn(call("write_file", json!({"path": "d/x.txt", "content": "mine\n"})), false)
        .turn(call("update_plan", plan("done")), false)
        .turn(cmd(&swap), false)
        .turn(text("Done."), false);
    let policy = format!("{OPEN_POLICY}limits: {{ max_files_changed: 10 }}\n");
    let yaml = spec(&repo, "index-link", &mock, &policy, "")
        .replace("plan: false\n", "")
        .replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        !repo.git(&["for-each-ref", "refs/hone/index-link/checkpoints/1"]).is_empty(),
        "the control: a checkpoint staged d/x.txt\n{}",
        run.stderr
    );
    assert_untouched(outside.path(), &files);
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}
