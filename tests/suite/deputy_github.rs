//! hone's GitHub work acts only on what is hone's: it edits only a comment its own identity wrote,
//! skips a PR only when the head commit is hone's by trailer and by identity, calls the API only
//! for a valid `owner/repo` (with every value encoded), and sends the token to the API's own host
//! (GitHub Enterprise Server too), never along a redirect.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use crate::suite::autofix::{TOKEN, expect_comment_written, mount_pr, origin_head, repo_with_pr_branch, run_autofix};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const MARKER: &str = "<!-- hone:autofix job=autofix -->";

/// `GET /user` answers `login` (a personal token), or 403 as it does for an installation token.
async fn mount_user(gh: &MockServer, login: Option<&str>) {
    let reply = match login {
        Some(l) => ResponseTemplate::new(200).set_body_json(json!({"login": l, "type": "User"})),
        None => ResponseTemplate::new(403).set_body_json(json!({"message": "Resource not accessible by integration"})),
    };
    Mock::given(method("GET")).and(path("/user")).respond_with(reply).mount(gh).await;
}

fn comment(id: u64, login: &str, body: &str) -> Value {
    json!({"id": id, "body": body, "user": {"login": login, "type": if login.ends_with("[bot]") { "Bot" } else { "User" }}})
}

/// No comment but `id` is edited.
async fn forbid_patch(gh: &MockServer, id: u64) {
    Mock::given(method("PATCH"))
        .and(path(format!("/repos/acme/app/issues/comments/{id}")))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(gh)
        .await;
}

/// A commenter plants hone's marker: hone edits only the comment its own identity wrote (the
/// token's login, or `github-actions[bot]` for a token that cannot read `/user`), or posts anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_hones_own_comment_is_edited() {
    let planted = format!("{MARKER}\nplanted by mallory");
    for (login, comments, written) in [
        (
            Some("hone-bot"),
            json!([comment(54, "mallory", &planted), comment(56, "hone-bot", &format!("{MARKER}\nold"))]),
            ("PATCH", "/repos/acme/app/issues/comments/56"),
        ),
        (
            None,
            json!([comment(54, "mallory", &planted), comment(57, "github-actions[bot]", &format!("{MARKER}\nold"))]),
            ("PATCH", "/repos/acme/app/issues/comments/57"),
        ),
        (
            None,
            json!([comment(54, "mallory", &planted), comment(58, "hone-bot", &format!("quoting: {MARKER}"))]),
            ("POST", "/repos/acme/app/issues/3/comments"),
        ),
    ] {
        let repo = repo_with_pr_branch();
        let gh = MockServer::start().await;
        mount_pr(&gh, &origin_head(&repo), "acme/app").await;
        mount_user(&gh, login).await;
        expect_comment_written(&gh, comments, (written.0, written.1, "hone pushed a fix")).await;
        forbid_patch(&gh, 54).await;
        forbid_patch(&gh, 58).await;
        let run = run_autofix(&repo, &gh, true).await;
        assert_eq!(run.code, 0, "{login:?}: {}", run.stderr);
        gh.verify().await;
    }
}

/// A PR author writes the `Hone-Job:` trailer into their own commit: hone still fixes the PR,
/// since the commit is not by hone's configured identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trailer_alone_does_not_make_a_commit_hones() {
    let repo = TestRepo::new(&[("status.txt", "fixed\n"), ("check.sh", CHECK_SH)]);
    repo.git(&["checkout", "-q", "-b", "feature/x"]);
    std::fs::write(repo.path.join("status.txt"), "broken by the PR\n").unwrap();
    repo.git(&["commit", "-q", "-am", "feature work\n\nHone-Job: autofix"]);
    repo.git(&["push", "-q", "origin", "feature/x"]);
    repo.git(&["checkout", "-q", "main"]);
    let head = origin_head(&repo);
    let gh = MockServer::start().await;
    mount_pr(&gh, &head, "acme/app").await;
    expect_comment_written(&gh, json!([]), ("POST", "/repos/acme/app/issues/3/comments", "hone pushed a fix")).await;
    let run = run_autofix(&repo, &gh, true).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["status"], "success", "{}", run.report()["summary"]);
    assert_ne!(origin_head(&repo), head, "hone did not fix the PR");
    gh.verify().await;
}

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

/// A PR run against the mock GitHub at `api`, with `env` on top of the token.
async fn run_pr(repo: &TestRepo, extra: &str, api: &str, env: &[(&str, &str)]) -> Run {
    let model = fixing_model().await;
    let yaml = format!("{}{extra}", job_yaml("ghjob", &model.base_url, false));
    let mut all = vec![("GITHUB_TOKEN", TOKEN), ("GITHUB_API_URL", api)];
    all.extend_from_slice(env);
    run_job_env(repo, &yaml, &all).await
}

/// Open PR listing and creation for `acme/app` under `prefix`.
async fn mount_pulls(gh: &MockServer, prefix: &str) {
    Mock::given(method("GET"))
        .and(path(format!("{prefix}/repos/acme/app/pulls")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(gh)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{prefix}/repos/acme/app/pulls")))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(
                json!({"number": 7, "html_url": "https://github.example/acme/app/pull/7", "state": "open"}),
            ),
        )
        .mount(gh)
        .await;
}

