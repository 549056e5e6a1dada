//! Forgejo (and Gitea) as the forge, against the Forgejo stand-in (`tests/common/mock_forgejo`),
//! which serves its REST API and git over one HTTPS address and refuses every request Forgejo's
//! API description does not declare: a run opens one PR and the next updates it; autofix pushes
//! to the PR's branch and keeps one comment, its own; a fork's PR is left alone; the token goes
//! to the Forgejo server only.

use crate::common::git_http::test_ca;
use crate::common::mock_forgejo::MockForgejo;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};

pub(crate) const TOKEN: &str = "fjtok_canary0123456789abcdef";
/// The token's user.
pub(crate) const BOT: &str = "hone-bot";

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

/// The spec's `forge:` for the Forgejo server at `base`.
pub(crate) fn forge_spec(base: &str) -> String {
    format!("forge: {{ kind: forgejo, url: \"{base}\" }}\n")
}

/// A Forgejo with `acme/app` (made from `repo`'s origin), `TOKEN` for `BOT` (a writer), and
/// `repo`'s remote pointing there.
async fn forgejo_for(repo: &TestRepo) -> (MockForgejo, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let fj = MockForgejo::start(root.path()).await;
    fj.add_repo("acme/app", &repo.origin);
    fj.add_token(TOKEN, BOT);
    fj.add_writer("acme/app", BOT);
    repo.git(&["config", "remote.origin.url", &fj.git_url("acme/app")]);
    (fj, root)
}

