//! On GitHub Enterprise Server a token goes to that server alone: with `GITHUB_SERVER_URL` set
//! and no `GITHUB_API_URL` (any runner but Actions, a container that passes only the first),
//! the API is the server's own `/api/v3`, for a token and for a GitHub App's JWT alike; a pair
//! that would send the server's token to api.github.com stops the run naming the variable. The
//! host names resolve only inside the test's proxy, which records every host asked for, so a
//! request to api.github.com cannot go unseen.

use crate::common::connect_proxy::{ConnectProxy, Pki, Task, tls_front};
use crate::common::git_http::{GitHttp, Mode, serve_copy_of};
use crate::common::mock_github_app::{MockGithubApp, key_path};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use serde_json::json;
use std::net::SocketAddr;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_ghescanary0123456789abcdef";

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    rest.split('/').next().unwrap().parse().unwrap()
}

/// The model at `model.test`; the server at `ghes.test`, git and `/api/v3` (`api`) on one host.
struct Ghes {
    pki: Pki,
    proxy: ConnectProxy,
    bare: std::path::PathBuf,
    _model: MockModel,
    _git: GitHttp,
    _served: tempfile::TempDir,
    _tasks: Vec<Task>,
}

async fn ghes(repo: &TestRepo, api: &str, mode: Mode) -> Ghes {
    let pki = Pki::new(&["model.test", "ghes.test"]);
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let served = tempfile::tempdir().unwrap();
    let bare = serve_copy_of(served.path(), "acme/app.git", &repo.origin);
    let git = GitHttp::start(served.path(), mode).await;
    let (host, router) = crate::common::path_router::start(&[("/api/v3", api)], &git.base).await;
    let (server, t1) = tls_front(&pki, host).await;
    let (model_at, t2) = tls_front(&pki, addr_of(&model.base_url)).await;
    let proxy = ConnectProxy::start(&[("ghes.test:443", server), ("model.test:443", model_at)]).await;
    repo.git(&["config", "remote.origin.url", "https://ghes.test/acme/app.git"]);
    Ghes { pki, proxy, bare, _model: model, _git: git, _served: served, _tasks: vec![router, t1, t2] }
}

async fn run_on(repo: &TestRepo, g: &Ghes, extra: &[(&str, &str)]) -> Run {
    run_env(repo, g, extra, true).await
}

