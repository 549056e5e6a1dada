//! Hooks around the model's edits (issue 15, part 2): `after_edit` runs after each successful
//! write with the changed files, and the model sees what it changed or why it failed;
//! `before_verify` runs before each verification round, and its edits are part of the change;
//! the policy can refuse a hook; every run is in the report and the events.

use super::jail_support::{fix, result_of, write};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;

fn spec_with_hooks(name: &str, mock: &MockModel, hooks: &str) -> String {
    job_yaml(name, &mock.base_url, false).replace("verify:\n", &format!("hooks:\n{hooks}verify:\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_edit_fixes_what_the_model_wrote_and_shows_it_the_diff() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    // A "formatter" that strips trailing blanks, and a "linter" that always complains.
    let hooks = "  after_edit:\n    - { name: fmt, run: \"sed -i 's/[[:space:]]*$//' {files}\" }\n    - { name: lint, run: \"echo 'W291 trailing whitespace' {files}; exit 1\" }\n";
    let yaml = with_policy(&repo, &spec_with_hooks("hooks-edit", &mock, hooks), OPEN_POLICY);
    // The check wants exactly `fixed`: only the hook makes the model's write pass.
    // Undo still works after the hook rewrote the file (it undoes the write and the hook's fix).
    mock.turn(write("status.txt", "fixed   \n"), false)
        .turn(call("undo_patch", json!({})), false)
        .turn(write("status.txt", "fixed   \n"), false)
        .turn(text("Set status.txt to fixed."), false);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let result = result_of(&mock, 0);
    assert!(result.contains("[hook `fmt` changed status.txt"), "{result}");
    assert!(result.contains("-fixed   ") && result.contains("+fixed"), "the diff: {result}");
    assert!(
        result.contains("[hook `lint` failed") && result.contains("W291 trailing whitespace ./status.txt"),
        "{result}"
    );
    let undo = result_of(&mock, 1);
    assert!(!undo.contains("E_CONFLICT") && !undo.starts_with("error"), "undo after a hook: {undo}");
    assert_eq!(repo.git(&["show", "hone/hooks-edit:status.txt"]), "fixed");
    let report = run.report();
    let hooks = report["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 4, "two hooks after each of the two writes (none after the undo): {report:#}");
    assert_eq!((hooks[0]["name"].as_str(), hooks[0]["kind"].as_str()), (Some("fmt"), Some("after_edit")));
    assert_eq!(hooks[0]["command"], "sed -i 's/[[:space:]]*$//' './status.txt'");
    assert_eq!(hooks[0]["changed"][0], "status.txt");
    assert_eq!((hooks[1]["passed"].as_bool(), hooks[1]["exit_code"].as_i64()), (Some(false), Some(1)));
    assert_eq!(run.events().iter().filter(|e| e["type"] == "hook_completed").count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_verify_edits_are_part_of_the_change_and_the_policy_can_refuse_a_hook() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let hooks = "  before_verify:\n    - { name: autofix, run: \"sed -i s/broken/fixed/ status.txt\" }\n    - { name: clean, run: \"rm -f {files}\" }\n";
    let policy = "version: 1\ncommands:\n  default: allow\n  deny: [\"rm *\"]\n";
    let yaml = with_policy(&repo, &spec_with_hooks("hooks-verify", &mock, hooks), policy);
    // The model touches another file; the hook makes the check pass.
    mock.turn(write("src/lib.txt", "hello, world\n"), false).turn(text("Done."), false);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let mut files = committed(&repo, "hone/hooks-verify");
    files.sort();
    assert_eq!(files, ["src/lib.txt", "status.txt"], "the hook's edit is part of the change");
    let report = run.report();
    let hooks = report["hooks"].as_array().unwrap();
    assert_eq!(hooks[0]["passed"], true, "{report:#}");
    assert_eq!(hooks[1]["denied"], "commands.deny[0] `rm *`", "{report:#}");
    assert_eq!(hooks[1]["command"], "rm -f './src/lib.txt'");
    assert!(
        repo.git(&["show", "hone/hooks-verify:src/lib.txt"]).contains("hello, world"),
        "the refused hook did not run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_checked_like_every_command_list_in_the_spec() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    fix(&mock);
    let yaml = spec_with_hooks("hooks-bad", &mock, "  after_edit:\n    - { run: \"x {files}\" }\n  on_save: []\n");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("hooks.after_edit[0].name") && run.stderr.contains("hooks.on_save"), "{}", run.stderr);
    assert!(mock.requests().is_empty());
}
