//! Autofix as a GitHub App: an installation token cannot read `GET /user`, so hone knows its
//! login as the App's bot (`{slug}[bot]`) and edits its one comment on later runs, never a
//! second one.

use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_github_app::{MockGithubApp, SLUG, key_path};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::git;
use crate::common::*;
use serde_json::json;
use std::path::Path;

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Restored status.txt."), false);
    mock
}

/// Someone else breaks the PR branch on the served repository again; its new head.
fn a_human_breaks(bare: &Path) -> String {
    let human = tempfile::tempdir().unwrap();
    git(human.path(), &["clone", "-q", "-b", "feature/x", bare.to_str().unwrap(), "c"]);
    let c = human.path().join("c");
    std::fs::write(c.join("status.txt"), "broken again\n").unwrap();
    git(&c, &["-c", "user.name=Human", "-c", "user.email=h@example.com", "commit", "-q", "-am", "more work"]);
    git(&c, &["push", "-q", "origin", "feature/x"]);
    git(bare, &["rev-parse", "refs/heads/feature/x"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_as_an_app_edits_its_one_comment() {
    let app = MockGithubApp::start(&["acme"]).await;
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let served = tempfile::tempdir().unwrap();
    let bare = serve_copy_of(served.path(), "acme/app.git", &repo.origin);
    let forge = GitHttp::start_tls(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/acme/app.git", forge.base)]);
    let ca = test_ca().display().to_string();
    let mut env = app.env(&key_path(true));
    env.extend([
        ("GITHUB_REPOSITORY".to_string(), "acme/app".to_string()),
        ("GITHUB_SERVER_URL".to_string(), forge.base.clone()),
        ("GIT_SSL_CAINFO".to_string(), ca),
    ]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let bot = format!("{SLUG}[bot]");

    app.open_pr(3, "feature/x", &git(&bare, &["rev-parse", "refs/heads/feature/x"]));
    let model = fixing_model().await;
    let run = run_job_with(&repo, &job_yaml("appfix", &model.base_url, false), &["--pr", "3"], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(app.comments().len(), 1, "{:?}", app.comments());
    assert_eq!(app.comments()[0].0, bot);

    app.open_pr(3, "feature/x", &a_human_breaks(&bare));
    let model = fixing_model().await;
    let again = run_job_with(&repo, &job_yaml("appfix", &model.base_url, false), &["--pr", "3"], &env).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let comments = app.comments();
    assert_eq!(comments.len(), 1, "the App's comment was edited, not posted again: {comments:#?}");
    assert_eq!(app.seen_at("/repos/acme/app/issues/comments/100").len(), 1, "one PATCH of the App's comment");
    assert!(app.seen_at("/user").is_empty(), "hone knows the App's login without asking");
}
