//! `hone eval mine --issues`: a task whose fix closes an issue (`Fixes #7`) takes the issue's
//! title and body, read from the repository's forge (GitHub's stand-in, Forgejo's, each checking
//! what it receives) with its token; one whose issue is not there keeps its commit's message.

use super::eval_mine::{JOB, RUNNER, calc, commit, test};
use crate::common::repo::git;
use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A repository `calc` with `origin` at `url`: "Fix sub" closes #8 (not on the forge), then
/// "Fix add" closes #7.
fn history(dir: &Path, url: &str, job: &str) -> PathBuf {
    let r = dir.join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    git(&r, &["remote", "add", "origin", url]);
    let files = [("calc.py", calc("a - b", "a + b", "a // 2", false)), ("run_tests.sh", RUNNER.into())];
    commit(&r, "start", &[&files[..], &[("job.yaml", job.to_string())][..]].concat());
    let sub =
        [("calc.py", calc("a - b", "a - b", "a // 2", false)), ("tests/test_sub.py", test("assert sub(3, 1) == 2"))];
    commit(&r, "Fix sub\n\nFixes #8", &sub);
    let add =
        [("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))];
    commit(&r, "Fix add\n\nFixes #7", &add);
    r
}

/// `hone eval mine --issues` in `r` with `env`: the tasks' texts, newest first, and stderr.
async fn mine(dir: &Path, r: &Path, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let tasks = dir.join("tasks.jsonl");
    let args = ["eval", "mine", "--job", "job.yaml", "--issues", "--out", tasks.to_str().unwrap()];
    let mined = run_in(r, &args, env, dir.join("u")).await;
    assert_eq!(mined.code, 0, "{}\n{}", mined.stdout, mined.stderr);
    let texts = std::fs::read_to_string(&tasks)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["problem_statement"].as_str().unwrap().to_string())
        .collect();
    (texts, mined.stderr)
}

const ISSUE: (&str, &str) = ("add() subtracts", "add(1, 2) gives -1, not 3.");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_task_takes_the_text_of_the_issue_its_fix_closes() {
    require!(Need::UserNamespaces);
    let gh = crate::common::mock_github::MockGithub::start().await;
    gh.with_repo("acme/calc", |r| {
        r.issues.insert(7, (ISSUE.0.into(), ISSUE.1.into()));
    });
    let dir = tempfile::tempdir().unwrap();
    let r = history(dir.path(), "https://github.com/acme/calc.git", JOB);
    let env = [("GITHUB_TOKEN", crate::common::mock_github::TOKEN), ("GITHUB_API_URL", gh.url.as_str())];
    let (texts, stderr) = mine(dir.path(), &r, &env).await;
    assert_eq!(texts, [format!("{}\n\n{}", ISSUE.0, ISSUE.1), "Fix sub\n\nFixes #8".into()]);
    assert!(stderr.contains("issue #8 is not on the forge"), "{stderr}");
    let asked: Vec<String> = gh.seen().into_iter().map(|s| format!("{} {}", s.method, s.path)).collect();
    assert_eq!(asked, ["GET /repos/acme/calc/issues/7", "GET /repos/acme/calc/issues/8"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_forgejo_a_task_takes_the_text_of_the_issue_its_fix_closes() {
    require!(Need::UserNamespaces);
    let root = tempfile::tempdir().unwrap();
    let fj = crate::common::mock_forgejo::MockForgejo::start(root.path()).await;
    let token = super::forgejo::TOKEN;
    fj.add_token(token, super::forgejo::BOT);
    let dir = tempfile::tempdir().unwrap();
    let job = format!("{JOB}{}", super::forgejo::forge_spec(&fj.base));
    let r = history(dir.path(), &fj.git_url("acme/calc"), &job);
    fj.add_repo("acme/calc", &r);
    for n in 1..7 {
        fj.add_issue("acme/calc", &format!("issue {n}"), "");
    }
    assert_eq!(fj.add_issue("acme/calc", ISSUE.0, ISSUE.1), 7);
    let ca = crate::common::git_http::test_ca().display().to_string();
    let env = [("FORGEJO_TOKEN", token), ("SSL_CERT_FILE", ca.as_str())];
    let (texts, stderr) = mine(dir.path(), &r, &env).await;
    assert_eq!(texts, [format!("{}\n\n{}", ISSUE.0, ISSUE.1), "Fix sub\n\nFixes #8".into()]);
    assert!(stderr.contains("issue #8 is not on the forge"), "{stderr}");
    assert!(fj.violations().is_empty(), "{:#?}", fj.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_gitlab_a_task_takes_the_text_of_the_issue_its_fix_closes() {
    use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
    require!(Need::UserNamespaces);
    let root = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(root.path()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = format!("{JOB}forge: {{ gitlab_url: \"{}\" }}\n", gl.base);
    let r = history(dir.path(), &gl.git_url("acme/calc"), &job);
    gl.add_project("acme/calc", &r);
    let pat = "glpat-eval0123456789abcdef";
    gl.add_token(pat, Token { kind: Kind::Project, scopes: &["read_api"], user: "", project: Some("acme/calc") });
    gl.add_issue("acme/calc", 7, ISSUE.0, ISSUE.1);
    let ca = crate::common::git_http::test_ca().display().to_string();
    let env = [("GITLAB_TOKEN", pat), ("SSL_CERT_FILE", ca.as_str())];
    let (texts, stderr) = mine(dir.path(), &r, &env).await;
    assert_eq!(texts, [format!("{}\n\n{}", ISSUE.0, ISSUE.1), "Fix sub\n\nFixes #8".into()]);
    assert!(stderr.contains("issue #8 is not on the forge"), "{stderr}");
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
}
