//! The forge token goes to the forge's own host over HTTPS, and nowhere else: not to a
//! `pushurl`, an `insteadOf` rewrite, plain http on the forge's host name, or the target of a
//! redirect. Real git servers (`git http-backend` behind a recording HTTP(S) server) stand in
//! for the forge and for the attacker.

use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_forgecanary0123456789abcdef";

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

/// A run that fixes the check and pushes `hone/forgejob` (no PR: the push is what is tested).
async fn run_push(repo: &TestRepo, env: &[(&str, &str)]) -> Run {
    let model = fixing_model().await;
    let yaml = format!("{}pr: {{ enabled: false }}\n", job_yaml("forgejob", &model.base_url, false));
    let ca = test_ca().display().to_string();
    let mut all = vec![("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GIT_SSL_CAINFO", ca.as_str())];
    all.extend_from_slice(env);
    run_job_env(repo, &yaml, &all).await
}

/// The attacker's server never saw the token, in any form, and the run failed saying why: the
/// token was not offered to that URL.
fn assert_withheld(run: &Run, attacker: &GitHttp) {
    assert!(!attacker.seen().is_empty(), "git never reached the server: the test proves nothing");
    let got = attacker.credentials();
    assert!(got.iter().all(|c| !c.contains(TOKEN)), "the token reached {}: {got:?}", attacker.base);
    assert_ne!(run.code, 0, "nothing was pushed, so the run cannot succeed: {}", run.stderr);
    let report = run.report();
    let errors = report["errors"].to_string();
    assert!(errors.contains("GITHUB_TOKEN") && errors.contains("not offered"), "the run does not say why: {errors}");
    run.assert_no_secret(TOKEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushurl_to_another_server_never_gets_the_token() {
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "app.git", &repo.origin);
    let attacker = GitHttp::start(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.pushurl", &format!("{}/app.git", attacker.base)]);
    let run = run_push(&repo, &[]).await;
    assert_withheld(&run, &attacker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insteadof_rewrite_of_the_forge_url_never_gets_the_token() {
    for key in ["insteadOf", "pushInsteadOf"] {
        let repo = broken_repo();
        let served = tempfile::tempdir().unwrap();
        serve_copy_of(served.path(), "app.git", &repo.origin);
        let attacker = GitHttp::start(served.path(), Mode::Auth).await;
        repo.git(&["config", "remote.origin.url", "https://github.com/acme/app.git"]);
        repo.git(&["config", &format!("url.{}/.{key}", attacker.base), "https://github.com/acme/"]);
        let run = run_push(&repo, &[]).await;
        assert_withheld(&run, &attacker);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_on_the_forges_own_host_never_gets_the_token() {
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "app.git", &repo.origin);
    let attacker = GitHttp::start(served.path(), Mode::Auth).await;
    // The forge is this very host and port, but over HTTPS.
    let forge = attacker.base.replace("http://", "https://");
    repo.git(&["config", "remote.origin.url", &format!("{}/app.git", attacker.base)]);
    let run = run_push(&repo, &[("GITHUB_SERVER_URL", &forge)]).await;
    assert_withheld(&run, &attacker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_from_the_forge_is_not_followed_with_the_token() {
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "app.git", &repo.origin);
    let attacker = GitHttp::start(served.path(), Mode::Auth).await;
    let forge = GitHttp::start_tls(served.path(), Mode::Redirect(attacker.base.clone())).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/app.git", forge.base)]);
    let run = run_push(&repo, &[("GITHUB_SERVER_URL", &forge.base)]).await;
    assert!(!forge.seen().is_empty(), "git never reached the forge");
    let got = attacker.credentials();
    assert!(got.iter().all(|c| !c.contains(TOKEN)), "the redirect carried the token: {got:?}");
    assert_ne!(run.code, 0, "{}", run.stderr);
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("redirect"), "the run does not say the forge redirected: {errors}");
    run.assert_no_secret(TOKEN);
}

/// The other side: the forge itself, over HTTPS, gets the token and takes the push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forge_over_https_gets_the_token_and_the_push() {
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    let bare = serve_copy_of(served.path(), "app.git", &repo.origin);
    let forge = GitHttp::start_tls(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/app.git", forge.base)]);
    let run = run_push(&repo, &[("GITHUB_SERVER_URL", &forge.base)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sha = run.report()["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/hone/forgejob"]), sha, "the forge took the push");
    let got = forge.credentials();
    assert!(got.iter().all(|c| c == &format!("x-access-token:{TOKEN}")), "{got:?}");
    assert!(!got.is_empty(), "the forge asked for credentials and got none");
    run.assert_no_secret(TOKEN);
}

/// Autofix fetches the PR's branch first: that fetch does not carry the token either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autofix_fetch_from_another_server_never_gets_the_token() {
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "app.git", &repo.origin);
    let attacker = GitHttp::start(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/app.git", attacker.base)]);
    let gh = MockServer::start().await;
    let pr: Value = json!({"number": 3, "state": "open", "html_url": "https://github.example/acme/app/pull/3",
        "head": {"ref": "main", "sha": repo.git(&["rev-parse", "HEAD"]), "repo": {"full_name": "acme/app"}},
        "base": {"ref": "main"}});
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls/3"))
        .respond_with(ResponseTemplate::new(200).set_body_json(pr))
        .mount(&gh)
        .await;
    let model = fixing_model().await;
    let yaml = job_yaml("forgejob", &model.base_url, false);
    let uri = gh.uri();
    let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", uri.as_str())];
    let run = run_job_with(&repo, &yaml, &["--pr", "3"], &env).await;
    assert!(!attacker.seen().is_empty(), "git never reached the server");
    let got = attacker.credentials();
    assert!(got.iter().all(|c| !c.contains(TOKEN)), "the fetch carried the token: {got:?}");
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("not offered"), "the run does not say why: {}", run.stderr);
    assert!(!run.stderr.contains(TOKEN) && !run.stdout.contains(TOKEN));
}

/// A fleet clones from the forge with the token, and a redirect from the forge does not take
/// the token along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_clones_give_the_token_to_the_forge_only() {
    use crate::suite::fleet_paths::{fleet_file, origin, read_json};
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let served = dir.path().join("served");
    serve_copy_of(&served, "app.git", &good);
    let attacker = GitHttp::start(&served, Mode::Auth).await;
    let forge = GitHttp::start_tls(&served, Mode::Auth).await;
    let redirecting = GitHttp::start_tls(&served, Mode::Redirect(attacker.base.clone())).await;
    for (server, ok) in [(&forge, true), (&redirecting, false)] {
        let file = fleet_file(&dir.path().join("f"), &[format!("url: {}/app.git", server.base)], "ws");
        let (ca, api) = (test_ca().display().to_string(), format!("{}/api/v3", server.base));
        // As on GitHub Enterprise Server: the forge is the API's host.
        let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_API_URL", api.as_str()), ("GIT_SSL_CAINFO", &ca)];
        let run = run_in(dir.path(), &["fleet", file.to_str().unwrap(), "--dry-run"], &env, dir.path().join("x")).await;
        let got = attacker.credentials();
        assert!(got.iter().all(|c| !c.contains(TOKEN)), "the redirect carried the token: {got:?}");
        let report = read_json(&dir.path().join("f/ws/fleet.json"));
        let status = report["repos"][0]["status"].as_str().unwrap().to_string();
        assert_eq!(status == "succeeded", ok, "{}: {report:#}\n{}", server.base, run.stderr);
        assert!(!run.stderr.contains(TOKEN) && !report.to_string().contains(TOKEN));
    }
    assert!(forge.credentials().iter().any(|c| c == &format!("x-access-token:{TOKEN}")), "the forge got no token");
    assert!(!redirecting.seen().is_empty(), "git never reached the redirecting forge");
}
