//! One fleet across forges: a GitLab project (`group/sub/app` on the GitLab stand-in) and a
//! GitHub repository (a git server over TLS that demands `x-access-token` and the token, as
//! GitHub does, beside a mock REST API). Each gets its own forge's token, pushed over HTTPS, and
//! its own kind of request; neither token reaches the other server.

use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_gitlab::{Auth, Kind, MockGitLab, Token};
use crate::common::*;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const GH_TOKEN: &str = "ghp_fleetcanary0123456789abcdef";
const GL_TOKEN: &str = "glpat-fleetcanary0123456789";

/// The mock GitHub API for `acme/web`: no open PR, one PR created from `hone/mixed`.
async fn github_api() -> MockServer {
    let gh = MockServer::start().await;
    let auth = format!("Bearer {GH_TOKEN}");
    Mock::given(method("GET"))
        .and(path("/repos/acme/web/pulls"))
        .and(header("authorization", auth.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&gh)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/web/pulls"))
        .and(header("authorization", auth.as_str()))
        .and(body_partial_json(json!({"head": "hone/mixed", "base": "main"})))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"number": 4, "html_url": "https://github.example/acme/web/pull/4"})),
        )
        .expect(1)
        .mount(&gh)
        .await;
    gh
}

fn entry<'a>(report: &'a Value, id_part: &str) -> &'a Value {
    let repos = report["repos"].as_array().unwrap();
    repos.iter().find(|r| r["id"].as_str().unwrap().contains(id_part)).unwrap_or_else(|| panic!("{report:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_fleet_opens_a_merge_request_on_gitlab_and_a_pull_request_on_github() {
    let dir = tempfile::tempdir().unwrap();
    let (gl_src, gh_src) = (broken_repo(), broken_repo());
    let gl = MockGitLab::start(&dir.path().join("gitlab")).await;
    gl.add_project("group/sub/app", &gl_src.origin);
    gl.add_token(GL_TOKEN, Token { kind: Kind::Group, scopes: &["api"], user: "", project: Some("group") });
    let github_root = dir.path().join("github");
    serve_copy_of(&github_root, "acme/web.git", &gh_src.origin);
    let github_git = GitHttp::start_tls(&github_root, Mode::GitHub(GH_TOKEN.into())).await;
    let api = github_api().await;

    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: mixed\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\npr: {{ enabled: true }}\nforge: {{ gitlab_url: \"{}\" }}\ngit: {{ token_env: GL_BOT }}\n",
        gl.base
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let fleet = dir.path().join("fleet.yaml");
    let (gl_url, gh_url) = (gl.git_url("group/sub/app"), format!("{}/acme/web.git", github_git.base));
    let text = format!("version: 1\njob: job.yaml\nrepos:\n  - url: {gl_url}\n  - url: {gh_url}\nworkspace: ws\n");
    std::fs::write(&fleet, text).unwrap();

    let ca = test_ca().display().to_string();
    let api_uri = api.uri();
    let env = [
        ("GITHUB_TOKEN", GH_TOKEN),
        ("GITHUB_API_URL", api_uri.as_str()),
        ("GITHUB_SERVER_URL", github_git.base.as_str()),
        // The job's token variable is its own forge's (GitLab, which the spec names): the GitHub
        // target still gets GITHUB_TOKEN, never GL_BOT's token.
        ("GL_BOT", GL_TOKEN),
        ("SSL_CERT_FILE", ca.as_str()),
        ("GIT_SSL_CAINFO", ca.as_str()),
    ];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let text = std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(entry(&report, "app")["status"], "pr_created", "{report:#}");
    assert_eq!(entry(&report, "web")["status"], "pr_created", "{report:#}");

    let mrs = gl.mrs("group/sub/app");
    assert_eq!(mrs.len(), 1, "{mrs:#?}");
    assert_eq!(mrs[0]["source_branch"], "hone/mixed");
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
    api.verify().await;
    // Each server saw its own token only, as its forge takes it.
    assert!(gl.git_credentials().iter().all(|(_, t)| t == GL_TOKEN) && !gl.git_credentials().is_empty());
    assert!(gl.requests().iter().all(|r| !format!("{:?}", r.auth).contains(GH_TOKEN)));
    let github_creds = github_git.credentials();
    assert!(github_creds.contains(&format!("x-access-token:{GH_TOKEN}")), "{github_creds:?}");
    assert!(github_creds.iter().all(|c| !c.contains(GL_TOKEN)), "{github_creds:?}");
    let pushed = |bare: &std::path::Path| repo::git(bare, &["rev-parse", "refs/heads/hone/mixed"]);
    assert!(!pushed(&gl.bare("group/sub/app")).is_empty());
    assert!(!pushed(&github_root.join("acme/web.git")).is_empty());
    assert!(
        matches!(gl.requests().iter().find(|r| r.path.contains("merge_requests")).map(|r| &r.auth), Some(Auth::PrivateToken(t)) if t == GL_TOKEN)
    );
    assert!(!run.stdout.contains(GH_TOKEN) && !run.stderr.contains(GL_TOKEN));
}
