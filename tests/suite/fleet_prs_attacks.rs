//! `hone fleet prs` acts only on what hone made and counts only who may decide, on GitHub: a push
//! by someone else to hone's branch is never merged, a fleet.json or targets.json naming someone
//! else's PR and branch changes nothing, a branch is deleted only at the commit hone pushed, a
//! stranger's review counts for nothing, and checks that have not reported are pending.

use super::fleet_prs::{BRANCH, entry, fleet_with_prs, mutations, prs, report};
use crate::common::mock_github::{MockGithub, MockPr, OUTSIDER, WRITER, review};
use crate::common::*;
use serde_json::{Value, json};

/// A commit someone else pushed (adding `backdoor.py`).
fn theirs() -> String {
    "e".repeat(40)
}

fn said(r: &Value, n: &str) -> (String, String) {
    (entry(r, n)["action"].as_str().unwrap_or("").to_string(), entry(r, n)["reason"].as_str().unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_by_another_identity_between_status_and_merge_is_never_merged() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    gh.seed("acme/app", MockPr::open(41, BRANCH));
    let fleet = fleet_with_prs(dir.path(), &[("app", 41)]);
    let status = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(status.code, 4, "{}\n{}", status.stdout, status.stderr);
    assert_eq!(entry(&report(dir.path(), "status"), "app")["head_sha"], format!("{:0>40}", 41));
    // Someone who may push to hone's branch, but not merge, pushes a commit; its checks pass.
    gh.push("acme/app", BRANCH, &theirs());
    let merge = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(merge.code, 4, "{}\n{}", merge.stdout, merge.stderr);
    assert!(!gh.pr("acme/app", 41).merged, "a head hone never pushed is never merged");
    assert!(mutations(&gh).is_empty(), "nothing was changed: {:?}", mutations(&gh));
    let r = report(dir.path(), "merge");
    let (action, reason) = said(&r, "app");
    assert_eq!(action, "skipped");
    assert!(reason.starts_with("not hone's head:"), "{reason}");
    assert!(reason.contains(&theirs()[..12]) && reason.contains(&format!("{:0>40}", 41)[..12]), "{reason}");
    assert_eq!(r["counts"], json!({"not_hones": 1}));
    let status = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(status.code, 4);
    let e = entry(&report(dir.path(), "status"), "app").clone();
    assert_eq!(e["owned"], "not_hones_head", "status says so too: {e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_json_naming_someone_elses_pr_and_branch_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // PR #2 is alice's, from `feature/big-refactor`; the repository also has hone's branch.
    let mut theirs = MockPr::open(2, "feature/big-refactor");
    theirs.author = "alice".into();
    gh.seed("acme/app", theirs);
    gh.with_repo("acme/app", |r| r.branches.insert(BRANCH.into(), "9".repeat(40)));
    // A fleet.json in a shared out dir names it, with its branch; the run's report even names
    // its head as pushed.
    let fleet = fleet_with_prs(dir.path(), &[("app", 2)]);
    let path = dir.path().join("out/fleet.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(BRANCH, "feature/big-refactor");
    std::fs::write(&path, text).unwrap();
    for cmd in ["close", "merge"] {
        let run = prs(&gh, &fleet, &[cmd]).await;
        assert_eq!(run.code, 4, "{cmd}: {}\n{}", run.stdout, run.stderr);
        let (action, reason) = said(&report(dir.path(), cmd), "app");
        assert_eq!(action, "skipped", "{cmd}");
        assert!(reason.starts_with("not hone's PR: opened by `alice`"), "{cmd}: {reason}");
    }
    assert!(mutations(&gh).is_empty(), "nothing commented, closed, merged or deleted: {:?}", mutations(&gh));
    let pr = gh.pr("acme/app", 2);
    assert!(pr.state == "open" && pr.comments.is_empty() && !pr.merged);
    assert!(gh.branches("acme/app").contains("feature/big-refactor"));
    assert!(gh.branches("acme/app").contains(BRANCH));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pr_of_hones_identity_on_another_branch_is_not_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // hone's identity opened it, but for another job: its branch is not this job's.
    gh.seed("acme/app", MockPr::open(3, "hone/otherjob"));
    let fleet = fleet_with_prs(dir.path(), &[("app", 3)]);
    let path = dir.path().join("out/fleet.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(BRANCH, "hone/otherjob");
    std::fs::write(&path, text).unwrap();
    let run = prs(&gh, &fleet, &["close"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let (action, reason) = said(&report(dir.path(), "close"), "app");
    assert_eq!(action, "skipped");
    assert_eq!(reason, format!("not the job's branch: its head is `hone/otherjob`, the job's branch is `{BRANCH}`"));
    assert!(mutations(&gh).is_empty(), "{:?}", mutations(&gh));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_targets_json_for_a_search_names_another_repository_and_nothing_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // Someone else's PR in a repository the token reaches, from a branch named like hone's.
    let mut victim = MockPr::open(7, BRANCH);
    victim.author = "mallory".into();
    gh.seed("victim/app", victim);
    let fleet = fleet_with_prs(dir.path(), &[]);
    let text =
        "version: 1\njob: job.yaml\nrepos:\n  - github: { search: \"org:acme topic:prs\" }\nworkspace: ws\nout: out\n";
    std::fs::write(&fleet, text).unwrap();
    let targets = json!({"schema_version": 1, "resolved_at": "2026-01-01T00:00:00Z", "queries": [{
        "query": {"github": {"search": "org:acme topic:prs"}}, "base": null, "server": "https://github.com",
        "requests": 1, "warnings": [], "repos": ["victim/app"]}]});
    std::fs::write(dir.path().join("out/targets.json"), targets.to_string()).unwrap();
    let row = json!({"id": "victim__app", "source": "https://github.com/victim/app.git", "status": "pr_created",
        "code": null, "error": null, "pr_url": null, "pr_number": 7, "pr_forge": "github", "branch": BRANCH,
        "duration_ms": 1, "tokens": 0, "report_dir": "ws/reports/victim__app", "job_hash": "h"});
    let fleet_json = json!({"schema_version": 1, "job": "prsjob", "job_hash": "h", "started_at": "t",
        "duration_ms": 1, "exit_code": 0, "counts": {"pr_created": 1}, "repos": [row]});
    std::fs::write(dir.path().join("out/fleet.json"), fleet_json.to_string()).unwrap();
    let mut env: Vec<(&str, String)> = gh.env();
    env.push(("GITHUB_SERVER_URL", "https://github.com".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["fleet", "prs", "close", fleet.to_str().unwrap()];
    let run = run_hone_env(&args, &[], dir.path().join("out"), &env).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(gh.count("GET", "/repos/victim/app/pulls/7") > 0, "the list named it: {:#?}", gh.seen());
    assert!(mutations(&gh).is_empty(), "nothing commented, closed or deleted: {:?}", mutations(&gh));
    let pr = gh.pr("victim/app", 7);
    assert!(pr.state == "open" && pr.comments.is_empty());
    assert!(gh.branches("victim/app").contains(BRANCH));
    let r = report(dir.path(), "close");
    let e = r["prs"].as_array().unwrap().iter().find(|p| p["id"] == "victim__app").unwrap();
    assert_eq!(e["action"], "skipped", "{e:#}");
    assert!(e["reason"].as_str().unwrap().starts_with("not hone's PR: opened by `mallory`"), "{e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_keeps_a_branch_whose_head_moved_and_loses_nobodys_commits() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // Someone pushed to hone's branch: the PR's head moved with it.
    gh.seed("acme/pushed", MockPr::open(51, BRANCH));
    gh.push("acme/pushed", BRANCH, &theirs());
    // The branch moved after GitHub last computed the PR's head (a push racing the close).
    gh.seed("acme/racing", MockPr::open(52, BRANCH));
    gh.with_repo("acme/racing", |r| r.branches.insert(BRANCH.into(), theirs()));
    let fleet = fleet_with_prs(dir.path(), &[("pushed", 51), ("racing", 52)]);
    let run = prs(&gh, &fleet, &["close"]).await;
    assert_eq!(run.code, 0, "hone's PRs are closed: {}\n{}", run.stdout, run.stderr);
    assert_eq!(gh.count("DELETE", "/"), 0, "no branch deleted: {:?}", mutations(&gh));
    let r = report(dir.path(), "close");
    for (name, n) in [("pushed", 51), ("racing", 52)] {
        let repo = format!("acme/{name}");
        assert_eq!(gh.pr(&repo, n).state, "closed", "it is hone's PR: closing it loses nothing");
        assert_eq!(gh.branch_sha(&repo, BRANCH), Some(theirs()), "their commit is still on the branch");
        let e = entry(&r, name);
        assert_eq!((e["action"].clone(), e["branch_deleted"].clone()), (json!("closed"), json!(false)), "{e:#}");
        assert!(e["reason"].as_str().unwrap().starts_with("closed; branch kept: its head moved"), "{e:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outsiders_approval_does_not_count_and_their_change_request_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let mut approved_by_stranger = MockPr::open(61, BRANCH);
    approved_by_stranger.reviews = vec![review("stranger", "APPROVED", OUTSIDER)];
    gh.seed("acme/stranger-ok", approved_by_stranger);
    let mut blocked_by_stranger = MockPr::open(62, BRANCH);
    blocked_by_stranger.reviews =
        vec![review("maintainer", "APPROVED", WRITER), review("stranger", "CHANGES_REQUESTED", OUTSIDER)];
    gh.seed("acme/stranger-no", blocked_by_stranger);
    // The same without a rule asking for approvals (no `reviewDecision`: the reviews decide).
    let mut unruled = MockPr::open(63, BRANCH);
    unruled.reviews = vec![review("maintainer", "APPROVED", WRITER), review("stranger", "CHANGES_REQUESTED", OUTSIDER)];
    gh.seed("acme/unruled", unruled);
    for repo in ["acme/stranger-ok", "acme/stranger-no"] {
        gh.with_repo(repo, |r| r.required_reviews = 1);
    }
    let fleet = fleet_with_prs(dir.path(), &[("stranger-ok", 61), ("stranger-no", 62), ("unruled", 63)]);
    let status = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(status.code, 4, "{}\n{}", status.stdout, status.stderr);
    let r = report(dir.path(), "status");
    assert_eq!(entry(&r, "stranger-ok")["review"], "review_required", "{r:#}");
    assert_eq!(entry(&r, "stranger-no")["review"], "approved", "{r:#}");
    assert_eq!(entry(&r, "unruled")["review"], "approved", "{r:#}");
    let merge = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(merge.code, 4, "{}\n{}", merge.stdout, merge.stderr);
    assert!(!gh.pr("acme/stranger-ok", 61).merged);
    assert_eq!(gh.count("PUT", "/repos/acme/stranger-ok/"), 0, "not even asked");
    assert!(gh.pr("acme/stranger-no", 62).merged && gh.pr("acme/unruled", 63).merged);
    assert_eq!(said(&report(dir.path(), "merge"), "stranger-ok"), ("skipped".into(), "review required".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_that_have_not_reported_are_pending_and_nothing_is_merged() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // Right after a push: no check has started yet.
    let mut fresh = MockPr::open(71, BRANCH);
    (fresh.check_runs, fresh.statuses) = (vec![], vec![]);
    gh.seed("acme/fresh", fresh);
    // The rules require `ci` and `lint`; only `ci` (and an optional status) reported.
    gh.seed("acme/required", MockPr::open(72, BRANCH));
    gh.with_repo("acme/required", |r| r.required_checks = vec!["ci".into(), "lint".into()]);
    let fleet = fleet_with_prs(dir.path(), &[("fresh", 71), ("required", 72)]);
    let status = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(status.code, 4, "{}\n{}", status.stdout, status.stderr);
    let r = report(dir.path(), "status");
    assert_eq!(
        (entry(&r, "fresh")["checks"].clone(), entry(&r, "required")["checks"].clone()),
        (json!("pending"), json!("pending"))
    );
    let merge = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(merge.code, 4, "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(gh.count("PUT", "/"), 0, "nothing merged: {:?}", mutations(&gh));
    let r = report(dir.path(), "merge");
    assert_eq!(said(&r, "fresh"), ("skipped".into(), "checks pending: no check has reported yet".into()));
    assert_eq!(
        said(&r, "required"),
        ("skipped".into(), "checks pending: required check `lint` has not reported".into())
    );
}