/// A run on `g`, with `GITHUB_SERVER_URL` naming it (`named`) or not (a laptop, a runner other
/// than Actions).
async fn run_env<K: AsRef<str>, V: AsRef<str>>(repo: &TestRepo, g: &Ghes, extra: &[(K, V)], named: bool) -> Run {
    let yaml = job_yaml("ghesjob", "https://model.test/v1", false);
    let ca = g.pki.ca_pem().display().to_string();
    let p = g.proxy.url.as_str();
    let mut env = vec![
        ("HTTPS_PROXY", p),
        ("https_proxy", p),
        ("NO_PROXY", ""),
        ("no_proxy", ""),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_SERVER_URL", "https://ghes.test"),
        ("SSL_CERT_FILE", ca.as_str()),
        ("GIT_SSL_CAINFO", ""),
    ];
    env.retain(|(k, _)| named || *k != "GITHUB_SERVER_URL");
    env.extend(extra.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
    run_job_env(repo, &yaml, &env).await
}

/// A repository on the server, whose API is the GitHub App's stand-in.
async fn as_app() -> (TestRepo, MockGithubApp, Ghes) {
    let repo = broken_repo();
    let app = MockGithubApp::start(&["acme"]).await;
    let g = ghes(&repo, &app.url, Mode::Auth).await;
    (repo, app, g)
}

/// The App's environment without `GITHUB_API_URL`: the API is the server's, or none.
fn app_env(app: &MockGithubApp) -> Vec<(String, String)> {
    app.env(&key_path(true)).into_iter().filter(|(k, _)| k != "GITHUB_API_URL").collect()
}

/// Every host the run asked the proxy for is the model's or the server's.
fn assert_only_own_hosts(g: &Ghes) {
    let seen = g.proxy.seen();
    assert!(g.proxy.saw_host("ghes.test"), "the server was never reached: {seen:?}");
    assert!(!g.proxy.saw_host("api.github.com"), "a request went to api.github.com: {seen:?}");
    let own = |s: &String| s == "CONNECT ghes.test:443" || s == "CONNECT model.test:443";
    assert!(seen.iter().all(own), "a request to another host: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghes_token_goes_to_the_servers_own_api_never_to_api_github_com() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    let auth = format!("Bearer {TOKEN}");
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .and(header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .expect(1)
        .mount(&gh)
        .await;
    let pr = json!({"number": 7, "html_url": "https://ghes.test/acme/app/pull/7", "state": "open"});
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .and(header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr))
        .expect(1)
        .mount(&gh)
        .await;
    let g = ghes(&repo, &gh.uri(), Mode::Open).await;
    let run = run_on(&repo, &g, &[("GITHUB_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, 0, "{}\n{:?}\n{}", run.stderr, g.proxy.seen(), run.report()["errors"]);
    assert_only_own_hosts(&g);
    let report = run.report();
    assert_eq!(report["pr"]["number"], 7, "{report:#}");
    let sha = report["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(git(&g.bare, &["rev-parse", "refs/heads/hone/ghesjob"]), sha, "the push went to the server");
    run.assert_no_secret(TOKEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_apps_jwt_on_ghes_goes_to_the_servers_own_api() {
    let (repo, app, g) = as_app().await;
    let run = run_env(&repo, &g, &app_env(&app), true).await;
    assert_eq!(run.code, 0, "{}\n{:?}\n{}", run.stderr, g.proxy.seen(), run.report()["errors"]);
    assert_only_own_hosts(&g);
    assert_eq!(app.seen_at("/repos/acme/app/installation").len(), 1, "the JWT went to the server's API");
    assert_eq!(run.report()["pr"]["operation"], "created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_coms_api_named_for_a_ghes_token_stops_the_run_naming_the_variable() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    let g = ghes(&repo, &gh.uri(), Mode::Open).await;
    let extra = [("GITHUB_TOKEN", TOKEN), ("GITHUB_API_URL", "https://api.github.com")];
    let run = run_on(&repo, &g, &extra).await;
    assert!(!g.proxy.saw_host("api.github.com"), "{:?}", g.proxy.seen());
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("GITHUB_API_URL") && errors.contains("ghes.test/api/v3"), "{errors}\n{}", run.stderr);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(gh.received_requests().await.unwrap().is_empty());
    assert!(!g.proxy.saw_host("model.test"), "it stopped before any work: {:?}", g.proxy.seen());
    run.assert_no_secret(TOKEN);
}

/// Nothing names the server: the repository's URL is on `ghes.test`, but the token and API are
/// github.com's. The push goes to the repository (this server takes it without a token, which is
/// not offered to it); no request goes to api.github.com about a repository of the same name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_on_a_server_the_environment_does_not_name_gets_no_github_com_request() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    let g = ghes(&repo, &gh.uri(), Mode::Open).await;
    let run = run_env(&repo, &g, &[("GITHUB_TOKEN", TOKEN)], false).await;
    assert!(!g.proxy.saw_host("api.github.com"), "{:?}", g.proxy.seen());
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("ghes.test") && errors.contains("GITHUB_SERVER_URL"), "{errors}\n{}", run.stderr);
    assert_ne!(run.code, 0, "no PR was opened: {}", run.stdout);
    run.assert_no_secret(TOKEN);
}

/// The same with a GitHub App: its JWT goes nowhere, and the run stops before any work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_apps_jwt_never_goes_to_github_com_for_a_repository_on_another_server() {
    let (repo, app, g) = as_app().await;
    let run = run_env(&repo, &g, &app_env(&app), false).await;
    assert!(!g.proxy.saw_host("api.github.com"), "{:?}", g.proxy.seen());
    assert!(!g.proxy.saw_host("model.test"), "it stopped before any work: {:?}", g.proxy.seen());
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.report()["errors"].to_string().contains("GITHUB_SERVER_URL"), "{}", run.stderr);
    assert!(app.seen().is_empty(), "the App's stand-in saw nothing");
}