async fn run_forgejo(repo: &TestRepo, fj: &MockForgejo, pr: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let model = fixing_model().await;
    let yaml = format!("{}{}pr:\n{pr}", job_yaml("fjjob", &model.base_url, false), forge_spec(&fj.base));
    let ca = test_ca().display().to_string();
    let mut all = vec![("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    all.extend_from_slice(env);
    run_job_with(repo, &yaml, args, &all).await
}

pub(crate) fn branch_on(fj: &MockForgejo, full: &str, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")])
        .current_dir(fj.bare(full))
        .output()
        .unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn assert_clean(run: &Run, fj: &MockForgejo) {
    assert!(fj.violations().is_empty(), "requests Forgejo's API does not declare: {:#?}", fj.violations());
    run.assert_no_secret(TOKEN);
}

/// The first run pushes and opens the PR (labels by id, assignees, reviewers), the second
/// updates the same one; git got the token as Forgejo takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_opens_the_pull_request_and_the_next_updates_it() {
    let repo = broken_repo();
    let (fj, _root) = forgejo_for(&repo).await;
    fj.add_user("dev");
    let label = fj.add_label("acme/app", "automated");
    let pr = "  labels: [automated, nolabel]\n  reviewers: [dev]\n  assignees: [dev]\n";
    let run = run_forgejo(&repo, &fj, pr, &[], &[("FORGEJO_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(
        (report["pr"]["forge"].as_str(), report["pr"]["operation"].as_str()),
        (Some("forgejo"), Some("created")),
        "{}",
        report["pr"]
    );
    assert!(report["warnings"].to_string().contains("`nolabel`"), "{}", report["warnings"]);
    let head = branch_on(&fj, "acme/app", "hone/fjjob").expect("the branch was pushed to Forgejo");
    let prs = fj.pulls("acme/app");
    assert_eq!(prs.len(), 1, "{prs:#?}");
    let p = &prs[0];
    assert_eq!((p["head"]["ref"].as_str(), p["base"]["ref"].as_str()), (Some("hone/fjjob"), Some("main")));
    assert_eq!((p["head"]["sha"].as_str(), p["user"]["login"].as_str()), (Some(head.as_str()), Some(BOT)));
    assert_eq!(p["labels"][0]["id"].as_u64(), Some(label), "{p:#}");
    assert_eq!(
        (p["assignees"][0]["login"].as_str(), p["requested_reviewers"][0]["login"].as_str()),
        (Some("dev"), Some("dev"))
    );
    assert_eq!((p["draft"].as_bool(), &report["pr"]["number"]), (Some(false), &p["number"]));
    assert!(!fj.git_credentials().is_empty(), "git never authenticated: the push proves nothing");
    assert!(fj.git_credentials().iter().all(|(_, t)| t == TOKEN), "{:?}", fj.git_credentials());
    assert_clean(&run, &fj);

    let again = run_forgejo(&repo, &fj, pr, &[], &[("FORGEJO_TOKEN", TOKEN)]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.report()["pr"]["operation"], "updated");
    assert_eq!(fj.pulls("acme/app").len(), 1, "updated, never duplicated");
    assert_clean(&again, &fj);
}

/// A fork's PR from a branch of the same name is not hone's: the run opens its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_pull_request_from_the_same_branch_name_is_never_taken_for_hones() {
    let repo = broken_repo();
    let (fj, _root) = forgejo_for(&repo).await;
    fj.fork("acme/app", "mallory/app");
    crate::common::repo::git(&fj.bare("mallory/app"), &["branch", "hone/fjjob", "main"]);
    let theirs = fj.add_pull("acme/app", "hone/fjjob", "main", "Mallory's", "mallory", Some("mallory/app"));
    let run = run_forgejo(&repo, &fj, "  enabled: true\n", &[], &[("GITEA_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["pr"]["operation"], "created", "{}", run.report()["pr"]);
    let prs = fj.pulls("acme/app");
    assert_eq!(prs.len(), 2);
    assert_eq!(prs[0]["title"], "Mallory's", "the fork's PR was not edited");
    assert_ne!(run.report()["pr"]["number"], json!(theirs));
    assert_clean(&run, &fj);
}

/// `--pr N`: the fix is pushed to the PR's branch and one comment is left, by the token's user;
/// a comment with hone's marker by someone else is never edited; the next run skips (the head is
/// hone's) and a fork's PR is skipped, nothing pushed or said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_pushes_to_the_prs_branch_keeps_one_comment_and_refuses_forks() {
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let (fj, _root) = forgejo_for(&repo).await;
    let n = fj.add_pull("acme/app", "feature/x", "main", "Feature", BOT, None);
    fj.add_comment("acme/app", n, "mallory", "<!-- hone:autofix job=fjjob -->\nplanted");
    let before = branch_on(&fj, "acme/app", "feature/x").unwrap();
    let number = n.to_string();
    let env = [("FORGEJO_TOKEN", TOKEN)];
    let run = run_forgejo(&repo, &fj, "  enabled: true\n", &["--pr", &number], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after = branch_on(&fj, "acme/app", "feature/x").unwrap();
    assert_ne!(before, after, "the fix was pushed to the PR's branch");
    let mine = |fj: &MockForgejo| -> Vec<Value> {
        fj.comments("acme/app", n).into_iter().filter(|c| c["user"]["login"] == BOT).collect()
    };
    assert_eq!(mine(&fj).len(), 1, "{:#?}", fj.comments("acme/app", n));
    assert!(mine(&fj)[0]["body"].as_str().unwrap().contains("hone pushed a fix"));
    assert!(
        fj.comments("acme/app", n).iter().any(|c| c["body"].as_str().unwrap().ends_with("planted")),
        "another's comment is untouched"
    );
    assert_eq!(run.report()["pr"]["forge"], "forgejo");
    assert_clean(&run, &fj);

    let again = run_forgejo(&repo, &fj, "  enabled: true\n", &["--pr", &number], &env).await;
    assert_eq!(again.report()["status"], "skipped", "{}", again.stderr);
    assert_eq!(mine(&fj).len(), 1);

    fj.fork("acme/app", "mallory/app");
    let fork_n = fj.add_pull("acme/app", "feature/x", "main", "From a fork", "mallory", Some("mallory/app"));
    let skipped = run_forgejo(&repo, &fj, "  enabled: true\n", &["--pr", &fork_n.to_string()], &env).await;
    assert_eq!((skipped.code, &skipped.report()["status"]), (0, &json!("skipped")), "{}", skipped.stderr);
    assert!(skipped.report().to_string().contains("fork"), "{}", skipped.report());
    assert!(fj.comments("acme/app", fork_n).is_empty());
    assert_eq!(branch_on(&fj, "acme/app", "feature/x"), Some(after), "nothing was pushed for the fork's PR");
    assert_eq!(branch_on(&fj, "mallory/app", "feature/x"), branch_on(&fj, "mallory/app", "feature/x"));
    assert_clean(&skipped, &fj);
}

/// Under Forgejo Actions, a `pull_request` event names the PR, `GITHUB_SERVER_URL` the server and
/// `GITHUB_TOKEN` (the runner's) the token: the fix goes to the PR's branch and one comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_forgejo_actions_the_event_names_the_pr_and_the_runners_token_is_used() {
    let repo = crate::suite::autofix::repo_with_pr_branch();
    let (fj, _root) = forgejo_for(&repo).await;
    let n = fj.add_pull("acme/app", "feature/x", "main", "Feature", "dev", None);
    let event = repo.dir.path().join("event.json");
    std::fs::write(&event, format!(r#"{{"action": "opened", "number": {n}, "pull_request": {{"number": {n}}}}}"#))
        .unwrap();
    let model = fixing_model().await;
    let yaml = job_yaml("fjjob", &model.base_url, false);
    let (ca, ev, api) = (test_ca().display().to_string(), event.display().to_string(), fj.api());
    let env = [
        ("FORGEJO_ACTIONS", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_SERVER_URL", fj.base.as_str()),
        ("GITHUB_API_URL", api.as_str()),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", ev.as_str()),
        ("SSL_CERT_FILE", ca.as_str()),
        ("GIT_SSL_CAINFO", ca.as_str()),
    ];
    let before = branch_on(&fj, "acme/app", "feature/x").unwrap();
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["pr"]["forge"], "forgejo", "{}", run.report()["pr"]);
    assert_ne!(branch_on(&fj, "acme/app", "feature/x").unwrap(), before);
    assert_eq!(fj.comments("acme/app", n).len(), 1);
    assert!(fj.violations().is_empty(), "{:#?}", fj.violations());
    // Under Actions the token is shown only to the runner, to be masked.
    let shown: Vec<&str> = run.stdout.lines().filter(|l| l.contains(TOKEN)).collect();
    assert!(shown.iter().all(|l| *l == format!("::add-mask::{TOKEN}")), "{shown:?}");
    for name in ["report.json", "summary.md", "events.jsonl", "transcript.jsonl"] {
        assert!(!run.read_optional(name).contains(TOKEN), "{name}");
    }
    assert!(!run.stderr.contains(TOKEN));
}

/// The token goes to the Forgejo server the spec names only: a remote on another server (the
/// stand-in on a second port) gets no API request and never the token, and the run says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_never_goes_to_a_remote_on_another_server() {
    let repo = broken_repo();
    let (fj, _root) = forgejo_for(&repo).await;
    let other_root = tempfile::tempdir().unwrap();
    let other = MockForgejo::start(other_root.path()).await;
    other.add_repo("acme/app", &repo.origin);
    other.add_token(TOKEN, BOT);
    other.add_writer("acme/app", BOT);
    repo.git(&["config", "remote.origin.url", &other.git_url("acme/app")]);
    let run = run_forgejo(&repo, &fj, "  enabled: true\n", &[], &[("FORGEJO_TOKEN", TOKEN)]).await;
    assert_ne!(run.code, 0, "{}\n{:#?}", run.stderr, other.requests());
    let with_token: Vec<_> = other
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/") || r.authorization.as_deref().is_some_and(|a| a.contains(TOKEN)))
        .collect();
    assert!(with_token.is_empty(), "the other server got an API request or the token: {with_token:#?}");
    assert!(other.git_credentials().iter().all(|(_, t)| t != TOKEN), "{:?}", other.git_credentials());
    assert!(fj.pulls("acme/app").is_empty() && other.pulls("acme/app").is_empty());
    run.assert_no_secret(TOKEN);
}

/// Forgejo's 429 with `Retry-After` is waited out and the request sent again, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_requests_are_retried() {
    let repo = broken_repo();
    let (fj, _root) = forgejo_for(&repo).await;
    fj.rate_limit_next(2);
    let run = run_forgejo(&repo, &fj, "  enabled: true\n", &[], &[("FORGEJO_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["pr"]["retries"], 2, "{}", run.report()["pr"]);
    assert_eq!(fj.requests().iter().filter(|r| r.status == 429).count(), 2);
    assert_eq!(fj.pulls("acme/app").len(), 1);
    assert_clean(&run, &fj);
}

/// `on_failure: draft`: the unverified work goes up as a work-in-progress PR (Forgejo's `WIP: `
/// title), and the run still fails; the next run that verifies makes it ready, the same PR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_work_is_a_wip_pull_request_until_a_run_verifies() {
    let repo = broken_repo();
    let (fj, _root) = forgejo_for(&repo).await;
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("I could not finish."), false);
    let yaml = format!(
        "{}{}pr:\n  on_failure: draft\n",
        job_yaml("fjjob", &model.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0"),
        forge_spec(&fj.base)
    );
    let ca = test_ca().display().to_string();
    let env = [("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str()), ("FORGEJO_TOKEN", TOKEN)];
    let failed = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(failed.code, 1, "a draft does not make a failed run a success: {}", failed.stderr);
    let prs = fj.pulls("acme/app");
    assert_eq!((prs.len(), &prs[0]["draft"]), (1, &json!(true)), "{prs:#?}");
    assert!(prs[0]["title"].as_str().unwrap().starts_with("WIP: "), "{}", prs[0]["title"]);

    let fixed = run_forgejo(&repo, &fj, "  on_failure: draft\n", &[], &[("FORGEJO_TOKEN", TOKEN)]).await;
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    let prs = fj.pulls("acme/app");
    assert_eq!((prs.len(), &prs[0]["draft"]), (1, &json!(false)), "{prs:#?}");
    assert_clean(&fixed, &fj);
}
