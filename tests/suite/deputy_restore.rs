//! Issue 22, item 1: hone's own writes to the work tree (the restore at the end of a run, the
//! rollback to a checkpoint, `--continue`'s saved work, `undo_patch`) never follow a symlink
//! that a command, the repository's setup or the model planted. A link anywhere in the tree
//! changes nothing outside it.
//!
//! The victim is a directory outside the repository, as a user's home would be: after each
//! attack it must hold exactly what it held before.

use super::jail_support::{cmd, spec};
use crate::common::mock_model::{MockModel, Turn, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;
use std::path::Path;

/// A directory outside the repository holding `files`, as a user's home would.
pub(super) fn victim(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(d.path().join(name), body).unwrap();
    }
    d
}

const VICTIM: &[(&str, &str)] = &[("victim.txt", "victim\n")];

/// The victim directory holds exactly `files`, unchanged, and nothing else.
pub(super) fn assert_untouched(outside: &Path, files: &[(&str, &str)]) {
    let mut names: Vec<String> =
        std::fs::read_dir(outside).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want: Vec<&str> = files.iter().map(|f| f.0).collect();
    want.sort();
    assert_eq!(names, want, "hone created or removed files outside the repository");
    for (name, body) in files {
        assert_eq!(&std::fs::read_to_string(outside.join(name)).unwrap(), body, "`{name}` overwritten outside");
    }
}

/// The checkout is back as it was: `src/` a real directory again, every tracked file as committed.
fn assert_restored(repo: &TestRepo) {
    let src = std::fs::symlink_metadata(repo.path.join("src")).unwrap();
    assert!(src.is_dir(), "src/ is a real directory again");
    assert_eq!(repo.file("src/lib.txt"), "hello\n");
    assert!(!std::fs::symlink_metadata(repo.path.join("status.txt")).unwrap().file_type().is_symlink());
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}

/// The repository's own setup script (an attacker's, in a fleet or autofix run: no model turn is
/// needed) swaps the tracked directory `src/` for a link to the victim. The model changes
/// nothing. The restore at the end must not write `src/lib.txt` through the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_planted_by_setup_is_not_followed_by_the_restore() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let outside = victim(VICTIM);
    let mock = MockModel::start().await;
    mock.turn(text("Nothing to do."), false);
    let setup = format!(
        "setup:\n  - {{ name: plant, run: \"rm -rf src status.txt && ln -s {0} src && ln -s {0}/victim.txt status.txt\", timeout: 30s }}\n",
        outside.path().display()
    );
    let yaml = spec(&repo, "setup-link", &mock, OPEN_POLICY, "").replace("verify:\n", &format!("{setup}verify:\n"));
    let run = run_job(&repo, &yaml, &[]).await;
    eprintln!("{}\n{}", run.stdout, run.stderr);
    assert_untouched(outside.path(), VICTIM);
    assert_restored(&repo);
}

/// The model's command swaps a tracked file and a tracked directory for links to the victim; the
/// run fails (its check cannot pass), so hone saves the work and restores the checkout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_planted_by_a_command_are_not_followed_by_the_restore() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let outside = victim(VICTIM);
    let mock = MockModel::start().await;
    let o = outside.path().display();
    mock.turn(cmd(&format!("rm -rf src status.txt && ln -s {o} src && ln -s {o}/victim.txt status.txt")), false)
        .turn(text("Done."), false);
    let yaml = spec(&repo, "cmd-link", &mock, OPEN_POLICY, "").replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let guard = run.report()["policy"]["guard"].to_string();
    assert!(guard.contains("symlinks that lead outside the repository") && guard.contains("`src` ->"), "{guard}");
    assert_untouched(outside.path(), VICTIM);
    assert_restored(&repo);
}

