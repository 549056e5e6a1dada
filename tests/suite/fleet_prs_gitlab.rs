//! `hone fleet prs status|close|merge` against the GitLab stand-in: merge requests in every state
//! with the exact report, one GET each; close with a note first and hone's own branch deleted
//! (never a fork's, never another branch); merge held to the head it read, refused when the head
//! moved. Every request is checked against GitLab's API description.

use super::fleet_prs::{BRANCH, entry, pushed, report};
use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const TOKEN: &str = "glpat-prscanary0123456789";
/// The token's user: the campaign's identity, which opens hone's merge requests.
pub(crate) const BOT: &str = "hone-bot";

pub(crate) struct Lab {
    pub dir: tempfile::TempDir,
    pub gl: MockGitLab,
    pub fleet: PathBuf,
}

/// A repository with `main`, hone's branch and `feature`, each one commit ahead of `main`.
fn source_repo(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    repo::git(&src, &["init", "-q"]);
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    repo::git(&src, &["add", "."]);
    repo::git(&src, &["commit", "-qm", "base"]);
    for b in [BRANCH, "feature"] {
        repo::git(&src, &["checkout", "-qb", b, "main"]);
        std::fs::write(src.join("a.txt"), format!("{b}\n")).unwrap();
        repo::git(&src, &["commit", "-qam", b]);
    }
    repo::git(&src, &["checkout", "-q", "main"]);
    src
}

