//! `hone fleet prs` against what an attacker or a misconfiguration can do: a token that may not
//! read `GET /user` is asked who it is (GraphQL `viewer`), never guessed to be the Actions bot; a
//! target on another server than the token's gets no request with it; a PR someone retargeted
//! onto another base is not merged there (GitHub and GitLab); a flood of reviews never hides the
//! last ones; `--resume` carries over only the result of the PR fleet.json names now.

use super::fleet_prs::{BRANCH, entry, fleet_with_prs, mutations, prs, report};
use super::fleet_prs_gitlab::lab;
use crate::common::mock_github::{MockGithub, MockPr, OUTSIDER, WRITER, review};
use crate::common::mock_github_app::{MockGithubApp, SLUG, key_path};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installation_token_is_asked_who_it_is_never_taken_for_the_actions_bot() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // An App's installation token handed over as GITHUB_TOKEN: `GET /user` is forbidden to it.
    gh.as_installation("hone-app[bot]");
    let mut ours = MockPr::open(41, BRANCH);
    ours.author = "hone-app[bot]".into();
    gh.seed("acme/ours", ours);
    // Another workflow's PR (GITHUB_TOKEN's identity) on a branch named like hone's.
    let mut actions = MockPr::open(42, BRANCH);
    actions.author = "github-actions[bot]".into();
    gh.seed("acme/actions", actions);
    let fleet = fleet_with_prs(dir.path(), &[("ours", 41), ("actions", 42)]);
    let run = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let r = report(dir.path(), "merge");
    assert_eq!(entry(&r, "ours")["action"], "merged", "the App's own PR is hone's: {r:#}");
    assert!(gh.pr("acme/ours", 41).merged);
    let e = entry(&r, "actions");
    assert_eq!((e["action"].clone(), e["owned"].clone()), (json!("skipped"), json!("not_hones_pr")), "{e:#}");
    assert!(!gh.pr("acme/actions", 42).merged, "another identity's PR is never merged");
    assert_eq!(r["requests"], gh.seen().len(), "every request counted, `viewer` too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_hones_github_app_its_bot_is_the_campaigns_identity_without_asking_user() {
    let dir = tempfile::tempdir().unwrap();
    let app = MockGithubApp::start(&["acme"]).await;
    let fleet = fleet_with_prs(dir.path(), &[("app", 1)]);
    // The App opened PR #1 from hone's branch at the commit the run pushed.
    app.open_pr(1, BRANCH, &format!("{:0>40}", 1));
    let env = app.env(&key_path(true));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let args = ["fleet", "prs", "close", fleet.to_str().unwrap(), "--dry-run"];
    let run = run_hone_env(&args, &[], dir.path().join("out"), &env).await;
    assert_eq!(
        run.code, 4,
        "{}
{}",
        run.stdout, run.stderr
    );
    let e = entry(&report(dir.path(), "close"), "app").clone();
    assert_eq!((e["action"].clone(), e["owned"].clone()), (json!("would_close"), json!("hones")), "{e:#}");
    assert_eq!(e["author"], format!("{SLUG}[bot]"));
    // An installation token may not read `/user` (the stand-in counts that as refused): hone
    // knows its App's bot.
    assert!(app.refusals().is_empty(), "{:#?}", app.refusals());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_on_another_server_than_the_tokens_gets_no_request_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    gh.seed("acme/app", MockPr::open(41, BRANCH));
    let fleet = fleet_with_prs(dir.path(), &[("app", 41)]);
    // The fleet file names a GitHub Enterprise Server's repository; the environment names
    // github.com (its API here the stand-in): that server's token must not go there.
    let text = std::fs::read_to_string(&fleet).unwrap().replace("https://github.com/", "https://ghe.corp.example/");
    std::fs::write(&fleet, text).unwrap();
    let mut env: Vec<(&str, String)> = gh.env();
    env.push(("GITHUB_SERVER_URL", "https://github.com".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for cmd in ["status", "merge"] {
        let args = ["fleet", "prs", cmd, fleet.to_str().unwrap()];
        let run = run_hone_env(&args, &[], dir.path().join("out"), &env).await;
        assert_eq!(run.code, 3, "{cmd}: {}\n{}", run.stdout, run.stderr);
        let e = entry(&report(dir.path(), cmd), "app").clone();
        let error = e["error"].as_str().unwrap_or("");
        assert!(error.contains("ghe.corp.example") && error.contains("GITHUB_SERVER_URL"), "{cmd}: {e:#}");
    }
    assert!(gh.seen().is_empty(), "no request went to another server's API: {:#?}", gh.seen());
    assert!(!gh.pr("acme/app", 41).merged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pr_retargeted_onto_another_base_is_not_merged_there() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // Someone who may edit the PR, but not merge into `release`, retargets hone's PR there:
    // merging it would bring every commit of `main` not yet in `release` along.
    let mut moved = MockPr::open(41, BRANCH);
    moved.base_ref = "release".into();
    gh.seed("acme/moved", moved);
    gh.seed("acme/kept", MockPr::open(42, BRANCH));
    let fleet = fleet_with_prs(dir.path(), &[("moved", 41), ("kept", 42)]);
    let run = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(!gh.pr("acme/moved", 41).merged, "not merged into a base hone's run never opened it onto");
    assert!(gh.pr("acme/kept", 42).merged, "hone's PR on its own base is merged");
    let e = entry(&report(dir.path(), "merge"), "moved").clone();
    assert_eq!((e["action"].clone(), e["owned"].clone()), (json!("skipped"), json!("not_hones_pr")), "{e:#}");
    let reason = e["reason"].as_str().unwrap();
    assert_eq!(reason, "not hone's PR: its base is `release`, hone's run opened it onto `main`");
    // Closing it is still hone's to do: nothing lands anywhere.
    let run = prs(&gh, &fleet, &["close"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(gh.pr("acme/moved", 41).state, "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_a_merge_request_retargeted_onto_another_branch_is_not_merged_there() {
    let lab = lab(&["app"], &[("app", 1)]).await;
    lab.mr("app", BRANCH, None);
    lab.gl.with_mr("acme/app", 1, |m| {
        (m.pipeline, m.target_branch) = (Some("success".into()), "feature".into());
    });
    let run = lab.prs(&["merge"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(lab.gl.mrs("acme/app")[0]["state"], "opened", "not merged into `feature`");
    assert!(lab.mutations().is_empty(), "{:?}", lab.mutations());
    let e = entry(&lab.report("merge"), "app").clone();
    assert_eq!(e["reason"], "not hone's PR: its base is `feature`, hone's run opened it onto `main`", "{e:#}");
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_comment_reviews_never_hides_a_later_change_request() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // No rule asks for approvals, so the reviews themselves decide. A maintainer approved; a
    // drive-by user then left a thousand comment reviews; then another maintainer asked for
    // changes, on review 1002.
    let mut pr = MockPr::open(41, BRANCH);
    pr.reviews = vec![review("maintainer", "APPROVED", WRITER)];
    pr.reviews.extend((0..1000).map(|_| review("driveby", "COMMENTED", OUTSIDER)));
    pr.reviews.push(review("other-maintainer", "CHANGES_REQUESTED", WRITER));
    gh.seed("acme/app", pr);
    let fleet = fleet_with_prs(dir.path(), &[("app", 41)]);
    let run = prs(&gh, &fleet, &["merge"]).await;
    assert!(!gh.pr("acme/app", 41).merged, "a change request past the pages read is never ignored");
    assert!(mutations(&gh).is_empty(), "{:?}", mutations(&gh));
    assert_eq!(run.code, 3, "what was not read is an error, not a verdict: {}\n{}", run.stdout, run.stderr);
    let e = entry(&report(dir.path(), "merge"), "app").clone();
    assert!(e["error"].as_str().unwrap_or("").contains("more than 1000 reviews"), "{e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_carries_over_only_the_result_of_the_pr_fleet_json_names_now() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let mut merged = MockPr::open(41, BRANCH);
    (merged.state, merged.merged) = ("closed".into(), true);
    gh.seed("acme/app", merged);
    let fleet = fleet_with_prs(dir.path(), &[("app", 41)]);
    let run = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // The fleet ran again and opened PR #42 (its run pushed its head); a resumed merge must
    // follow #42, not report #41's result.
    gh.seed("acme/app", MockPr::open(42, BRANCH));
    fleet_with_prs(dir.path(), &[("app", 42)]);
    let run = prs(&gh, &fleet, &["merge", "--resume"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let e = entry(&report(dir.path(), "merge"), "app").clone();
    assert_eq!(
        (e["number"].clone(), e["action"].clone(), e["resumed"].clone()),
        (json!(42), json!("merged"), json!(false))
    );
    assert!(gh.pr("acme/app", 42).merged, "{e:#}");
}
