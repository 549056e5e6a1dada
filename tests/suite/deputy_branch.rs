//! hone's branch never drops a person's work (issue 22, found by the review: S-13). An autofix
//! run's branch is the PR's head branch, and a job's `git.branch` may be any name; a local
//! branch of that name may hold commits that were never pushed. hone moves such a branch only
//! when every commit the base lacks is its own for the job, and deletes at the end only a
//! branch it made.

use super::autofix::{mount_pr, origin_head, repo_with_pr_branch, run_autofix};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;
use wiremock::MockServer;

/// Autofix on a machine where the PR's branch has a local commit nobody pushed: hone refuses
/// rather than move the branch back to the PR's head, and the commit stays on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_never_moves_a_local_branch_with_unpushed_work() {
    let repo = repo_with_pr_branch();
    let head = origin_head(&repo);
    repo.git(&["checkout", "-q", "feature/x"]);
    std::fs::write(repo.path.join("notes.txt"), "my unpushed work\n").unwrap();
    repo.git(&["add", "notes.txt"]);
    repo.git(&["commit", "-qm", "work in progress"]);
    let mine = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "main"]);
    let gh = MockServer::start().await;
    mount_pr(&gh, &head, "acme/app").await;
    let run = run_autofix(&repo, &gh, true).await;
    assert_ne!(run.code, 0, "{}", run.stdout);
    let report = run.report();
    assert_eq!(report["errors"][0]["code"], "E_CONFLICT", "{report:#}");
    let message = report["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("`feature/x` has 1 commit(s)") && message.contains("work in progress"), "{message}");
    assert_eq!(repo.git(&["rev-parse", "feature/x"]), mine, "the local branch was moved");
    assert_eq!(origin_head(&repo), head, "something was pushed");
    assert_eq!(report["turns"], 0, "the model was asked before the branch was safe");
}

/// A job whose `git.branch` names a person's branch that sits at the base: a run that changes
/// nothing leaves it there (before, hone deleted it as its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_hone_did_not_make_is_not_deleted_at_the_end() {
    let repo = broken_repo();
    repo.git(&["branch", "keep-me"]);
    let at = repo.git(&["rev-parse", "keep-me"]);
    let model = MockModel::start().await;
    model.turn(text("Nothing to change."), false);
    let yaml =
        job_yaml("keep", &model.base_url, false).replace("version: 1\n", "version: 1\ngit: { branch: keep-me }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    let now = repo.git(&["rev-parse", "keep-me"]);
    assert_eq!(now, at, "{}\n{}", run.stdout, run.stderr);
}

/// hone's own branch from an earlier run, with hone's commit on it, is started again at the base
/// as before: re-running a job is not a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hones_own_earlier_commit_does_not_stop_the_next_run() {
    let repo = broken_repo();
    for round in 0..2 {
        let model = MockModel::start().await;
        model
            .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
            .turn(text("Fixed."), false);
        let run = run_job(&repo, &job_yaml("again", &model.base_url, false), &[]).await;
        assert_eq!(run.code, 0, "round {round}: {}\n{}", run.stdout, run.stderr);
    }
}
