//! GitLab as the forge, against a GitLab stand-in (`tests/common/mock_gitlab`) that serves its
//! REST API and git smart-HTTP on one HTTPS address, checks every request against GitLab's
//! published API description, and demands the credentials GitLab would.

use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Auth, Kind, MockGitLab, Token};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};

const PAT: &str = "glpat-canary0123456789abcdef";
const JOB: &str = "glcbt-jobcanary0123456789";

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

/// A GitLab with `acme/app` (made from `repo`'s origin), whose remote now points there.
async fn gitlab_for(repo: &TestRepo) -> (MockGitLab, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(root.path()).await;
    gl.add_project("acme/app", &repo.origin);
    repo.git(&["config", "remote.origin.url", &gl.git_url("acme/app")]);
    (gl, root)
}

/// A run on GitLab outside GitLab CI: the spec names the server, the token is `GITLAB_TOKEN`
/// unless `env` says otherwise, and the test CA is trusted by hone and by git.
async fn run_gitlab(repo: &TestRepo, gl: &MockGitLab, pr: &str, env: &[(&str, &str)]) -> Run {
    run_gitlab_args(repo, gl, pr, &[], env).await
}

async fn run_gitlab_args(repo: &TestRepo, gl: &MockGitLab, pr: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let model = fixing_model().await;
    let yaml =
        format!("{}forge: {{ gitlab_url: \"{}\" }}\npr:\n{pr}", job_yaml("gljob", &model.base_url, false), gl.base);
    let ca = test_ca().display().to_string();
    let mut all = vec![("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    all.extend_from_slice(env);
    run_job_with(repo, &yaml, args, &all).await
}

fn branch_on(gl: &MockGitLab, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")])
        .current_dir(gl.bare("acme/app"))
        .output()
        .unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn assert_clean(run: &Run, gl: &MockGitLab, secret: &str) {
    assert!(gl.violations().is_empty(), "requests GitLab's API does not describe: {:#?}", gl.violations());
    run.assert_no_secret(secret);
}

/// The first run pushes and opens the merge request with labels, assignees and reviewers (as
/// ids), the second updates the same one; the token went to git as GitLab wants it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_opens_the_merge_request_and_the_next_updates_it() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    let dev = gl.add_user("dev");
    gl.add_token(
        PAT,
        Token { kind: Kind::Project, scopes: &["api", "write_repository"], user: "", project: Some("acme/app") },
    );
    let pr = "  labels: [automated]\n  reviewers: [dev]\n  assignees: [dev, nobody]\n";
    let run = run_gitlab(&repo, &gl, pr, &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["pr"]["forge"], "gitlab", "{}", report["pr"]);
    assert_eq!(report["pr"]["operation"], "created", "{}", report["pr"]);
    assert!(
        report["warnings"].to_string().contains("`nobody`"),
        "an unknown user is a warning: {}",
        report["warnings"]
    );
    let head = branch_on(&gl, "hone/gljob").expect("the branch was pushed to GitLab");
    let mrs = gl.mrs("acme/app");
    assert_eq!(mrs.len(), 1, "{mrs:#?}");
    let mr = &mrs[0];
    assert_eq!((mr["source_branch"].as_str(), mr["target_branch"].as_str()), (Some("hone/gljob"), Some("main")));
    assert_eq!(mr["sha"].as_str(), Some(head.as_str()));
    assert_eq!(mr["labels"], json!(["automated"]));
    assert_eq!(mr["reviewers"][0]["id"].as_u64(), Some(dev), "{mr:#}");
    assert_eq!(mr["assignees"][0]["id"].as_u64(), Some(dev), "{mr:#}");
    assert_eq!(mr["draft"], false);
    assert_eq!(report["pr"]["number"], mr["iid"]);
    assert!(gl.git_credentials().iter().all(|(u, t)| u == "oauth2" && t == PAT), "{:?}", gl.git_credentials());
    assert!(!gl.git_credentials().is_empty(), "git never authenticated: the push proves nothing");
    assert_clean(&run, &gl, PAT);

    let again = run_gitlab(&repo, &gl, pr, &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.report()["pr"]["operation"], "updated");
    assert_eq!(gl.mrs("acme/app").len(), 1, "updated, never duplicated");
    assert_clean(&again, &gl, PAT);
}

/// In GitLab CI with only the job token: the push goes through where the project allows it, and
/// opening the merge request fails saying the job token cannot, and what to set instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_token_pushes_where_allowed_and_says_it_cannot_open_merge_requests() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(JOB, Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });
    // As GitLab's runner clones: the job token in the remote's URL.
    let with_token = gl.git_url("acme/app").replace("https://", &format!("https://gitlab-ci-token:{JOB}@"));
    repo.git(&["config", "remote.origin.url", &with_token]);
    let api = format!("{}/api/v4", gl.base);
    let ci = [
        ("GITLAB_CI", "true"),
        ("CI_SERVER_URL", gl.base.as_str()),
        ("CI_API_V4_URL", api.as_str()),
        ("CI_PROJECT_PATH", "acme/app"),
        ("CI_JOB_TOKEN", JOB),
    ];
    let refused = run_gitlab(&repo, &gl, "  enabled: true\n", &ci).await;
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(refused.report()["errors"].to_string().contains("push"), "{}", refused.report()["errors"]);
    assert_eq!(branch_on(&gl, "hone/gljob"), None);

    gl.allow_job_token_push("acme/app", true);
    let run = run_gitlab(&repo, &gl, "  enabled: true\n", &ci).await;
    assert!(branch_on(&gl, "hone/gljob").is_some(), "the job token may push here: {}", run.stderr);
    assert!(gl.git_credentials().iter().any(|(u, t)| u == "gitlab-ci-token" && t == JOB), "{:?}", gl.git_credentials());
    assert_eq!(run.code, 3, "the merge request could not be opened: {}", run.stderr);
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("CI_JOB_TOKEN") && errors.contains("GITLAB_TOKEN"), "{errors}");
    assert!(gl.mrs("acme/app").is_empty());
    assert_clean(&run, &gl, JOB);

    // `pr.enabled: auto`: the push is the result, and the report says why there is no merge
    // request; GitLab's API is not asked to write anything.
    let writes =
        |gl: &MockGitLab| gl.requests().iter().filter(|r| r.method != "GET" && r.path.starts_with("/api/")).count();
    let before = writes(&gl);
    let auto = run_gitlab(&repo, &gl, "  enabled: auto\n", &ci).await;
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    assert_eq!(auto.report()["pr"]["pushed"], true);
    assert!(
        auto.report()["warnings"].to_string().contains("CI_JOB_TOKEN cannot write a merge request"),
        "{}",
        auto.report()
    );
    assert_eq!(writes(&gl), before);
    assert_clean(&auto, &gl, JOB);
}