/// Without `GITHUB_REPOSITORY`, owner and repo come from the remote URL: a name GitHub would
/// not give (`?`, `#`, `..`) is refused before any API call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_or_repo_from_the_remote_url_must_be_a_github_name() {
    for url in ["https://github.com/acme/app?x=1", "https://github.com/acme/app#frag", "https://github.com/acme/.."] {
        let repo = broken_repo();
        repo.git(&["config", "remote.origin.url", url]);
        let gh = MockServer::start().await;
        let run = run_pr(&repo, "git: { push: false }\n", &gh.uri(), &[]).await;
        let seen: Vec<String> = gh.received_requests().await.unwrap().iter().map(|r| r.url.to_string()).collect();
        assert!(seen.is_empty(), "{url}: the API was called: {seen:?}");
        let report = run.report();
        let said = format!("{}{}", report["errors"], report["warnings"]);
        assert!(said.contains("not a valid GitHub"), "{url}: the run does not say why: {said}\n{}", run.stderr);
    }
}

/// The branch goes into `head=` encoded: `&` and `#` in it are not more query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_head_query_value_is_encoded() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    mount_pulls(&gh, "").await;
    let branch = "hone/a&state=closed#x";
    let extra = format!("git: {{ branch: \"{branch}\" }}\n");
    let run = run_pr(&repo, &extra, &gh.uri(), &[("GITHUB_REPOSITORY", "acme/app")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = gh.received_requests().await.unwrap();
    let list = reqs.iter().find(|r| r.method.as_str() == "GET").expect("the open PRs were listed");
    let pairs: Vec<(String, String)> = list.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    assert_eq!(
        pairs,
        [("head".to_string(), format!("acme:{branch}")), ("state".to_string(), "open".to_string())],
        "{}",
        list.url
    );
}

/// GitHub Enterprise Server: the API is another host with a path (`/api/v3`); every call carries
/// the token. A redirect to another host is not followed: neither the token nor the request goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_goes_to_an_enterprise_api_and_never_along_a_redirect() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    mount_pulls(&gh, "/api/v3").await;
    let api = format!("{}/api/v3", gh.uri().replace("127.0.0.1", "localhost"));
    let run = run_pr(&repo, "", &api, &[("GITHUB_REPOSITORY", "acme/app")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["pr"]["operation"], "created", "{}", run.report()["pr"]);
    let reqs = gh.received_requests().await.unwrap();
    assert!(reqs.len() >= 2, "{reqs:?}");
    for r in &reqs {
        let auth = r.headers.get("authorization").and_then(|v| v.to_str().ok());
        assert_eq!(auth, Some(format!("Bearer {TOKEN}").as_str()), "{} {}", r.method, r.url);
    }

    let repo = broken_repo();
    let (gh, elsewhere) = (MockServer::start().await, MockServer::start().await);
    mount_pulls(&elsewhere, "").await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(
            ResponseTemplate::new(307).insert_header("location", format!("{}/repos/acme/app/pulls", elsewhere.uri())),
        )
        .mount(&gh)
        .await;
    let run = run_pr(&repo, "", &gh.uri(), &[("GITHUB_REPOSITORY", "acme/app")]).await;
    assert!(!gh.received_requests().await.unwrap().is_empty(), "the API was never asked: this proves nothing");
    // Not followed at all: neither the token nor the request (a PR body, for a POST) goes there.
    let there = elsewhere.received_requests().await.unwrap();
    assert!(there.is_empty(), "the redirect was followed to {:?}", there.iter().map(|r| &r.url).collect::<Vec<_>>());
    let said = format!("{}{}", run.stdout, run.report()["pr"]);
    assert!(said.contains("redirect"), "the run does not say the API redirected: {said}");
}

/// Attack: mallory opens a PR from hone's branch (anyone may, on a public repository) onto the
/// base hone uses. hone's run edits none of it: GitHub refuses a second PR for the same head and
/// base, and the run says whose it is instead of adopting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pr_someone_else_opened_from_hones_branch_is_never_edited() {
    use crate::suite::pr::{LOGIN, TOKEN as PR_TOKEN, fixing_model, mount_list, mutations, run_pr, yaml};
    let repo = broken_repo();
    let gh = MockServer::start().await;
    let mut theirs = crate::suite::pr::pr_json(5);
    theirs["user"] = json!({"login": "mallory"});
    mount_list(&gh, json!([theirs])).await;
    let exists = json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for acme:hone/prjob."}]});
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(422).set_body_json(exists))
        .mount(&gh)
        .await;
    let model = fixing_model().await;
    let run = run_pr(&repo, &yaml("prjob", &model.base_url, "  close_if_empty: true\n"), &gh, &[]).await;
    let edits: Vec<_> =
        mutations(&gh).await.into_iter().filter(|(m, p, _)| m != "POST" || p != "/repos/acme/app/pulls").collect();
    assert!(edits.is_empty(), "mallory's PR was touched: {edits:#?}");
    assert_ne!(run.code, 0, "{}", run.stderr);
    let err = run.report()["errors"].to_string();
    assert!(err.contains("did not open it") && err.contains("hone/prjob"), "{err}");
    run.assert_no_secret(PR_TOKEN);
    assert_ne!(LOGIN, "mallory");
}
