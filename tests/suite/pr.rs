//! Push and pull requests against a local bare origin and a mock GitHub API that checks what it
//! receives (method, path, body, auth).

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) const TOKEN: &str = "ghp_testcanary0123456789abcdef";

/// The login the token acts as (`GET /user`), who opened hone's PRs.
pub(crate) const LOGIN: &str = "hone-bot";

pub(crate) fn pr_json(n: u64) -> Value {
    json!({"number": n, "html_url": format!("https://github.example/acme/app/pull/{n}"), "state": "open", "user": {"login": LOGIN}})
}

pub(crate) async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

pub(crate) fn yaml(name: &str, model: &str, extra: &str) -> String {
    format!("{}pr:\n  labels: [automated]\n  reviewers: [octocat]\n{extra}", job_yaml(name, model, false))
}

pub(crate) async fn run_pr(
    repo: &crate::common::repo::TestRepo,
    yaml: &str,
    gh: &MockServer,
    extra_env: &[(&str, &str)],
) -> Run {
    let mut env =
        vec![("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", gh.uri().leak() as &str)];
    env.extend_from_slice(extra_env);
    run_job_env(repo, yaml, &env).await
}

pub(crate) async fn mutations(gh: &MockServer) -> Vec<(String, String, Value)> {
    gh.received_requests()
        .await
        .expect("wiremock records requests")
        .into_iter()
        .filter(|r| r.method.as_str() != "GET")
        .map(|r| {
            (r.method.to_string(), r.url.path().to_string(), serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        })
        .collect()
}

/// The open PRs from `hone/prjob` are `prs`; the token is `LOGIN`'s.
pub(crate) async fn mount_list(gh: &MockServer, prs: Value) {
    let me = json!({"login": LOGIN, "type": "User"});
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(ResponseTemplate::new(200).set_body_json(me))
        .mount(gh)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .and(query_param("head", "acme:hone/prjob"))
        .and(query_param("state", "open"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(prs))
        .mount(gh)
        .await;
}

/// PR `n` takes labels and reviewers, whatever they are.
async fn mount_labels_and_reviewers(gh: &MockServer, n: u64) {
    Mock::given(method("POST"))
        .and(path(format!("/repos/acme/app/issues/{n}/labels")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(gh)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("/repos/acme/app/pulls/{n}/requested_reviewers")))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr_json(n)))
        .mount(gh)
        .await;
}

/// No open PR yet: exactly one is created (#7, from `hone/prjob` onto `main`, with the token),
/// then labelled and given its reviewer, once each.
async fn expect_one_new_pr(gh: &MockServer) {
    mount_list(gh, json!([])).await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .and(body_partial_json(json!({"head": "hone/prjob", "base": "main", "draft": false})))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr_json(7)))
        .expect(1)
        .mount(gh)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/issues/7/labels"))
        .and(body_partial_json(json!({"labels": ["automated"]})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .expect(1)
        .mount(gh)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls/7/requested_reviewers"))
        .and(body_partial_json(json!({"reviewers": ["octocat"]})))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr_json(7)))
        .expect(1)
        .mount(gh)
        .await;
}

/// PR #7 is open: it is updated once (its title), and no PR is created.
async fn expect_pr_7_updated(gh: &MockServer) {
    mount_list(gh, json!([pr_json(7)])).await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(gh)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/app/pulls/7"))
        .and(body_partial_json(json!({"title": "hone: Set status.txt to fixed."})))
        .respond_with(ResponseTemplate::new(200).set_body_json(pr_json(7)))
        .expect(1)
        .mount(gh)
        .await;
    mount_labels_and_reviewers(gh, 7).await;
}

