//! `hone fleet` on Forgejo: `hone fleet prs status|merge|close` on PRs in every state that
//! matters (open and green, open with a failing check, merged, closed, someone else's), and an
//! organisation listed by a fleet file's `forgejo: { org: … }` query. Every request is checked
//! against Forgejo's API description.

use super::fleet_prs::{BRANCH, entry, pushed, report};
use super::forgejo::{BOT, TOKEN, branch_on, forge_spec};
use crate::common::git_http::test_ca;
use crate::common::mock_forgejo::MockForgejo;
use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct Lab {
    dir: tempfile::TempDir,
    fj: MockForgejo,
    fleet: PathBuf,
}

/// A repository with `main` and hone's branch one commit ahead.
fn source_repo(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    repo::git(&src, &["init", "-q", "-b", "main"]);
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    repo::git(&src, &["add", "."]);
    repo::git(&src, &["commit", "-qm", "base"]);
    repo::git(&src, &["checkout", "-qb", BRANCH, "main"]);
    std::fs::write(src.join("a.txt"), "b\n").unwrap();
    repo::git(&src, &["commit", "-qam", BRANCH]);
    repo::git(&src, &["checkout", "-q", "main"]);
    src
}

const NAMES: [&str; 5] = ["a-ready", "b-failing", "c-merged", "d-closed", "e-theirs"];

/// `acme/<name>` for each of `NAMES`, PR #1 in each from `BRANCH` (by `BOT`, but `e-theirs`'s
/// by mallory), the fleet file and fleet.json naming them, each run's report the head it pushed.
async fn lab() -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let fj = MockForgejo::start(&dir.path().join("forgejo")).await;
    let src = source_repo(dir.path());
    fj.add_token(TOKEN, BOT);
    for n in NAMES {
        let full = format!("acme/{n}");
        fj.add_repo(&full, &src);
        fj.add_writer(&full, BOT);
        let head = branch_on(&fj, &full, BRANCH).unwrap();
        pushed(dir.path(), &format!("acme__{n}"), &head);
        let author = if n == "e-theirs" { "mallory" } else { BOT };
        fj.add_pull(&full, BRANCH, "main", "Fix check.sh", author, None);
        let state = match n {
            "a-ready" | "e-theirs" => "success",
            "b-failing" => "failure",
            _ => "success",
        };
        fj.set_status(&full, &head, "ci", state);
    }
    fj.end_pull("acme/c-merged", 1, true);
    fj.end_pull("acme/d-closed", 1, false);
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: prsjob\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\n{}",
        forge_spec(&fj.base)
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let repos: Vec<String> = NAMES.iter().map(|n| format!("  - url: {}", fj.git_url(&format!("acme/{n}")))).collect();
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nworkspace: ws\nout: out\n", repos.join("\n")),
    )
    .unwrap();
    let results: Vec<Value> = NAMES
        .iter()
        .map(|n| {
            json!({"id": format!("acme__{n}"), "source": fj.git_url(&format!("acme/{n}")), "status": "pr_created",
                "code": null, "error": null, "pr_url": format!("{}/acme/{n}/pulls/1", fj.base), "pr_number": 1,
                "pr_forge": "forgejo", "branch": BRANCH, "duration_ms": 1, "tokens": 0, "report_dir": "ws/reports/x", "job_hash": "h"})
        })
        .collect();
    let fleet_json = json!({"schema_version": 1, "job": "prsjob", "job_hash": "h", "started_at": "t", "duration_ms": 1,
        "exit_code": 0, "counts": {"pr_created": NAMES.len()}, "repos": results});
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out/fleet.json"), serde_json::to_string_pretty(&fleet_json).unwrap()).unwrap();
    Lab { dir, fj, fleet }
}

