//! Behind a corporate proxy with its own CA: the model, the GitHub API and git all go through
//! `HTTPS_PROXY` and trust the CA `SSL_CERT_FILE` names (a CA the test makes); without that CA
//! the run stops with a TLS error that names the setting; `NO_PROXY` and this machine's own
//! addresses stay off the proxy. The host names resolve only inside the test's proxy, so a
//! stand-in that answers was reached through it.

use crate::common::connect_proxy::{ConnectProxy, Pki, Task, tls_front};
use crate::common::git_http::{GitHttp, Mode, serve_copy_of};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use ::hone::net::{Settings, builder_with, untrusted_certificate};
use serde_json::json;
use std::net::SocketAddr;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_proxycanary0123456789abcdef";

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    rest.split('/').next().unwrap().parse().unwrap()
}

/// The GitHub stand-in: no open PR, and PR #7 made for `hone/proxyjob` (`created` times).
async fn github(created: u64) -> MockServer {
    let gh = MockServer::start().await;
    let auth = format!("Bearer {TOKEN}");
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .and(wiremock::matchers::header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&gh)
        .await;
    let pr = json!({"number": 7, "html_url": "https://git.test/acme/app/pull/7", "state": "open"});
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .and(wiremock::matchers::header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr))
        .expect(created)
        .mount(&gh)
        .await;
    gh
}

/// Everything a proxied run talks to: the model, GitHub's API and the git server, each behind
/// TLS with the test CA's certificate, and the proxy that resolves their names.
struct Network {
    pki: Pki,
    proxy: ConnectProxy,
    model: MockModel,
    gh: MockServer,
    bare: std::path::PathBuf,
    _git: GitHttp,
    _served: tempfile::TempDir,
    _fronts: Vec<Task>,
}

async fn network(repo: &TestRepo, prs: u64) -> Network {
    let pki = Pki::new(&["model.test", "api.test", "git.test"]);
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let gh = github(prs).await;
    let served = tempfile::tempdir().unwrap();
    let bare = serve_copy_of(served.path(), "acme/app.git", &repo.origin);
    let git = GitHttp::start(served.path(), Mode::Open).await;
    let mut routes = Vec::new();
    let mut fronts = Vec::new();
    for (name, upstream) in
        [("model.test:443", &model.base_url), ("api.test:443", &gh.uri()), ("git.test:443", &git.base)]
    {
        let (front, task) = tls_front(&pki, addr_of(upstream)).await;
        routes.push((name, front));
        fronts.push(task);
    }
    let proxy = ConnectProxy::start(&routes).await;
    repo.git(&["config", "remote.origin.url", "https://git.test/acme/app.git"]);
    Network { pki, proxy, model, gh, bare, _git: git, _served: served, _fronts: fronts }
}