/// A plan step swaps `src/` for a link and breaks a passing check: the rollback to the baseline
/// checkpoint puts `src/` back without writing through the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollback_to_a_checkpoint_does_not_follow_a_link() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("math.txt", "4\n"), ("src/lib.txt", "hello\n")]);
    let outside = victim(VICTIM);
    let mock = MockModel::start().await;
    let plan = |steps: &[(&str, &str)]| {
        json!({"steps": steps.iter().map(|(t, s)| json!({"title": t, "intent": "", "status": s, "expected_files": []})).collect::<Vec<_>>(),
               "verification": "the checks", "risk": "low"})
    };
    let swap = format!("rm -rf src && ln -s {} src && echo 5 > math.txt", outside.path().display());
    mock.turn(call("update_plan", plan(&[("swap", "in_progress")])), false)
        .turn(cmd(&swap), false)
        .turn(call("update_plan", plan(&[("swap", "done")])), false)
        .turn(text("Stopping here."), false);
    let checks = "  - { name: status, run: \"grep -qx fixed status.txt\", timeout: 30s }\n  - { name: math, run: \"grep -qx 4 math.txt\", timeout: 30s }";
    let yaml = spec(&repo, "rollback-link", &mock, OPEN_POLICY, "")
        .replace("plan: false\n", "")
        .replace(r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#, checks);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.report()["rollbacks"].as_array().map(Vec::len), Some(1), "{}", run.stderr);
    assert_untouched(outside.path(), VICTIM);
    assert!(std::fs::symlink_metadata(repo.path.join("src")).unwrap().is_dir());
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}

/// `--continue`: the saved work edits `src/lib.txt`; on the second attempt the repository's setup
/// swaps `src/` for a link to a directory whose `lib.txt` matches the base, so the saved change
/// would apply there. It must be applied inside the repository or not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_work_is_not_applied_through_a_link() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let base_copy = [("lib.txt", "hello\n")];
    let outside = victim(&base_copy);
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "src/lib.txt", "content": "hello, saved\n"})), false)
        .turn(text("Done, I think."), false);
    let yaml = spec(&repo, "again-link", &mock, OPEN_POLICY, "").replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    assert_eq!(run_job(&repo, &yaml, &[]).await.code, 1);

    let mock = MockModel::start().await;
    mock.turn(text("Nothing more."), false);
    let setup = format!(
        "setup:\n  - {{ name: plant, run: \"rm -rf src && ln -s {} src\", timeout: 30s }}\n",
        outside.path().display()
    );
    let yaml = yaml.replace(&mock_url_of(&yaml), &mock.base_url).replace("verify:\n", &format!("{setup}verify:\n"));
    let run = run_job(&repo, &yaml, &["--continue", "failed"]).await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_untouched(outside.path(), &base_copy);
    assert_restored(&repo);
}

/// `undo_patch` after a command swapped the patched file's directory for a link to a directory
/// holding the patched content: the undo is refused, and nothing outside is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_patch_does_not_follow_a_link() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let patched = [("lib.txt", "patched\n")];
    let outside = victim(&patched);
    let mock = MockModel::start().await;
    let patch = "--- a/src/lib.txt\n+++ b/src/lib.txt\n@@ -1 +1 @@\n-hello\n+patched\n";
    mock.turn(call("apply_patch", json!({"patch": patch})), false)
        .turn(cmd(&format!("rm -rf src && ln -s {} src", outside.path().display())), false)
        .turn(Turn::default().with_call("undo_patch", "{}"), false)
        .turn(text("Done."), false);
    let yaml = spec(&repo, "undo-link", &mock, OPEN_POLICY, "").replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let _ = run_job(&repo, &yaml, &[]).await;
    let undo = super::jail_support::result_of(&mock, 2);
    assert!(undo.starts_with("error"), "the undo was refused: {undo}");
    assert_untouched(outside.path(), &patched);
    assert_restored(&repo);
}

/// The mock URL a spec names.
fn mock_url_of(yaml: &str) -> String {
    yaml.lines().find_map(|l| l.trim().strip_prefix("base_url: ")).unwrap().to_string()
}
