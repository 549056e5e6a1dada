//! Autofix mode: fix a PR in place, skip hone's own commits, refuse forks, one edited comment.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::git;
use crate::common::*;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) const TOKEN: &str = "ghp_autofixcanary0123456789";

/// A repo whose origin has a PR branch `feature/x` with a failing check.
pub(crate) fn repo_with_pr_branch() -> crate::common::repo::TestRepo {
    let repo = crate::common::repo::TestRepo::new(&[("status.txt", "fixed\n"), ("check.sh", CHECK_SH)]);
    repo.git(&["checkout", "-q", "-b", "feature/x"]);
    std::fs::write(repo.path.join("status.txt"), "broken by the PR\n").unwrap();
    repo.git(&["commit", "-q", "-am", "feature work"]);
    repo.git(&["push", "-q", "origin", "feature/x"]);
    repo.git(&["checkout", "-q", "main"]);
    repo
}

/// PR #3 as GitHub answers it; `base_sha`: its base commit (none: an answer without one).
fn pr(head_sha: &str, head_repo: &str, base_sha: Option<&str>) -> Value {
    let mut base = json!({"ref": "main"});
    if let Some(sha) = base_sha {
        base["sha"] = json!(sha);
    }
    json!({"number": 3, "state": "open", "html_url": "https://github.example/acme/app/pull/3",
           "head": {"ref": "feature/x", "sha": head_sha, "repo": {"full_name": head_repo}}, "base": base})
}

/// GraphQL's `viewer` names `login`, as it does for an installation token (`slug[bot]`). A read:
/// it wins over a test's "no POST" (a write) expectation.
pub(crate) async fn mount_viewer(gh: &MockServer, login: &str) {
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(wiremock::matchers::body_string_contains("viewer"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {"viewer": {"login": login}}})))
        .with_priority(1)
        .mount(gh)
        .await;
}

pub(crate) async fn mount_pr(gh: &MockServer, head_sha: &str, head_repo: &str) {
    mount_pr_on(gh, head_sha, head_repo, None).await;
}

/// `mount_pr`, GitHub naming `base_sha` as the PR's base commit.
pub(crate) async fn mount_pr_on(gh: &MockServer, head_sha: &str, head_repo: &str, base_sha: Option<&str>) {
    // As GitHub answers an installation token (`GITHUB_TOKEN`): it may not read `/user` (a test
    // that names the token's user mounts its own answer, which wins), and GraphQL's `viewer` is
    // the Actions App's bot.
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(
            ResponseTemplate::new(403).set_body_json(json!({"message": "Resource not accessible by integration"})),
        )
        .with_priority(10)
        .mount(gh)
        .await;
    mount_viewer(gh, "github-actions[bot]").await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls/3"))
        .respond_with(ResponseTemplate::new(200).set_body_json(pr(head_sha, head_repo, base_sha)))
        .mount(gh)
        .await;
}

pub(crate) async fn run_autofix(repo: &crate::common::repo::TestRepo, gh: &MockServer, fix: bool) -> Run {
    let model = MockModel::start().await;
    if fix {
        model
            .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
            .turn(text("Restored status.txt."), false);
    }
    let yaml = job_yaml("autofix", &model.base_url, false);
    let uri = gh.uri();
    let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", uri.as_str())];
    run_job_with(repo, &yaml, &["--pr", "3"], &env).await
}

pub(crate) fn origin_head(repo: &crate::common::repo::TestRepo) -> String {
    git(&repo.origin, &["rev-parse", "refs/heads/feature/x"])
}

/// PR #3's comments are `existing`; hone writes its one comment exactly once, by `method` at
/// `at`, with `says` in the body (and answers as comment 55).
pub(crate) async fn expect_comment_written(gh: &MockServer, existing: Value, (verb, at, says): (&str, &str, &str)) {
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/issues/3/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(existing))
        .mount(gh)
        .await;
    let status = if verb == "POST" { 201 } else { 200 };
    Mock::given(method(verb))
        .and(path(at))
        .and(body_string_contains(says))
        .respond_with(
            ResponseTemplate::new(status).set_body_json(json!({"id": 55, "html_url": "https://github.example/c/55"})),
        )
        .expect(1)
        .mount(gh)
        .await;
}

/// No POST to `at` at all.
async fn forbid_post(gh: &MockServer, at: &str) {
    Mock::given(method("POST")).and(path(at)).respond_with(ResponseTemplate::new(201)).expect(0).mount(gh).await;
}