/// The run's environment: the proxy in every spelling (a CI's own `https_proxy` or `NO_PROXY`
/// must not steer the test), the forge at `git.test` and `api.test`, and `ca` as the bundle.
async fn run(repo: &TestRepo, net: &Network, ca: Option<&str>, no_proxy: &str) -> Run {
    let yaml = job_yaml("proxyjob", "https://model.test/v1", false);
    let p = net.proxy.url.as_str();
    let mut env = vec![
        ("HTTPS_PROXY", p),
        ("https_proxy", p),
        ("NO_PROXY", no_proxy),
        ("no_proxy", no_proxy),
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_API_URL", "https://api.test"),
        ("GITHUB_SERVER_URL", "https://git.test"),
        // A machine's own `GIT_SSL_CAINFO` (many set it to the system bundle) would win over the
        // bundle hone hands git: blank is unset.
        ("GIT_SSL_CAINFO", ""),
    ];
    if let Some(ca) = ca {
        env.push(("SSL_CERT_FILE", ca));
    }
    run_job_env(repo, &yaml, &env).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_the_api_and_git_go_through_the_proxy_and_trust_its_ca() {
    let repo = broken_repo();
    let net = network(&repo, 1).await;
    let ca = net.pki.ca_pem().display().to_string();
    let run = run(&repo, &net, Some(&ca), "").await;
    assert_eq!(run.code, 0, "{}\n{:?}\n{}", run.stderr, net.proxy.seen(), run.report()["errors"]);
    let report = run.report();
    assert_eq!(report["pr"]["number"], 7, "{report:#}");
    let sha = report["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(crate::common::repo::git(&net.bare, &["rev-parse", "refs/heads/hone/proxyjob"]), sha, "git pushed");
    for host in ["model.test", "api.test", "git.test"] {
        assert!(net.proxy.saw_host(host), "the proxy never saw {host}: {:?}", net.proxy.seen());
    }
    assert!(
        net.proxy.seen().iter().all(|s| s.starts_with("CONNECT ")),
        "all https, all tunnelled: {:?}",
        net.proxy.seen()
    );
    assert!(net.model.requests().len() >= 2, "the model answered through the proxy");
    assert!(!net.gh.received_requests().await.unwrap().is_empty());
    run.assert_no_secret(TOKEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_proxys_ca_the_run_stops_with_a_tls_error_naming_ssl_cert_file() {
    let repo = broken_repo();
    let net = network(&repo, 0).await;
    // Another CA than the one that signed the servers' certificate: trusted, but not theirs.
    let other = Pki::new(&["elsewhere.test"]);
    let ca = other.ca_pem().display().to_string();
    let started = std::time::Instant::now();
    let run = run(&repo, &net, Some(&ca), "").await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(net.proxy.saw_host("model.test"), "the model was tried, through the proxy: {:?}", net.proxy.seen());
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("not trusted") && errors.contains("SSL_CERT_FILE"), "{errors}\n{}", run.stderr);
    assert!(
        run.stdout.contains("not trusted") && run.stdout.contains("SSL_CERT_FILE"),
        "the result line: {}",
        run.stdout
    );
    assert_eq!(net.model.requests().len(), 0, "no request got past TLS");
    // Not retried as if the network were down: a refused certificate is refused again.
    assert_eq!(net.proxy.seen().len(), 1, "{:?}", net.proxy.seen());
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "it took {:?}", started.elapsed());
}

/// hone's clients, built as hone builds them, against the proxy: `NO_PROXY` keeps a host off it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_keeps_a_host_off_the_proxy() {
    let pki = Pki::new(&["api.test"]);
    let upstream = MockServer::start().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(200)).mount(&upstream).await;
    let (front, _task) = tls_front(&pki, addr_of(&upstream.uri())).await;
    let proxy = ConnectProxy::start(&[("api.test:443", front)]).await;
    let settings = |no_proxy: &str| Settings {
        https_proxy: Some(proxy.url.clone()),
        no_proxy: no_proxy.to_string(),
        ca_file: Some(pki.ca_pem()),
        ..Settings::default()
    };
    let get = |s: Settings| async move {
        let client = builder_with("https://api.test", &s).unwrap().build().unwrap();
        client.get("https://api.test/x").send().await
    };
    assert_eq!(get(settings("other.test")).await.unwrap().status(), 200, "the control: through the proxy");
    assert_eq!(proxy.seen(), ["CONNECT api.test:443"]);
    for no_proxy in ["api.test", ".test", "*", "other.test, API.test"] {
        // Straight to `api.test`, which no resolver knows: it fails without the proxy seeing it.
        assert!(get(settings(no_proxy)).await.is_err(), "{no_proxy}");
        assert_eq!(proxy.seen().len(), 1, "NO_PROXY={no_proxy}: {:?}", proxy.seen());
    }
}

/// This machine's addresses never go through a proxy, even with every proxy variable set and no
/// `NO_PROXY` (a key may go there over plain http; through a proxy it would cross the network in
/// clear). A plain http host elsewhere does go through `HTTP_PROXY`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn this_machine_stays_off_the_proxy_and_plain_http_elsewhere_goes_through_it() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(200)).mount(&upstream).await;
    let proxy = ConnectProxy::start(&[("plain.test:80", addr_of(&upstream.uri()))]).await;
    let p = Some(proxy.url.clone());
    let s = Settings { https_proxy: p.clone(), http_proxy: p.clone(), all_proxy: p, ..Settings::default() };
    let port = addr_of(&upstream.uri()).port();
    for url in
        [format!("http://127.0.0.1:{port}/a"), format!("http://localhost:{port}/a"), "http://plain.test/b".into()]
    {
        let client = builder_with(&url, &s).unwrap().build().unwrap();
        assert_eq!(client.get(&url).send().await.unwrap().status(), 200, "{url}");
    }
    assert_eq!(proxy.seen(), ["GET plain.test:80"], "only the other host went through the proxy");
}

/// A certificate no trusted CA signed is an error hone recognises (and so can explain).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_certificate_is_recognised() {
    let (pki, other) = (Pki::new(&["api.test"]), Pki::new(&["other.test"]));
    let upstream = MockServer::start().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(200)).mount(&upstream).await;
    let (front, _task) = tls_front(&pki, addr_of(&upstream.uri())).await;
    let proxy = ConnectProxy::start(&[("api.test:443", front)]).await;
    let s = Settings { https_proxy: Some(proxy.url.clone()), ca_file: Some(other.ca_pem()), ..Settings::default() };
    let client = builder_with("https://api.test", &s).unwrap().build().unwrap();
    let e = client.get("https://api.test/").send().await.unwrap_err();
    let why = untrusted_certificate(&e).unwrap_or_else(|| panic!("not recognised: {e:?}"));
    assert!(why.contains("UnknownIssuer"), "{why}");
}
