//! The restore and the rollback put the checkout back whatever a command left: links where the
//! index still names files, trees deeper than git walks, names that are not UTF-8.

use super::plan;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use crate::suite::deputy_restore::{assert_untouched, victim};
use crate::suite::jail_support::{cmd, fix, spec};
use serde_json::json;

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

/// A command leaves a tree 400 directories deep, past the 100 levels libgit2 walks: every status
/// and checkout of the work tree fails on it ("directory nesting too deep"), the restore included,
/// which left the run's branch checked out with the run's files. The restore must remove it and
/// put the checkout back (the change itself cannot be measured: the run ends in error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_very_deep_tree_a_command_left_is_removed() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let deep = "python3 -c \"import os\np = 'deep/' + 'd/' * 400\nos.makedirs(p)\nopen(p + 'f.txt', 'w').write('x')\"";
    mock.turn(cmd(deep), false).turn(text("Done."), false);
    let yaml = spec(&repo, "deep-tree", &mock, OPEN_POLICY, "").replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job(&repo, &yaml, &[]).await;
    let errors = run.report()["errors"].to_string();
    assert!(!errors.contains("could not restore"), "{errors}");
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(repo.head_branch(), "main");
    let left =
        std::process::Command::new("find").args(["deep", "-type", "f"]).current_dir(&repo.path).output().unwrap();
    assert!(left.stdout.is_empty(), "files the command left: {}", String::from_utf8_lossy(&left.stdout));
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}

/// Files and directories a command made under names that are not UTF-8 are counted toward the
/// limits and removed by the restore like any other (their lossy spelling names nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_names_a_command_left_are_counted_and_removed() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let make = "d=\"$(printf 'd\\377')\"; mkdir \"$d\" && for i in $(seq 1 30); do echo $i > \"$d/f$i\"; done; echo x > \"$(printf 'n\\377')\"";
    mock.turn(cmd(make), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}limits: {{ max_files_changed: 10 }}\n");
    let run = run_job(&repo, &spec(&repo, "nonutf8-left", &mock, &policy, ""), &[]).await;
    assert_eq!(run.code, 1, "the change of 32 files passed a limit of 10: {}", run.stderr);
    assert!(run.report()["errors"].to_string().contains("more than 10 files changed"), "{}", run.stderr);
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}
