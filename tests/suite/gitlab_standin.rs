//! The GitLab stand-in (`common::mock_gitlab`) behaves like GitLab: driven here with plain git and
//! reqwest, not with hone, so that hone's GitLab tests rest on a stand-in that is itself proven.
//! Git over HTTPS here; the API in `gitlab_standin/api.rs`. Also the GitHub-style git server mode
//! of `common::git_http`.

mod api;

use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
use crate::common::repo::{TestRepo, git as git_sync};
use std::path::Path;
use std::time::Duration;

pub struct Lab {
    pub gl: MockGitLab,
    pub repo: TestRepo,
    _dir: tempfile::TempDir,
}

/// An instance with project `acme/app` made from a one-commit repository on `main`.
pub async fn lab() -> Lab {
    let repo = TestRepo::new(&[("README.md", "hello\n")]);
    let dir = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(dir.path()).await;
    gl.add_project("acme/app", &repo.path);
    Lab { gl, repo, _dir: dir }
}

pub fn personal(scopes: &'static [&'static str], user: &'static str) -> Token<'static> {
    Token { kind: Kind::Personal, scopes, user, project: None }
}

/// `https://user:token@localhost:PORT/path.git`.
pub fn url_as(base: &str, user: &str, token: &str, path: &str) -> String {
    base.replacen("https://", &format!("https://{user}:{token}@"), 1) + &format!("/{path}.git")
}

/// Run git in `dir` against the test servers (their CA trusted, no credential helper, no
/// prompt); whether it succeeded, and its stderr. The CA goes in `GIT_SSL_CAINFO` too: that
/// variable, when the environment sets it, wins over `-c http.sslCAInfo`.
pub async fn git(dir: &Path, args: &[&str]) -> (bool, String) {
    let ca = format!("http.sslCAInfo={}", test_ca().display());
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(["-c", &ca, "-c", "credential.helper=", "-c", "protocol.version=2"])
        .args(args)
        .current_dir(dir)
        .env("GIT_SSL_CAINFO", test_ca())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .kill_on_drop(true);
    let out =
        tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("git finishes").expect("git runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A new commit on a new branch `name` of the working repository; its id.
pub fn commit_branch(repo: &TestRepo, name: &str) -> String {
    repo.git(&["checkout", "-q", "-b", name]);
    std::fs::write(repo.path.join(format!("{}.txt", name.replace('/', "-"))), "change\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", name]);
    repo.git(&["rev-parse", "HEAD"])
}

fn branch_in(bare: &Path, branch: &str) -> String {
    git_sync(bare, &["rev-parse", &format!("refs/heads/{branch}")])
}

#[tokio::test]
async fn git_push_needs_a_write_scope_and_fetch_a_read_scope() {
    let lab = lab().await;
    lab.gl.add_token("glpat-write", personal(&["write_repository"], "dev"));
    lab.gl.add_token("glpat-read", personal(&["read_repository"], "dev"));
    lab.gl.add_token("glpat-registry", personal(&["read_registry"], "dev"));
    let head = commit_branch(&lab.repo, "feature");
    let read = url_as(&lab.gl.base, "oauth2", "glpat-read", "acme/app");
    let write = url_as(&lab.gl.base, "anything", "glpat-write", "acme/app");

    let (ok, err) = git(&lab.repo.path, &["push", &read, "feature"]).await;
    assert!(!ok && err.contains("You are not allowed to upload code."), "a read token pushed: {err}");
    let (ok, err) = git(&lab.repo.path, &["ls-remote", &read]).await;
    assert!(ok, "a read token cannot fetch: {err}");
    let registry = url_as(&lab.gl.base, "oauth2", "glpat-registry", "acme/app");
    let (ok, err) = git(&lab.repo.path, &["ls-remote", &registry]).await;
    assert!(!ok && err.contains("You are not allowed to download code."), "{err}");
    let (ok, err) = git(&lab.repo.path, &["push", &write, "feature"]).await;
    assert!(ok, "a write token (any user name) cannot push: {err}");
    assert_eq!(branch_in(&lab.gl.bare("acme/app"), "feature"), head);

    let (ok, _) = git(&lab.repo.path, &["ls-remote", &lab.gl.git_url("acme/app")]).await;
    assert!(!ok, "fetched without credentials");
    let (ok, _) = git(&lab.repo.path, &["ls-remote", &url_as(&lab.gl.base, "oauth2", "glpat-nope", "acme/app")]).await;
    assert!(!ok, "fetched with an unknown token");
    let challenged = lab.gl.requests().iter().filter(|r| r.status == 401).count();
    assert!(challenged >= 2, "no 401 for missing or unknown credentials");
    let creds = lab.gl.git_credentials();
    assert!(creds.contains(&("anything".into(), "glpat-write".into())), "{creds:?}");
    assert!(lab.gl.violations().is_empty(), "{:#?}", lab.gl.violations());
}

#[tokio::test]
async fn job_token_pushes_only_as_gitlab_ci_token_and_only_when_the_project_allows() {
    let lab = lab().await;
    lab.gl.add_token("job-1", Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });
    let head = commit_branch(&lab.repo, "fix");
    let job = url_as(&lab.gl.base, "gitlab-ci-token", "job-1", "acme/app");

    let (ok, err) = git(&lab.repo.path, &["ls-remote", &job]).await;
    assert!(ok, "a job token cannot fetch its project: {err}");
    let (ok, err) = git(&lab.repo.path, &["push", &job, "fix"]).await;
    assert!(!ok && err.contains("You are not allowed to push code to this project."), "{err}");
    let (ok, _) = git(&lab.repo.path, &["ls-remote", &url_as(&lab.gl.base, "oauth2", "job-1", "acme/app")]).await;
    assert!(!ok, "a job token worked with another user name than gitlab-ci-token");

    lab.gl.allow_job_token_push("acme/app", true);
    let (ok, err) = git(&lab.repo.path, &["push", &job, "fix"]).await;
    assert!(ok, "a job token cannot push though the project allows it: {err}");
    assert_eq!(branch_in(&lab.gl.bare("acme/app"), "fix"), head);

    lab.gl.add_project("acme/other", &lab.repo.path);
    let other = url_as(&lab.gl.base, "gitlab-ci-token", "job-1", "acme/other");
    let (ok, err) = git(&lab.repo.path, &["ls-remote", &other]).await;
    assert!(!ok && err.contains("Authentication by CI/CD job token not allowed from app to other."), "{err}");
}