impl Lab {
    async fn prs(&self, args: &[&str]) -> Run {
        let mut all = vec!["fleet", "prs", args[0], self.fleet.to_str().unwrap()];
        all.extend_from_slice(&args[1..]);
        let ca = test_ca().display().to_string();
        let env = [("FORGEJO_TOKEN", TOKEN), ("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
        let run = run_hone_env(&all, &[], self.dir.path().join("out"), &env).await;
        assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN), "the token is never printed");
        assert!(self.fj.violations().is_empty(), "{:#?}", self.fj.violations());
        run
    }

    fn mutations(&self) -> Vec<String> {
        self.fj.requests().iter().filter(|s| s.method != "GET").map(|s| format!("{} {}", s.method, s.path)).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reads_every_state_and_changes_nothing() {
    let lab = lab().await;
    let run = lab.prs(&["status"]).await;
    assert_eq!(run.code, 4, "some are open: {}\n{}", run.stdout, run.stderr);
    let r = report(lab.dir.path(), "status");
    let got = |n: &str, k: &str| entry(&r, n)[k].clone();
    assert_eq!(
        (got("a-ready", "state"), got("a-ready", "checks"), got("a-ready", "owned")),
        (json!("open"), json!("passing"), json!("hones")),
        "{r:#}"
    );
    assert_eq!(got("a-ready", "reason"), Value::Null, "{r:#}");
    assert_eq!((got("b-failing", "checks"), got("b-failing", "forge")), (json!("failing"), json!("forgejo")), "{r:#}");
    assert_eq!((got("c-merged", "state"), got("d-closed", "state")), (json!("merged"), json!("closed")));
    assert_eq!(got("e-theirs", "owned"), json!("not_hones_pr"), "{r:#}");
    assert!(lab.mutations().is_empty(), "status changes nothing: {:?}", lab.mutations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_merges_only_hones_green_pr_at_the_head_it_pushed() {
    let lab = lab().await;
    let head = branch_on(&lab.fj, "acme/a-ready", BRANCH).unwrap();
    let run = lab.prs(&["merge"]).await;
    let r = report(lab.dir.path(), "merge");
    assert_eq!(entry(&r, "a-ready")["action"], "merged", "{r:#}\n{}", run.stderr);
    let merges: Vec<_> = lab.fj.requests().into_iter().filter(|s| s.path.ends_with("/merge")).collect();
    assert_eq!(merges.len(), 1, "{:?}", lab.mutations());
    assert_eq!(merges[0].path, "/api/v1/repos/acme/a-ready/pulls/1/merge");
    assert_eq!(merges[0].body["head_commit_id"], json!(head), "held to the pushed head");
    assert_eq!(lab.fj.pulls("acme/a-ready")[0]["merged"], true);
    for n in ["b-failing", "e-theirs"] {
        assert_eq!(lab.fj.pulls(&format!("acme/{n}"))[0]["state"], "open", "{n}");
    }
    assert!(lab.mutations().iter().all(|m| m.contains("/a-ready/")), "{:?}", lab.mutations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_comments_closes_and_deletes_only_hones_branch() {
    let lab = lab().await;
    let run = lab.prs(&["close"]).await;
    let r = report(lab.dir.path(), "close");
    for n in ["a-ready", "b-failing"] {
        assert_eq!(entry(&r, n)["action"], "closed", "{n}: {r:#}\n{}", run.stderr);
        let full = format!("acme/{n}");
        assert_eq!(lab.fj.pulls(&full)[0]["state"], "closed");
        assert_eq!(lab.fj.comments(&full, 1).len(), 1, "one comment says why");
        assert_eq!(branch_on(&lab.fj, &full, BRANCH), None, "hone's branch deleted");
    }
    assert_eq!(lab.fj.pulls("acme/e-theirs")[0]["state"], "open", "someone else's PR is left alone");
    assert!(branch_on(&lab.fj, "acme/e-theirs", BRANCH).is_some());
    assert!(
        lab.mutations().iter().all(|m| !m.contains("e-theirs") && !m.contains("c-merged")),
        "{:?}",
        lab.mutations()
    );
}

/// A fleet file's `forgejo: { org: acme }` lists the organisation's repositories page by page,
/// only names under it, and clones them from the Forgejo server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organisation_is_listed_by_its_query() {
    let dir = tempfile::tempdir().unwrap();
    let src = broken_repo();
    let fj = MockForgejo::start(&dir.path().join("forgejo")).await;
    fj.add_token(TOKEN, BOT);
    for r in ["acme/api", "acme/web", "acme/old", "other/api"] {
        fj.add_repo(r, &src.origin);
    }
    fj.describe("acme/old", true, false, &[]);
    for i in 0..50 {
        fj.add_repo(&format!("acme/gen{i:02}"), &src.origin);
        fj.describe(&format!("acme/gen{i:02}"), true, false, &[]);
    }
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: org\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\n{}",
        forge_spec(&fj.base)
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(&fleet, "version: 1\njob: job.yaml\nrepos:\n  - forgejo: { org: acme }\nworkspace: ws\n").unwrap();
    let ca = test_ca().display().to_string();
    let env = [("FORGEJO_TOKEN", TOKEN), ("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    let run =
        run_hone_env(&["fleet", fleet.to_str().unwrap(), "--dry-run"], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(fj.violations().is_empty(), "{:#?}", fj.violations());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    let ids: Vec<&str> = report["repos"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["acme__api", "acme__web"],
        "archived and other organisations' repositories are left out: {report:#}"
    );
    let pages = fj.requests().iter().filter(|s| s.path == "/api/v1/orgs/acme/repos").count();
    assert_eq!(pages, 2, "54 repositories are two pages of 50");
}

/// `pr.open_limit` counts the campaign's open PRs on Forgejo: the token's user's PR on the job's
/// branch counts (and is still updated), a PR someone else opened from a branch of that name (a
/// fork's) does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_limit_counts_only_the_campaigns_prs() {
    let dir = tempfile::tempdir().unwrap();
    let src = broken_repo();
    let fj = MockForgejo::start(&dir.path().join("forgejo")).await;
    fj.add_token(TOKEN, BOT);
    for r in ["acme/r1", "acme/r2", "acme/r3"] {
        fj.add_repo(r, &src.origin);
        fj.add_writer(r, BOT);
    }
    repo::git(&fj.bare("acme/r1"), &["branch", "hone/pacejob", "main"]);
    fj.add_pull("acme/r1", "hone/pacejob", "main", "hone's", BOT, None);
    fj.fork("acme/r2", "mallory/r2");
    repo::git(&fj.bare("mallory/r2"), &["branch", "hone/pacejob", "main"]);
    fj.add_pull("acme/r2", "hone/pacejob", "main", "Mallory's", "mallory", Some("mallory/r2"));
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: pacejob\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\npr: {{ enabled: true, open_limit: 2 }}\n{}",
        forge_spec(&fj.base)
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let repos: String =
        ["r1", "r2", "r3"].iter().map(|n| format!("  - url: {}\n", fj.git_url(&format!("acme/{n}")))).collect();
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(&fleet, format!("version: 1\njob: job.yaml\nrepos:\n{repos}workspace: ws\nconcurrency: 1\n"))
        .unwrap();
    let ca = test_ca().display().to_string();
    let env = [("FORGEJO_TOKEN", TOKEN), ("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(fj.violations().is_empty(), "{:#?}", fj.violations());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    let with = |s: &str| -> Vec<String> {
        r["repos"].as_array().unwrap().iter().filter(|x| x["status"] == s).map(|x| x["id"].to_string()).collect()
    };
    assert_eq!(with("pr_updated").len(), 1, "hone's open PR is still updated: {r:#}");
    assert_eq!((with("pr_created").len(), with("waiting").len()), (1, 1), "mallory's PR is no campaign PR: {r:#}");
    assert_eq!(fj.pulls("acme/r2")[0]["title"], "Mallory's");
}