/// Someone else pushes a commit that breaks the check again onto the PR branch; its new head.
fn a_human_breaks_the_pr_branch(repo: &crate::common::repo::TestRepo) -> String {
    let human = tempfile::tempdir().unwrap();
    git(human.path(), &["clone", "-q", "-b", "feature/x", repo.origin.to_str().unwrap(), "c"]);
    let c = human.path().join("c");
    std::fs::write(c.join("status.txt"), "broken again\n").unwrap();
    git(&c, &["commit", "-q", "-am", "more feature work"]);
    git(&c, &["push", "-q", "origin", "feature/x"]);
    origin_head(repo)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_pushes_to_the_pr_branch_skips_its_own_commit_and_edits_one_comment() {
    let repo = repo_with_pr_branch();
    let head = origin_head(&repo);
    let gh = MockServer::start().await;
    mount_pr(&gh, &head, "acme/app").await;
    let marker = "<!-- hone:autofix job=autofix -->";
    expect_comment_written(&gh, json!([]), ("POST", "/repos/acme/app/issues/3/comments", marker)).await;
    forbid_post(&gh, "/repos/acme/app/pulls").await;
    let run = run_autofix(&repo, &gh, true).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["pr"]["operation"], "updated");
    assert_eq!(report["pr"]["number"], 3);
    // A new commit on the PR branch, on top of its head, with the trailer.
    let new_head = origin_head(&repo);
    assert_ne!(new_head, head);
    assert_eq!(git(&repo.origin, &["rev-parse", &format!("{new_head}^")]), head);
    let msg = git(&repo.origin, &["log", "-1", "--format=%B", &new_head]);
    assert!(msg.contains("Hone-Job: autofix"), "{msg}");
    assert_eq!(git(&repo.origin, &["show", &format!("{new_head}:status.txt")]), "fixed");
    gh.verify().await;

    // Second run: the head is hone's own commit, so nothing happens.
    gh.reset().await;
    mount_pr(&gh, &new_head, "acme/app").await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(201)).expect(0).mount(&gh).await;
    Mock::given(method("PATCH")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&gh).await;
    let run = run_autofix(&repo, &gh, false).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["status"], "skipped");
    assert!(run.report()["summary"].as_str().unwrap().contains("was made by hone"));
    assert_eq!(origin_head(&repo), new_head);
    gh.verify().await;

    // Someone pushes again; hone fixes it again and edits its one comment.
    let human_head = a_human_breaks_the_pr_branch(&repo);
    gh.reset().await;
    mount_pr(&gh, &human_head, "acme/app").await;
    // hone's comment is the one its identity wrote: `GITHUB_TOKEN` (no `/user` here) writes as
    // github-actions[bot].
    let comments = json!([{"id": 54, "body": "LGTM", "user": {"login": "octocat"}},
        {"id": 55, "body": format!("{marker}\nold"), "user": {"login": "github-actions[bot]"}}]);
    expect_comment_written(&gh, comments, ("PATCH", "/repos/acme/app/issues/comments/55", "hone pushed a fix")).await;
    forbid_post(&gh, "/repos/acme/app/issues/3/comments").await;
    let run = run_autofix(&repo, &gh, true).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_ne!(origin_head(&repo), human_head);
    gh.verify().await;
    run.assert_no_secret(TOKEN);
    assert!(!std::fs::read_to_string(repo.path.join(".git/config")).unwrap().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_pr_is_refused_with_the_reason_in_the_report() {
    let repo = repo_with_pr_branch();
    let head = origin_head(&repo);
    let gh = MockServer::start().await;
    mount_pr(&gh, &head, "stranger/app").await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(201)).expect(0).mount(&gh).await;
    let run = run_autofix(&repo, &gh, false).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "skipped");
    assert!(
        report["summary"].as_str().unwrap().contains("comes from the fork `stranger/app`"),
        "{}",
        report["summary"]
    );
    assert!(report["summary"].as_str().unwrap().contains("pr.allow_forks"));
    assert_eq!(origin_head(&repo), head);
    gh.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_actions_the_pr_comes_from_the_event_file() {
    let repo = repo_with_pr_branch();
    let head = origin_head(&repo);
    let gh = MockServer::start().await;
    mount_pr(&gh, &head, "stranger/app").await;
    let event = repo.dir.path().join("event.json");
    std::fs::write(&event, r#"{"action": "labeled", "number": 3, "pull_request": {"number": 3}}"#).unwrap();
    let model = MockModel::start().await;
    let (uri, ev) = (gh.uri(), event.to_str().unwrap().to_string());
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_API_URL", uri.as_str()),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", ev.as_str()),
    ];
    let run = run_job_env(&repo, &job_yaml("autofix", &model.base_url, false), &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // PR #3 was read from the event (it is a fork PR here, so it is refused, not fixed).
    assert_eq!(run.report()["status"], "skipped");
    assert!(
        run.report()["summary"].as_str().unwrap().contains("PR `#3` comes from the fork"),
        "the summary names the PR, as inert text"
    );
    assert_eq!(
        gh.received_requests().await.unwrap().iter().filter(|r| r.url.path() == "/repos/acme/app/pulls/3").count(),
        1
    );
}
