//! `hone fleet prs status|close|merge` against the GitHub stand-in: every PR state, the exact
//! report, close and merge with and without a dry run, and the attacks on branch deletion and
//! merging what was not checked.

use crate::common::mock_github::{MockGithub, MockPr, WRITER, review};
use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub(crate) const BRANCH: &str = "hone/prsjob";

/// The run's report of repository `id` in the fleet's workspace (`ws`), as `hone fleet` leaves it,
/// saying its run pushed `sha` to `BRANCH`.
pub(crate) fn pushed(dir: &Path, id: &str, sha: &str) {
    let reports = dir.join("ws/reports").join(id);
    std::fs::create_dir_all(&reports).unwrap();
    let report = json!({"schema_version": 1, "status": "success", "branch": BRANCH, "base_branch": "main",
        "commit": {"sha": sha, "branch": BRANCH},
        "pr": {"forge": "github", "operation": "created", "number": 1, "url": null, "pushed": true,
            "pushed_sha": sha, "dry_run": false, "notice": null, "warnings": [], "retries": 0}});
    std::fs::write(reports.join("report.json"), serde_json::to_string_pretty(&report).unwrap()).unwrap();
}

/// A fleet file naming `https://github.com/acme/<name>` for each of `names`, its job, and a
/// fleet.json (in `out/`) recording PR `number` on `BRANCH` for each, as `hone fleet` writes it;
/// each repository's report (in `ws/reports/<id>`) says its run pushed the stand-in's head of
/// PR `number` (`MockPr::open`'s).
pub(crate) fn fleet_with_prs(dir: &Path, prs: &[(&str, u64)]) -> PathBuf {
    for (n, num) in prs {
        pushed(dir, &format!("acme__{n}"), &format!("{num:0>40}"));
    }
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.join("job.yaml"),
        "version: 1\nname: prsjob\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nplan: false\n",
    )
    .unwrap();
    let repos: Vec<String> = prs.iter().map(|(n, _)| format!("  - url: https://github.com/acme/{n}")).collect();
    let fleet = dir.join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nworkspace: ws\nout: out\nconcurrency: 4\n", repos.join("\n")),
    )
    .unwrap();
    let results: Vec<Value> = prs
        .iter()
        .map(|(n, num)| {
            json!({
                "id": format!("acme__{n}"), "source": format!("https://github.com/acme/{n}"), "status": "pr_created",
                "code": null, "error": null, "pr_url": format!("https://github.com/acme/{n}/pull/{num}"),
                "pr_number": num, "pr_forge": "github", "branch": BRANCH, "duration_ms": 1, "tokens": 0,
                "report_dir": "ws/reports/x", "job_hash": "h"
            })
        })
        .collect();
    let report = json!({"schema_version": 1, "job": "prsjob", "job_hash": "h", "started_at": "t", "duration_ms": 1,
        "exit_code": 0, "counts": {"pr_created": prs.len()}, "repos": results});
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/fleet.json"), serde_json::to_string_pretty(&report).unwrap()).unwrap();
    fleet
}

/// `hone fleet prs ARGS… FLEET` against the stand-in.
pub(crate) async fn prs(gh: &MockGithub, fleet: &Path, args: &[&str]) -> Run {
    let mut all = vec!["fleet", "prs"];
    all.extend_from_slice(&args[..1]);
    all.push(fleet.to_str().unwrap());
    all.extend_from_slice(&args[1..]);
    let env: Vec<(&str, String)> = gh.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_hone_env(&all, &[], fleet.parent().unwrap().join("out"), &env).await
}

pub(crate) fn report(dir: &Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(format!("out/prs-{name}.json"))).unwrap()).unwrap()
}

/// The report's entry for repository `name`.
pub(crate) fn entry<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["prs"].as_array().unwrap().iter().find(|p| p["id"] == format!("acme__{name}")).unwrap()
}

/// The requests that change something, as `METHOD path` (a GraphQL query changes nothing).
pub(crate) fn mutations(gh: &MockGithub) -> Vec<String> {
    gh.seen().iter().filter(|s| s.method != "GET" && !query(s)).map(|s| format!("{} {}", s.method, s.path)).collect()
}

/// Whether a request is a GraphQL query (reading), not a mutation.
fn query(s: &crate::common::mock_github::Seen) -> bool {
    s.path == "/graphql" && s.body["query"].as_str().is_some_and(|q| q.starts_with("query"))
}