/// The stand-in with project `acme/<name>` for each name, a token (of `BOT`) that sees them all,
/// and a fleet file (GitLab URLs) with its job and fleet.json recording merge request `iid` on
/// `BRANCH` for each of `prs`; each project's run report says it pushed `BRANCH`'s head.
pub(crate) async fn lab(names: &[&str], prs: &[(&str, u64)]) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(&dir.path().join("gitlab")).await;
    let src = source_repo(dir.path());
    for n in names {
        gl.add_project(&format!("acme/{n}"), &src);
    }
    gl.add_token(TOKEN, Token { kind: Kind::Personal, scopes: &["api"], user: BOT, project: None });
    for n in names {
        pushed(dir.path(), &format!("acme__{n}"), &gl.head(&format!("acme/{n}"), BRANCH).unwrap());
    }
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: prsjob\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\nforge: {{ gitlab_url: \"{}\" }}\ngit: {{ token_env: GL_BOT }}\n",
        gl.base
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let repos: Vec<String> =
        prs.iter().map(|(n, _)| format!("  - url: {}", gl.git_url(&format!("acme/{n}")))).collect();
    let fleet = dir.path().join("fleet.yaml");
    let text =
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nworkspace: ws\nout: out\nconcurrency: 4\n", repos.join("\n"));
    std::fs::write(&fleet, text).unwrap();
    let results: Vec<Value> = prs
        .iter()
        .map(|(n, iid)| {
            json!({
                "id": format!("acme__{n}"), "source": gl.git_url(&format!("acme/{n}")), "status": "pr_created",
                "code": null, "error": null, "pr_url": format!("{}/acme/{n}/-/merge_requests/{iid}", gl.base),
                "pr_number": iid, "pr_forge": "gitlab", "branch": BRANCH, "duration_ms": 1, "tokens": 0,
                "report_dir": "ws/reports/x", "job_hash": "h"
            })
        })
        .collect();
    let report = json!({"schema_version": 1, "job": "prsjob", "job_hash": "h", "started_at": "t", "duration_ms": 1,
        "exit_code": 0, "counts": {"pr_created": prs.len()}, "repos": results});
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out/fleet.json"), serde_json::to_string_pretty(&report).unwrap()).unwrap();
    Lab { dir, gl, fleet }
}

impl Lab {
    /// An open merge request by `BOT` into `acme/<name>`'s `main` from `branch` (of `from`, a
    /// fork, or the project itself), opened three days ago; its iid.
    pub fn mr(&self, name: &str, branch: &str, from: Option<&str>) -> u64 {
        self.mr_by(name, branch, from, BOT)
    }

    /// The same, opened by `author`.
    pub fn mr_by(&self, name: &str, branch: &str, from: Option<&str>, author: &str) -> u64 {
        let project = format!("acme/{name}");
        let iid = self.gl.add_mr(&project, branch, "main", "Fix check.sh", author, from);
        let three_days = time::OffsetDateTime::now_utc() - time::Duration::days(3) - time::Duration::hours(1);
        let at = three_days.format(&time::format_description::well_known::Rfc3339).unwrap();
        self.gl.with_mr(&project, iid, |m| m.created_at = at);
        iid
    }

    pub async fn prs(&self, args: &[&str]) -> Run {
        let mut all = vec!["fleet", "prs"];
        all.extend_from_slice(&args[..1]);
        all.push(self.fleet.to_str().unwrap());
        all.extend_from_slice(&args[1..]);
        let ca = test_ca().display().to_string();
        let env = [("GL_BOT", TOKEN), ("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
        let run = run_hone_env(&all, &[], self.dir.path().join("out"), &env).await;
        assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN), "the token is never printed");
        run
    }

    pub fn report(&self, name: &str) -> Value {
        report(self.dir.path(), name)
    }

    /// The requests that change something, as `METHOD path`.
    pub fn mutations(&self) -> Vec<String> {
        self.gl.requests().iter().filter(|s| s.method != "GET").map(|s| format!("{} {}", s.method, s.path)).collect()
    }

    pub fn clean(&self) {
        assert!(self.gl.violations().is_empty(), "{:#?}", self.gl.violations());
    }
}

const EVERY_STATE: [&str; 9] =
    ["a-merged", "b-closed", "c-ready", "d-draft", "e-failing", "f-running", "g-approval", "h-conflict", "i-nopipe"];

/// One merge request in each state that matters, each its project's first (iid 1).
async fn every_state() -> Lab {
    let prs: Vec<(&str, u64)> = EVERY_STATE.iter().map(|n| (*n, 1)).collect();
    let lab = lab(&EVERY_STATE, &prs).await;
    for n in EVERY_STATE {
        lab.mr(n, BRANCH, None);
    }
    let set = |n: &str, f: &dyn Fn(&mut crate::common::mock_gitlab::Mr)| lab.gl.with_mr(&format!("acme/{n}"), 1, f);
    set("a-merged", &|m| (m.state, m.merged_at) = ("merged".into(), Some("2026-01-02T00:00:00.000Z".into())));
    set("b-closed", &|m| m.state = "closed".into());
    set("c-ready", &|m| m.pipeline = Some("success".into()));
    set("d-draft", &|m| (m.title, m.pipeline) = ("Draft: Fix check.sh".into(), Some("success".into())));
    set("e-failing", &|m| m.pipeline = Some("failed".into()));
    set("f-running", &|m| m.pipeline = Some("running".into()));
    set("g-approval", &|m| (m.pipeline, m.merge_status) = (Some("success".into()), Some("not_approved".into())));
    set("h-conflict", &|m| (m.pipeline, m.merge_status) = (Some("success".into()), Some("conflict".into())));
    lab
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_status_reports_every_merge_request_state_exactly_in_the_fewest_requests() {
    let lab = every_state().await;
    let run = lab.prs(&["status"]).await;
    assert_eq!(run.code, 4, "some are open: {}\n{}", run.stdout, run.stderr);
    let base = lab.gl.base.clone();
    let one = |n: &str, state: &str| {
        json!({"id": format!("acme__{n}"), "source": lab.gl.git_url(&format!("acme/{n}")), "forge": "gitlab",
            "number": 1, "url": format!("{base}/acme/{n}/-/merge_requests/1"), "state": state,
            "closed_by_hone": false, "checks": null, "review": null, "mergeable": null, "mergeable_state": null,
            "merge_queue": null, "age_days": 3, "head_sha": null, "author": BOT, "pushed_sha": null,
            "owned": null, "action": null, "reason": null,
            "branch_deleted": null, "code": null, "error": null, "resumed": false, "dry_run": false})
    };
    // Each open one is hone's; its reason is what keeps it from merging.
    let open = |n: &str, state: &str, checks: &str, review: &str, m: &str, status: &str, why: Value| {
        let mut v = one(n, state);
        let head = lab.gl.head(&format!("acme/{n}"), BRANCH).unwrap();
        for (k, x) in [("checks", checks), ("review", review), ("mergeable", m), ("mergeable_state", status)] {
            v[k] = json!(x);
        }
        (v["head_sha"], v["pushed_sha"], v["owned"], v["reason"]) = (json!(head), json!(head), json!("hones"), why);
        v
    };
    let expected = json!([
        one("a-merged", "merged"),
        one("b-closed", "closed"),
        open("c-ready", "open", "passing", "none", "mergeable", "mergeable", Value::Null),
        open("d-draft", "draft", "passing", "none", "mergeable", "draft_status", json!("a draft")),
        open("e-failing", "open", "failing", "none", "mergeable", "ci_must_pass", json!("pipeline failed")),
        open("f-running", "open", "pending", "none", "mergeable", "ci_still_running", json!("pipeline running")),
        open("g-approval", "open", "passing", "review_required", "mergeable", "not_approved", json!("review required")),
        open("h-conflict", "open", "passing", "none", "conflicting", "conflict", json!("conflicts with its target")),
        open("i-nopipe", "open", "pending", "none", "mergeable", "mergeable", json!("no pipeline for its head")),
    ]);
    let r = lab.report("status");
    assert_eq!(r["prs"], expected, "{:#}", r["prs"]);
    assert_eq!(r["counts"], json!({"closed": 1, "draft": 1, "merged": 1, "open": 6}));
    // One GET a merge request; an open one's approvals; once, who the token is.
    assert_eq!(r["requests"], 9 + 7 + 1);
    assert_eq!(lab.gl.requests().len(), 17, "{:#?}", lab.gl.requests());
    assert!(lab.mutations().is_empty(), "status changes nothing: {:?}", lab.mutations());
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_close_notes_why_closes_deletes_hones_branch_and_status_counts_it_closed_by_choice() {
    let lab = lab(&["one", "two"], &[("one", 1), ("two", 1)]).await;
    lab.mr("one", BRANCH, None);
    lab.mr("two", BRANCH, None);
    lab.gl.with_mr("acme/two", 1, |m| m.state = "merged".into());

    let dry = lab.prs(&["close", "--dry-run"]).await;
    assert_eq!(dry.code, 4, "{}\n{}", dry.stdout, dry.stderr);
    assert!(lab.mutations().is_empty(), "a dry run changes nothing: {:?}", lab.mutations());
    let r = lab.report("close");
    assert_eq!(entry(&r, "one")["action"], "would_close");
    assert_eq!(entry(&r, "one")["reason"], format!("would comment, close it and delete its branch `{BRANCH}`"));
    assert_eq!(
        (entry(&r, "two")["action"].clone(), entry(&r, "two")["reason"].clone()),
        (json!("skipped"), json!("already merged"))
    );

    let run = lab.prs(&["close", "--reason", "Superseded by the v2 migration."]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let branch = BRANCH.replace('/', "%2F");
    assert_eq!(
        lab.mutations(),
        [
            "POST /api/v4/projects/acme%2Fone/merge_requests/1/notes".to_string(),
            "PUT /api/v4/projects/acme%2Fone/merge_requests/1".into(),
            format!("DELETE /api/v4/projects/acme%2Fone/repository/branches/{branch}"),
        ],
        "the note first, then close, then hone's branch"
    );
    let put = lab.gl.requests().into_iter().find(|s| s.method == "PUT").unwrap();
    assert_eq!(put.body, json!({"state_event": "close"}));
    assert_eq!(lab.gl.mrs("acme/one")[0]["state"], "closed");
    let notes: Vec<Value> = lab.gl.notes("acme/one", 1).iter().map(|n| n["body"].clone()).collect();
    assert_eq!(notes, [json!("Superseded by the v2 migration.\n\nClosed by `hone fleet prs close`.")]);
    let branches = lab.gl.branches("acme/one");
    assert!(!branches.contains(&BRANCH.to_string()) && branches.contains(&"main".to_string()), "{branches:?}");
    let e = entry(&lab.report("close"), "one").clone();
    assert_eq!((e["action"].clone(), e["branch_deleted"].clone()), (json!("closed"), json!(true)), "{e:#}");

    let status = lab.prs(&["status"]).await;
    assert_eq!(status.code, 0, "merged or closed by choice: {}\n{}", status.stdout, status.stderr);
    assert_eq!(lab.report("status")["counts"], json!({"closed_by_choice": 1, "merged": 1}));
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_close_never_deletes_a_forks_branch_or_a_branch_hone_did_not_push() {
    let lab = lab(&["fork-head", "other-branch"], &[("fork-head", 1), ("other-branch", 1)]).await;
    // A fork's merge request from a branch named like hone's; the project has hone's branch too.
    lab.gl.fork("acme/fork-head", "mallory/app");
    lab.mr("fork-head", BRANCH, Some("mallory/app"));
    // GitLab's answer names `feature` as the source branch, not the job's.
    lab.mr("other-branch", "feature", None);
    let run = lab.prs(&["close"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(lab.mutations().is_empty(), "nothing noted, closed or deleted: {:?}", lab.mutations());
    assert!(lab.gl.branches("acme/fork-head").contains(&BRANCH.to_string()));
    assert!(lab.gl.branches("mallory/app").contains(&BRANCH.to_string()));
    assert!(lab.gl.branches("acme/other-branch").contains(&"feature".to_string()));
    let r = lab.report("close");
    for (name, why) in [
        ("fork-head", "not hone's PR: its head is in another repository"),
        ("other-branch", "not the job's branch: its head is `feature`"),
    ] {
        let e = entry(&r, name);
        assert_eq!((e["action"].clone(), e["branch_deleted"].clone()), (json!("skipped"), Value::Null), "{e:#}");
        assert!(e["reason"].as_str().unwrap().starts_with(why), "{e:#}");
        assert_eq!(lab.gl.mrs(&format!("acme/{name}"))[0]["state"], "opened");
    }
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_merge_dry_run_then_merge_at_the_head_it_read() {
    let lab = every_state().await;
    let dry = lab.prs(&["merge", "--dry-run"]).await;
    assert_eq!(dry.code, 4, "{}\n{}", dry.stdout, dry.stderr);
    assert!(lab.mutations().is_empty(), "a dry run changes nothing: {:?}", lab.mutations());
    let said = |r: &Value, n: &str| {
        (entry(r, n)["action"].as_str().unwrap().to_string(), entry(r, n)["reason"].as_str().unwrap_or("").to_string())
    };
    let head = lab.gl.head("acme/c-ready", BRANCH).unwrap();
    let r = lab.report("merge");
    assert_eq!(said(&r, "c-ready"), ("would_merge".into(), format!("would merge it at {}", &head[..12])));
    for (n, why) in [
        ("a-merged", "already merged"),
        ("b-closed", "closed"),
        ("d-draft", "a draft"),
        ("e-failing", "pipeline failed"),
        ("f-running", "pipeline running"),
        ("g-approval", "review required"),
        ("h-conflict", "conflicts with its target"),
        ("i-nopipe", "no pipeline for its head"),
    ] {
        assert_eq!(said(&r, n), ("skipped".into(), why.into()), "{n}");
    }

    let run = lab.prs(&["merge", "--method", "squash"]).await;
    assert_eq!(run.code, 4, "the others stay open: {}\n{}", run.stdout, run.stderr);
    let puts: Vec<_> = lab.gl.requests().into_iter().filter(|s| s.method != "GET").collect();
    assert_eq!(puts.len(), 1, "only the ready one is merged: {puts:#?}");
    assert_eq!(puts[0].path, "/api/v4/projects/acme%2Fc-ready/merge_requests/1/merge");
    assert_eq!(puts[0].body, json!({"sha": head, "squash": true}), "held to the head it read");
    assert_eq!(lab.gl.mrs("acme/c-ready")[0]["state"], "merged");
    let r = lab.report("merge");
    assert_eq!(said(&r, "c-ready"), ("merged".into(), format!("merged (squash) at {}", &head[..12])));
    assert_eq!(entry(&r, "c-ready")["state"], "merged");
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_a_merge_request_whose_head_moved_after_it_was_read_is_refused_not_merged() {
    let lab = lab(&["moving"], &[("moving", 1)]).await;
    lab.mr("moving", BRANCH, None);
    let read = lab.gl.head("acme/moving", BRANCH).unwrap();
    lab.gl.with_mr("acme/moving", 1, |m| (m.pipeline, m.move_head_after_read) = (Some("success".into()), true));
    let run = lab.prs(&["merge"]).await;
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let moved = lab.gl.head("acme/moving", BRANCH).unwrap();
    assert_ne!(read, moved);
    assert_eq!(lab.gl.mrs("acme/moving")[0]["state"], "opened", "a head pushed after the read is never merged");
    let puts: Vec<_> = lab.gl.requests().into_iter().filter(|s| s.method == "PUT").collect();
    assert_eq!(puts.len(), 1, "a refusal is reported, not retried: {puts:#?}");
    assert_eq!(puts[0].body, json!({"sha": read}), "the head hone read, not the new one");
    let e = entry(&lab.report("merge"), "moving").clone();
    assert_eq!(e["action"], "refused");
    assert_eq!(
        e["reason"],
        format!("GitLab refused the merge (HTTP 409): SHA does not match HEAD of source branch: {moved}")
    );
    lab.clean();
}