/// A token that can push but lacks the `api` scope: the error names the scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_the_api_scope_is_told_which_scope_it_lacks() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Personal, scopes: &["write_repository"], user: "dev", project: None });
    let run = run_gitlab(&repo, &gl, "  enabled: true\n", &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(branch_on(&gl, "hone/gljob").is_some(), "write_repository is enough to push");
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("lacks a scope (`api` or `read_api`)") && errors.contains("GITLAB_TOKEN"), "{errors}");
    assert_clean(&run, &gl, PAT);
}

/// Autofix on a merge request: push the fix to its source branch and keep one note, written by
/// the token's own user; a planted note with the marker by someone else is left alone. A merge
/// request from a fork is skipped, nothing pushed or said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_pushes_to_the_merge_requests_branch_keeps_one_note_and_refuses_forks() {
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let (gl, _root) = gitlab_for(&repo).await;
    let bot = gl.add_token(PAT, Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    let iid = gl.add_mr("acme/app", "feature/x", "main", "Feature", "dev", None);
    gl.add_note("acme/app", iid, "mallory", "<!-- hone:autofix job=gljob -->\nplanted");
    let before = branch_on(&gl, "feature/x").unwrap();
    let number = iid.to_string();
    let run = run_gitlab_args(&repo, &gl, "  enabled: true\n", &["--pr", &number], &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after = branch_on(&gl, "feature/x").unwrap();
    assert_ne!(before, after, "the fix was pushed to the merge request's branch");
    let notes = gl.notes("acme/app", iid);
    let mine: Vec<&Value> = notes.iter().filter(|n| n["author"]["username"] == bot.as_str()).collect();
    assert_eq!(mine.len(), 1, "{notes:#?}");
    assert!(mine[0]["body"].as_str().unwrap().contains("hone pushed a fix"), "{notes:#?}");
    assert!(notes.iter().any(|n| n["body"].as_str().unwrap_or("").ends_with("planted")), "another's note is untouched");
    assert_eq!(run.report()["pr"]["forge"], "gitlab");
    assert_clean(&run, &gl, PAT);

    // The head is hone's now: the next run skips, and the note is still the one note.
    let again = run_gitlab_args(&repo, &gl, "  enabled: true\n", &["--pr", &number], &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(again.report()["status"], "skipped", "{}", again.stderr);
    assert_eq!(gl.notes("acme/app", iid).len(), notes.len());

    gl.fork("acme/app", "someone/app");
    let fork_iid = gl.add_mr("acme/app", "feature/x", "main", "From a fork", "someone", Some("someone/app"));
    let fork_number = fork_iid.to_string();
    let skipped =
        run_gitlab_args(&repo, &gl, "  enabled: true\n", &["--pr", &fork_number], &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    assert_eq!(skipped.report()["status"], "skipped");
    assert!(skipped.report().to_string().contains("fork"), "{}", skipped.report());
    assert!(gl.notes("acme/app", fork_iid).is_empty());
    assert_eq!(branch_on(&gl, "feature/x"), Some(after), "nothing was pushed for the fork's merge request");
}

/// GitLab's 429 with `Retry-After` is waited out and retried, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_requests_are_retried() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Personal, scopes: &["api"], user: "dev", project: None });
    gl.rate_limit_next(2);
    let run = run_gitlab(&repo, &gl, "  enabled: true\n", &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(gl.throttled(), 2);
    assert_eq!(run.report()["pr"]["retries"], 2);
    assert_eq!(gl.mrs("acme/app").len(), 1);
}

/// A dry run calls no API and pushes nothing, as on GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_calls_nothing() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Personal, scopes: &["api"], user: "dev", project: None });
    let model = fixing_model().await;
    let yaml = format!("{}forge: {{ gitlab_url: \"{}\" }}\n", job_yaml("gljob", &model.base_url, false), gl.base);
    let run = run_job_with(&repo, &yaml, &["--dry-run"], &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(gl.requests().is_empty(), "{:?}", gl.requests());
    assert!(run.report()["pr"]["notice"].as_str().unwrap_or("").contains("no GitLab API"));
    assert!(!run.read("pr.md").is_empty());
}

/// The token goes to the GitLab server only: a remote on another HTTPS server (here, another
/// port of this machine) never sees it, and the run says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_never_goes_to_a_remote_on_another_server() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Personal, scopes: &["api"], user: "dev", project: None });
    let other_root = tempfile::tempdir().unwrap();
    let other = MockGitLab::start(other_root.path()).await;
    other.add_project("acme/app", &repo.origin);
    repo.git(&["config", "remote.origin.url", &other.git_url("acme/app")]);
    let run = run_gitlab(&repo, &gl, "  enabled: true\n", &[("GITLAB_TOKEN", PAT)]).await;
    assert_ne!(run.code, 0, "{}\n{:#?}\n{}", run.stderr, other.requests(), run.report());
    assert!(!other.requests().is_empty(), "git never reached the other server: the test proves nothing");
    assert!(
        other.requests().iter().all(|r| !matches!(&r.auth, Auth::Basic(_, t) if t == PAT)),
        "the token reached another server"
    );
    assert!(run.report()["errors"].to_string().contains("not offered"), "{}", run.report()["errors"]);
}

/// `on_failure: draft`: the unverified work goes up as a draft merge request (GitLab's `Draft:`
/// title), and the run still fails; the next run that verifies makes it ready (no prefix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_work_is_a_draft_merge_request_until_a_run_verifies() {
    let repo = broken_repo();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("I could not finish."), false);
    let yaml = format!(
        "{}forge: {{ gitlab_url: \"{}\" }}\npr:\n  on_failure: draft\n",
        job_yaml("gljob", &model.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0"),
        gl.base
    );
    let ca = test_ca().display().to_string();
    let env = [("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str()), ("GITLAB_TOKEN", PAT)];
    let failed = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(failed.code, 1, "a draft does not make a failed run a success: {}", failed.stderr);
    let mrs = gl.mrs("acme/app");
    assert_eq!(mrs.len(), 1, "{mrs:#?}");
    assert_eq!(mrs[0]["draft"], true, "{:#}", mrs[0]);
    assert!(mrs[0]["title"].as_str().unwrap().starts_with("Draft: [checks failing] "), "{}", mrs[0]["title"]);

    let fixed = run_gitlab(&repo, &gl, "  on_failure: draft\n", &[("GITLAB_TOKEN", PAT)]).await;
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    let mrs = gl.mrs("acme/app");
    assert_eq!((mrs.len(), &mrs[0]["draft"]), (1, &json!(false)), "{mrs:#?}");
    assert_clean(&fixed, &gl, PAT);
}

/// In a merge request pipeline, autofix takes the merge request from `CI_MERGE_REQUEST_IID`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_request_pipeline_fixes_its_own_merge_request() {
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let (gl, _root) = gitlab_for(&repo).await;
    gl.add_token(PAT, Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    let iid = gl.add_mr("acme/app", "feature/x", "main", "Feature", "dev", None);
    let before = branch_on(&gl, "feature/x").unwrap();
    let (api, number) = (format!("{}/api/v4", gl.base), iid.to_string());
    let ci = [
        ("GITLAB_CI", "true"),
        ("CI_SERVER_URL", gl.base.as_str()),
        ("CI_API_V4_URL", api.as_str()),
        ("CI_PROJECT_PATH", "acme/app"),
        ("CI_MERGE_REQUEST_IID", number.as_str()),
        ("GITLAB_TOKEN", PAT),
    ];
    let run = run_gitlab(&repo, &gl, "  enabled: auto\n", &ci).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["pr"]["number"], iid);
    assert_ne!(branch_on(&gl, "feature/x").unwrap(), before, "the fix went to the merge request's branch");
    assert_eq!(gl.notes("acme/app", iid).len(), 1);
    assert!(gl.mrs("acme/app").len() == 1, "no new merge request was opened");
    assert_clean(&run, &gl, PAT);
}
