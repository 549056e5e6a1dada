//! In a GitLab merge request pipeline the runner checks out the merge request's head, whose
//! author may have rewritten `AGENTS.md`: the instruction files come from the merge request's base
//! commit as GitLab names it (`diff_refs.base_sha`), fetched by hone when the checkout lacks it,
//! never from the head. The template's script runs as a runner would, with the real hone, against
//! the GitLab stand-in.

use super::gitlab_template::Job;
use super::instructions_pr::{BASE_AGENTS, assert_the_bases_guidance, first_user_message, fixing_model, pr_repo};
use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use serde_json::Value;

const PAT: &str = "glpat-instructions0123456789ab";
const JOB: &str = "glcbt-instructionsjob0123456789";

/// GitLab CI's variables for merge request `iid` of acme/app on `gl`, with the project token
/// (`GITLAB_TOKEN`), the test CA for hone and git, and the model's key.
fn ci_variables(gl: &MockGitLab, iid: u64) -> Vec<(String, String)> {
    let ca = test_ca().display().to_string();
    [
        ("GITLAB_CI", "true"),
        ("CI_PIPELINE_SOURCE", "merge_request_event"),
        ("CI_SERVER_URL", gl.base.as_str()),
        ("CI_API_V4_URL", &format!("{}/api/v4", gl.base)),
        ("CI_PROJECT_PATH", "acme/app"),
        ("CI_MERGE_REQUEST_IID", &iid.to_string()),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
        ("CI_JOB_TOKEN", JOB),
        ("GITLAB_TOKEN", PAT),
        ("SSL_CERT_FILE", &ca),
        ("GIT_SSL_CAINFO", &ca),
        ("HONE_TEST_API_KEY", KEY),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `repo` (a `pr_repo`) as acme/app on `gl` with merge request `feature/x` → `main` (its iid),
/// and the runner's checkout: the merge request's head, detached, its remote GitLab's with the
/// job token in the URL.
fn merge_request(gl: &MockGitLab, repo: &TestRepo, head: &str) -> u64 {
    gl.add_project("acme/app", &repo.origin);
    gl.add_token(PAT, Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    gl.add_token(JOB, Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });
    let iid = gl.add_mr("acme/app", "feature/x", "main", "Feature", "dev", None);
    let url = gl.git_url("acme/app").replace("https://", &format!("https://gitlab-ci-token:{JOB}@"));
    repo.git(&["config", "remote.origin.url", &url]);
    repo.git(&["checkout", "-q", "--detach", head]);
    iid
}

/// The spec on `main`: the mock model, GitLab at `gl`.
fn spec(model: &str, gl: &str) -> String {
    format!("{}forge: {{ gitlab_url: \"{gl}\" }}\n", job_yaml("gljob", model, false))
}

/// The template's job (merge request pipeline, hone from the image: the real binary) on the
/// checkout `repo` with `vars`; the report hone wrote.
async fn template_job(repo: &TestRepo, vars: Vec<(String, String)>) -> Value {
    let mut job = Job::new(&[("install", "image")]);
    job.program("hone", &format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_hone")));
    for (k, v) in &vars {
        job.set(k, v);
    }
    job.set("CI_PROJECT_DIR", &repo.path.display().to_string());
    let cwd = repo.path.clone();
    let out = tokio::task::spawn_blocking(move || job.run(&cwd)).await.unwrap();
    let text = std::fs::read_to_string(repo.path.join(".hone/reports/report.json")).unwrap_or_default();
    let report: Value = serde_json::from_str(&text).unwrap_or_default();
    assert!(out.status.success(), "the job failed: {} {}", report["errors"], String::from_utf8_lossy(&out.stderr));
    report
}

/// The template's merge request pipeline: the model is given the target branch's `AGENTS.md`
/// (the base commit's), never the one the merge request's head rewrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_request_pipeline_quotes_the_bases_agents_md_never_the_heads() {
    let root = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(root.path()).await;
    let model = fixing_model().await;
    let (repo, base, head) = pr_repo(&[".gitlab/hone/job.yaml"], &spec(&model.base_url, &gl.base));
    let iid = merge_request(&gl, &repo, &head);
    let report = template_job(&repo, ci_variables(&gl, iid)).await;
    assert_eq!(report["status"], "success", "{report}");
    assert_the_bases_guidance(&model.requests(), &report, &base);
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
}

/// GitLab names a base the checkout does not have (the target branch moved on after the runner
/// fetched): hone fetches it over HTTPS with its token, and quotes its `AGENTS.md`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_the_runners_checkout_lacks_is_fetched_over_https() {
    let model = fixing_model().await;
    let root = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(root.path()).await;
    let (repo, _, head) = pr_repo(&["job.yaml"], &spec(&model.base_url, &gl.base));
    let iid = merge_request(&gl, &repo, &head);
    // Someone merges a new AGENTS.md into main on GitLab; the runner's checkout predates it.
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["clone", "-q", "-b", "main", repo.origin.to_str().unwrap(), "c"]);
    let c = other.path().join("c");
    std::fs::write(c.join("AGENTS.md"), format!("{BASE_AGENTS}BASE-GUIDANCE-MOVED-ON\n")).unwrap();
    git(&c, &["commit", "-q", "-am", "new guidance on main"]);
    git(&c, &["push", "-q", gl.bare("acme/app").to_str().unwrap(), "main"]);
    let base = git(&c, &["rev-parse", "HEAD"]);
    let lacks = std::process::Command::new("git").args(["cat-file", "-e", &base]).current_dir(&repo.path).status();
    assert!(lacks.is_ok_and(|s| !s.success()), "the checkout must lack the base");
    let vars = ci_variables(&gl, iid);
    let env: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = run_job_with(&repo, &spec(&model.base_url, &gl.base), &[], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (report, reqs) = (run.report(), model.requests());
    assert_the_bases_guidance(&reqs, &report, &base);
    assert!(first_user_message(&reqs).contains("BASE-GUIDANCE-MOVED-ON"), "{}", first_user_message(&reqs));
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
}