#[tokio::test]
async fn project_token_reaches_only_its_own_project() {
    let lab = lab().await;
    lab.gl.add_project("acme/other", &lab.repo.path);
    let bot = lab
        .gl
        .add_token("glpat-proj", Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    assert!(bot.starts_with("project_1_bot_"), "{bot}");
    let (ok, err) =
        git(&lab.repo.path, &["ls-remote", &url_as(&lab.gl.base, "oauth2", "glpat-proj", "acme/app")]).await;
    assert!(ok, "{err}");
    let (ok, _) =
        git(&lab.repo.path, &["ls-remote", &url_as(&lab.gl.base, "oauth2", "glpat-proj", "acme/other")]).await;
    assert!(!ok, "a project token fetched another project");
    assert_eq!(lab.gl.requests().last().unwrap().status, 401, "GitLab fails the authentication itself");
}

#[tokio::test]
async fn github_mode_demands_x_access_token_and_the_token() {
    let repo = TestRepo::new(&[("README.md", "hello\n")]);
    let root = tempfile::tempdir().unwrap();
    serve_copy_of(root.path(), "acme/app.git", &repo.path);
    let server = GitHttp::start_tls(root.path(), Mode::GitHub("ghs_right".into())).await;
    let head = commit_branch(&repo, "hone/x");

    let (ok, err) =
        git(&repo.path, &["push", &url_as(&server.base, "oauth2", "ghs_right", "acme/app"), "hone/x"]).await;
    assert!(!ok && err.contains("Invalid username or token"), "another user name was taken: {err}");
    let (ok, err) =
        git(&repo.path, &["push", &url_as(&server.base, "x-access-token", "ghs_wrong", "acme/app"), "hone/x"]).await;
    assert!(!ok && err.contains("403"), "a wrong token was taken: {err}");
    let (ok, err) =
        git(&repo.path, &["push", &url_as(&server.base, "x-access-token", "ghs_right", "acme/app"), "hone/x"]).await;
    assert!(ok, "{err}");
    assert_eq!(branch_in(&root.path().join("acme/app.git"), "hone/x"), head);
    assert!(server.credentials().contains(&"x-access-token:ghs_right".to_string()));
}