/// Eight PRs, one in each state that matters.
fn seed_every_state(gh: &MockGithub) {
    let mut merged = MockPr::open(1, BRANCH);
    (merged.state, merged.merged) = ("closed".into(), true);
    gh.seed("acme/a-merged", merged);
    let mut closed = MockPr::open(2, BRANCH);
    closed.state = "closed".into();
    gh.seed("acme/b-closed", closed);
    gh.seed("acme/c-ready", MockPr::open(3, BRANCH));
    let mut draft = MockPr::open(4, BRANCH);
    draft.draft = true;
    gh.seed("acme/d-draft", draft);
    let mut failing = MockPr::open(5, BRANCH);
    failing.check_runs =
        vec![("completed".into(), Some("success".into())), ("completed".into(), Some("failure".into()))];
    failing.mergeable_state = "unstable".into();
    gh.seed("acme/e-failing", failing);
    gh.seed("acme/f-queue", MockPr::open(6, BRANCH));
    gh.with_repo("acme/f-queue", |r| r.merge_queue = true);
    let mut changes = MockPr::open(7, BRANCH);
    changes.reviews = vec![review("x", "APPROVED", WRITER), review("y", "CHANGES_REQUESTED", WRITER)];
    changes.mergeable_state = "blocked".into();
    gh.seed("acme/g-changes", changes);
    let mut unknown = MockPr::open(8, BRANCH);
    (unknown.mergeable, unknown.mergeable_state) = (None, "unknown".into());
    unknown.check_runs = vec![("in_progress".into(), None)];
    unknown.reviews = vec![];
    gh.seed("acme/h-unknown", unknown);
    gh.with_repo("acme/h-unknown", |r| r.required_reviews = 1);
}