/// The branch on origin, which hone pushed.
fn pushed_branch(repo: &crate::common::repo::TestRepo) -> String {
    crate::common::repo::git(&repo.origin, &["rev-parse", "refs/heads/hone/prjob"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_creates_the_pr_and_the_second_updates_it() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    expect_one_new_pr(&gh).await;
    let model = fixing_model().await;
    let run = run_pr(&repo, &yaml("prjob", &model.base_url, ""), &gh, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["pr"]["operation"], "created");
    assert_eq!(report["pr"]["number"], 7);
    assert_eq!(report["pr"]["pushed"], true);
    // The branch is on origin, at the commit; the PR body carries the marker and the verification table.
    let sha = report["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(pushed_branch(&repo), sha);
    let created = mutations(&gh).await.into_iter().find(|m| m.1 == "/repos/acme/app/pulls").unwrap().2;
    let body = created["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- hone:job=prjob -->"), "{body}");
    assert!(body.contains("| `check` | ❌ fails (exit 1) | ✅ pass |"), "{body}");
    assert_eq!(created["title"], "hone: Set status.txt to fixed.");
    gh.verify().await;

    // Second run: the same PR is found and updated; no second PR is created.
    gh.reset().await;
    expect_pr_7_updated(&gh).await;
    let model = fixing_model().await;
    let run2 = run_pr(&repo, &yaml("prjob", &model.base_url, ""), &gh, &[]).await;
    assert_eq!(run2.code, 0, "{}", run2.stderr);
    assert_eq!(run2.report()["pr"]["operation"], "updated");
    let sha2 = run2.report()["commit"]["sha"].as_str().unwrap().to_string();
    assert_ne!(sha, sha2);
    assert_eq!(pushed_branch(&repo), sha2, "force-with-lease replaced the branch");
    gh.verify().await;
    // The token is nowhere on disk or in any output.
    assert!(!std::fs::read_to_string(repo.path.join(".git/config")).unwrap().contains(TOKEN));
    run.assert_no_secret(TOKEN);
    run2.assert_no_secret(TOKEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_no_change_reports_none_and_can_close_a_stale_pr() {
    let repo = crate::common::repo::TestRepo::new(&[("status.txt", "fixed\n"), ("check.sh", CHECK_SH)]);
    let gh = MockServer::start().await;
    mount_list(&gh, json!([pr_json(9)])).await;
    let model = MockModel::start().await;
    model.turn(text("Nothing to do: the check already passes."), false);
    let run = run_pr(&repo, &yaml("prjob", &model.base_url, ""), &gh, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["status"], "no_change");
    assert_eq!(run.report()["pr"]["operation"], "none");
    assert!(mutations(&gh).await.is_empty());
    // With close_if_empty, the stale PR is closed.
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/app/pulls/9"))
        .and(body_partial_json(json!({"state": "closed"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(pr_json(9)))
        .expect(1)
        .mount(&gh)
        .await;
    let model = MockModel::start().await;
    model.turn(text("Nothing to do."), false);
    let run = run_pr(&repo, &yaml("prjob", &model.base_url, "  close_if_empty: true\n"), &gh, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["status"], "no_change");
    assert_eq!(run.report()["pr"]["operation"], "closed");
    gh.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn already_exists_finds_and_updates_and_a_secondary_rate_limit_is_retried() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    // The first list sees nothing (a race with another run); the second sees the PR.
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&gh)
        .await;
    mount_list(&gh, json!([pr_json(11)])).await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"message": "You have exceeded a secondary rate limit."})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&gh)
        .await;
    Mock::given(method("POST")).and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for acme:hone/prjob."}]})))
        .mount(&gh).await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/app/pulls/11"))
        .respond_with(ResponseTemplate::new(200).set_body_json(pr_json(11)))
        .expect(1)
        .mount(&gh)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/issues/11/labels"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&gh)
        .await;
    Mock::given(method("POST")).and(path("/repos/acme/app/pulls/11/requested_reviewers"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({"message": "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the acme/app repository."})))
        .mount(&gh).await;
    let model = fixing_model().await;
    let run = run_pr(&repo, &yaml("prjob", &model.base_url, ""), &gh, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["pr"]["operation"], "updated");
    assert_eq!(report["pr"]["number"], 11);
    assert_eq!(report["pr"]["retries"], 1);
    assert!(report["pr"]["warnings"][0].as_str().unwrap().contains("reviewers were not requested"), "{}", report["pr"]);
    assert!(report["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("not a collaborator")));
    gh.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_writes_the_pr_and_patch_and_calls_nothing() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    let model = fixing_model().await;
    let uri = gh.uri();
    let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", uri.as_str())];
    let run = run_job_with(&repo, &yaml("prjob", &model.base_url, ""), &["--dry-run"], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(gh.received_requests().await.expect("wiremock records requests").is_empty(), "no API call in a dry run");
    assert!(crate::common::repo::git(&repo.origin, &["branch", "--list", "hone/prjob"]).is_empty(), "nothing pushed");
    let pr = run.read("pr.md");
    assert!(pr.starts_with("# hone: Set status.txt to fixed.\n\n<!-- hone:job=prjob -->"), "{pr}");
    let patch = run.read("change.patch");
    assert!(patch.contains("-broken") && patch.contains("+fixed"), "{patch}");
    let report = run.report();
    assert_eq!(report["pr"]["dry_run"], true);
    assert!(report["pr"]["notice"].as_str().unwrap().contains("dry run"));
}

/// Parse `name<<DELIM … DELIM` and `name=value` blocks, as the Actions runner does.
pub(super) fn parse_outputs(text: &str) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some((k, d)) = l.split_once("<<") {
            let v: Vec<&str> = lines.by_ref().take_while(|x| *x != d).collect();
            out.insert(k.to_string(), v.join("\n"));
        } else if let Some((k, v)) = l.split_once('=') {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_actions_outputs_summary_and_masks_are_written() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    mount_list(&gh, json!([])).await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr_json(5)))
        .mount(&gh)
        .await;
    mount_labels_and_reviewers(&gh, 5).await;
    let out_file = repo.dir.path().join("actions_output");
    let sum_file = repo.dir.path().join("step_summary");
    std::fs::write(&out_file, "previous=step\n").unwrap();
    let model = fixing_model().await;
    let (o, s) = (out_file.to_str().unwrap().to_string(), sum_file.to_str().unwrap().to_string());
    let run = run_pr(
        &repo,
        &yaml("prjob", &model.base_url, ""),
        &gh,
        &[("GITHUB_ACTIONS", "true"), ("GITHUB_OUTPUT", o.leak()), ("GITHUB_STEP_SUMMARY", s.leak())],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outputs = parse_outputs(&std::fs::read_to_string(&out_file).unwrap());
    assert_eq!(outputs["previous"], "step", "earlier outputs are kept");
    assert_eq!(outputs["status"], "success");
    assert_eq!(outputs["exit-code"], "0");
    assert_eq!(outputs["changed"], "true");
    assert_eq!(outputs["pr-number"], "5");
    assert_eq!(outputs["pull-request-operation"], "created");
    assert_eq!(outputs["pr-url"], "https://github.example/acme/app/pull/5");
    assert!(outputs["report-json"].ends_with("report.json"));
    let report = run.report();
    assert_eq!(outputs["summary"], report["summary"].as_str().unwrap(), "multi-line values round-trip exactly");
    assert!(std::fs::read_to_string(&sum_file).unwrap().contains("✅ hone: `prjob` — success"));
    assert!(run.stdout.lines().any(|l| l == format!("::add-mask::{TOKEN}")), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_draft_pushes_the_partial_work_as_a_draft_pr_and_still_fails() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    mount_list(&gh, json!([])).await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .and(body_partial_json(json!({"draft": true, "head": "hone/prjob"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr_json(8)))
        .expect(1)
        .mount(&gh)
        .await;
    mount_labels_and_reviewers(&gh, 8).await;
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "status.txt", "content": "half\n"})), false)
        .turn(text("I could not finish."), false);
    let y =
        yaml("prjob", &model.base_url, "  on_failure: draft\n").replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_pr(&repo, &y, &gh, &[]).await;
    assert_eq!(run.code, 1, "a draft PR does not make a failed run a success: {}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert_eq!(report["pr"]["operation"], "created");
    assert_eq!(pushed_branch(&repo), repo.git(&["rev-parse", "refs/hone/prjob/failed"]));
    let created = mutations(&gh).await.into_iter().find(|m| m.1 == "/repos/acme/app/pulls").unwrap().2;
    assert!(created["title"].as_str().unwrap().starts_with("[checks failing] "), "{}", created["title"]);
    assert!(created["body"].as_str().unwrap().contains("### What blocked the run"));
    gh.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_checks_become_annotations_under_actions() {
    let repo = crate::common::repo::TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", "echo 'status.txt:1: expected fixed, found broken'; exit 1\n"),
    ]);
    let model = MockModel::start().await;
    model.turn(text("I tried."), false);
    let y = job_yaml("annot", &model.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job_env(&repo, &y, &[("GITHUB_ACTIONS", "true")]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error file="))
        .unwrap_or_else(|| panic!("no annotation with a position in {}", run.stdout));
    assert_eq!(line, "::error file=status.txt,line=1,title=hone%3A check failed::expected fixed, found broken");
}