const EVERY_STATE: [(&str, u64); 8] = [
    ("a-merged", 1),
    ("b-closed", 2),
    ("c-ready", 3),
    ("d-draft", 4),
    ("e-failing", 5),
    ("f-queue", 6),
    ("g-changes", 7),
    ("h-unknown", 8),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_every_state_checks_reviews_and_the_merge_queue_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    seed_every_state(&gh);
    let fleet = fleet_with_prs(dir.path(), &EVERY_STATE);
    let run = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(run.code, 4, "some PRs are open: {}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("hone fleet prs status: 8 PRs:"), "{}", run.stdout);
    let r = report(dir.path(), "status");
    // Each open PR is hone's (opened by the token's user, on the job's branch, at the commit its
    // run pushed); its reason is what keeps it from merging.
    let open = |n: &str, num: u64, checks: &str, review: &str, m: &str, ms: &str, q: bool, why: Value| {
        json!({"id": format!("acme__{n}"), "source": format!("https://github.com/acme/{n}"), "forge": "github",
            "number": num, "url": format!("https://github.example/acme/{n}/pull/{num}"), "state": "open",
            "closed_by_hone": false, "checks": checks, "review": review, "mergeable": m, "mergeable_state": ms,
            "merge_queue": q, "age_days": 3, "head_sha": format!("{num:0>40}"), "author": "hone-bot",
            "pushed_sha": format!("{num:0>40}"), "owned": "hones", "action": null, "reason": why,
            "branch_deleted": null, "code": null, "error": null, "resumed": false, "dry_run": false})
    };
    let shut = |n: &str, num: u64, state: &str| {
        json!({"id": format!("acme__{n}"), "source": format!("https://github.com/acme/{n}"), "forge": "github",
            "number": num, "url": format!("https://github.example/acme/{n}/pull/{num}"), "state": state,
            "closed_by_hone": false, "checks": null, "review": null, "mergeable": null, "mergeable_state": null,
            "merge_queue": null, "age_days": 3, "head_sha": null, "author": "hone-bot", "pushed_sha": null,
            "owned": null, "action": null, "reason": null,
            "branch_deleted": null, "code": null, "error": null, "resumed": false, "dry_run": false})
    };
    let mut draft = open("d-draft", 4, "passing", "approved", "mergeable", "clean", false, json!("a draft"));
    draft["state"] = json!("draft");
    let expected = json!([
        shut("a-merged", 1, "merged"),
        shut("b-closed", 2, "closed"),
        open("c-ready", 3, "passing", "approved", "mergeable", "clean", false, Value::Null),
        draft,
        open("e-failing", 5, "failing", "approved", "mergeable", "unstable", false, json!("checks failing")),
        open("f-queue", 6, "passing", "approved", "mergeable", "clean", true, Value::Null),
        open("g-changes", 7, "passing", "changes_requested", "mergeable", "blocked", false, json!("changes requested")),
        open("h-unknown", 8, "pending", "review_required", "unknown", "unknown", false, json!("checks pending")),
    ]);
    assert_eq!(r["prs"], expected, "{:#}", r["prs"]);
    assert_eq!(r["counts"], json!({"closed": 1, "draft": 1, "merged": 1, "open": 5}));
    // The fewest requests GitHub allows: one GET for a merged or closed PR; for an open one, the
    // PR, its check runs, its statuses, its reviews, its review decision (GraphQL) and its base
    // branch's rules; and once, who the token is.
    assert_eq!(r["requests"], 2 + 6 * 6 + 1);
    assert_eq!(gh.seen().len(), 39, "{:#?}", gh.seen());
    assert_eq!(gh.count("GET", "/user"), 1, "the identity is asked once");
    assert!(mutations(&gh).is_empty(), "status changes nothing: {:?}", mutations(&gh));
    let md = std::fs::read_to_string(dir.path().join("out/prs-status.md")).unwrap();
    assert!(md.contains("| Repository | PR | State | Checks | Review | Mergeable | Age | Action | Note |"), "{md}");
    assert!(md.contains("[#5](https://github.example/acme/e-failing/pull/5) | open | failing |"), "{md}");
    // The pictures: the PRs' states, and the checks of the open ones, as Mermaid reads them.
    let Some(blocks) = crate::common::mermaid::parse(&[&dir.path().join("out/prs-status.md")]) else { return };
    let sum = |b: &Value| b["items"].as_array().unwrap().iter().map(|s| s[1].as_u64().unwrap()).sum::<u64>();
    let pies: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "pie").collect();
    assert_eq!(pies.len(), 2, "{md}");
    assert_eq!((sum(pies[0]), sum(pies[1])), (8, 6), "every PR's state, the open ones' checks: {md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_says_why_deletes_hones_branch_and_status_counts_it_closed_by_choice() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    gh.seed("acme/one", MockPr::open(11, BRANCH));
    let mut merged = MockPr::open(12, BRANCH);
    (merged.state, merged.merged) = ("closed".into(), true);
    gh.seed("acme/two", merged);
    let fleet = fleet_with_prs(dir.path(), &[("one", 11), ("two", 12)]);

    let dry = prs(&gh, &fleet, &["close", "--dry-run"]).await;
    assert_eq!(dry.code, 4, "{}\n{}", dry.stdout, dry.stderr);
    assert!(mutations(&gh).is_empty(), "a dry run changes nothing: {:?}", mutations(&gh));
    let r = report(dir.path(), "close");
    assert_eq!(entry(&r, "one")["action"], "would_close");
    assert_eq!(entry(&r, "one")["reason"], format!("would comment, close it and delete its branch `{BRANCH}`"));
    assert_eq!(entry(&r, "two")["action"], "skipped");
    assert_eq!(gh.pr("acme/one", 11).state, "open");

    let run = prs(&gh, &fleet, &["close", "--reason", "Superseded by the v2 migration."]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let pr = gh.pr("acme/one", 11);
    assert_eq!(pr.state, "closed");
    assert_eq!(pr.comments, ["Superseded by the v2 migration.\n\nClosed by `hone fleet prs close`."]);
    assert!(!gh.branches("acme/one").contains(BRANCH), "hone's branch is deleted");
    assert!(gh.branches("acme/one").contains("main"));
    let r = report(dir.path(), "close");
    assert_eq!(
        (entry(&r, "one")["action"].clone(), entry(&r, "one")["branch_deleted"].clone()),
        (json!("closed"), json!(true))
    );
    let ledger: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/prs-closed.json")).unwrap()).unwrap();
    assert_eq!(ledger["closed"][0]["id"], "acme__one");

    let status = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(status.code, 0, "merged or closed by choice: {}\n{}", status.stdout, status.stderr);
    let r = report(dir.path(), "status");
    assert_eq!(r["counts"], json!({"closed_by_choice": 1, "merged": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_never_deletes_a_branch_the_api_names_main_or_a_forks() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    // GitHub's answer says the head is `main`: not the job's branch, so not hone's to close.
    let mut main_head = MockPr::open(21, "main");
    main_head.base_ref = "develop".into();
    gh.seed("acme/main-head", main_head);
    // The head is a fork's branch with hone's branch name; the repository has a `hone/prsjob` too.
    let mut fork = MockPr::open(22, BRANCH);
    fork.head_repo = Some("mallory/fork-head".into());
    gh.seed("acme/fork-head", fork);
    gh.with_repo("acme/fork-head", |r| r.branches.insert(BRANCH.to_string(), format!("{:0>40}", 22)));
    let fleet = fleet_with_prs(dir.path(), &[("main-head", 21), ("fork-head", 22)]);
    let run = prs(&gh, &fleet, &["close"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(mutations(&gh).is_empty(), "nothing closed or deleted: {:?}", mutations(&gh));
    assert!(gh.branches("acme/main-head").contains("main"));
    assert!(gh.branches("acme/fork-head").contains(BRANCH));
    let r = report(dir.path(), "close");
    for (name, why) in [
        ("main-head", "not the job's branch: its head is `main`"),
        ("fork-head", "not hone's PR: its head is in another repository (`mallory/fork-head`)"),
    ] {
        let e = entry(&r, name);
        assert_eq!((e["action"].clone(), e["branch_deleted"].clone()), (json!("skipped"), Value::Null), "{e:#}");
        assert!(e["reason"].as_str().unwrap().starts_with(why), "{e:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_dry_run_then_merge_at_the_checked_head_and_queue_where_a_queue_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    seed_every_state(&gh);
    let fleet = fleet_with_prs(dir.path(), &EVERY_STATE);
    let dry = prs(&gh, &fleet, &["merge", "--dry-run"]).await;
    assert_eq!(dry.code, 4, "{}\n{}", dry.stdout, dry.stderr);
    assert!(mutations(&gh).is_empty(), "a dry run changes nothing: {:?}", mutations(&gh));
    let r = report(dir.path(), "merge");
    let said = |r: &Value, n: &str| {
        (entry(r, n)["action"].as_str().unwrap().to_string(), entry(r, n)["reason"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(said(&r, "c-ready"), ("would_merge".into(), "would merge it at 000000000000".into()));
    assert_eq!(said(&r, "f-queue").0, "would_queue");
    for (n, why) in [
        ("a-merged", "already merged"),
        ("b-closed", "closed"),
        ("d-draft", "a draft"),
        ("e-failing", "checks failing"),
        ("g-changes", "changes requested"),
        ("h-unknown", "checks pending"),
    ] {
        assert_eq!(said(&r, n), ("skipped".into(), why.into()), "{n}");
    }

    let run = prs(&gh, &fleet, &["merge", "--method", "squash"]).await;
    assert_eq!(run.code, 4, "the others stay open: {}\n{}", run.stdout, run.stderr);
    assert!(gh.pr("acme/c-ready", 3).merged);
    assert!(gh.pr("acme/f-queue", 6).queued && !gh.pr("acme/f-queue", 6).merged);
    let puts: Vec<_> = gh.seen().into_iter().filter(|s| s.method == "PUT").collect();
    assert_eq!(puts.len(), 1, "only the ready PR is merged by REST: {puts:#?}");
    assert_eq!(puts[0].path, "/repos/acme/c-ready/pulls/3/merge");
    assert_eq!(
        puts[0].body,
        json!({"sha": format!("{:0>40}", 3), "merge_method": "squash"}),
        "held to the head it checked"
    );
    let gql: Vec<_> = gh.seen().into_iter().filter(|s| s.path == "/graphql" && !query(s)).collect();
    assert_eq!(gql.len(), 1);
    assert_eq!(gql[0].body["variables"], json!({"id": "PR_node6", "sha": format!("{:0>40}", 6)}));
    let r = report(dir.path(), "merge");
    assert_eq!(said(&r, "c-ready").0, "merged");
    assert_eq!(said(&r, "f-queue").0, "queued");
    assert_eq!(entry(&r, "c-ready")["state"], "merged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pr_whose_head_moved_after_it_was_checked_is_refused_not_merged() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    gh.seed("acme/moving", MockPr::open(31, BRANCH));
    gh.move_head_after_read("acme/moving", 31);
    let fleet = fleet_with_prs(dir.path(), &[("moving", 31)]);
    let run = prs(&gh, &fleet, &["merge"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let pr = gh.pr("acme/moving", 31);
    assert!(!pr.merged && pr.state == "open", "a head pushed after the check is never merged");
    let put = gh.seen().into_iter().find(|s| s.method == "PUT").expect("the merge was asked");
    assert_eq!(put.body["sha"], format!("{:0>40}", 31), "the head hone checked, not the new one");
    let e = entry(&report(dir.path(), "merge"), "moving").clone();
    assert_eq!(e["action"], "refused");
    assert_eq!(
        e["reason"],
        "GitHub refused the merge (HTTP 409): Head branch was modified. Review and try the merge again."
    );
    assert_eq!(gh.count("PUT", "/"), 1, "a refusal is reported, not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_target_without_a_gitlab_token_is_an_error_and_github_is_never_asked() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_with_prs(dir.path(), &[("lab", 5)]);
    let text = std::fs::read_to_string(&fleet).unwrap().replace("https://github.com/", "https://gitlab.com/");
    std::fs::write(&fleet, text).unwrap();
    let run = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let e = entry(&report(dir.path(), "status"), "lab").clone();
    assert_eq!((e["forge"].clone(), e["code"].clone()), (json!("gitlab"), json!("E_FORGE")), "{e:#}");
    assert!(e["error"].as_str().unwrap().contains("no token for the GitLab API"), "{e:#}");
    assert!(gh.seen().is_empty(), "nothing was asked of GitHub, and its token went nowhere");
}
