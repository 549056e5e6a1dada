//! `hone fleet prs` runs that meet the world: a rate limit in the middle, a kill and a resume,
//! a signal, and PRs a real fleet run opened.

use super::fleet_prs::{BRANCH, entry, fleet_with_prs, prs, report};
use crate::common::mock_github::{Limit, MockGithub, MockPr};
use crate::common::*;
use std::path::Path;
use std::time::Duration;

/// `n` merged PRs in repositories r1…rn.
fn merged_prs(gh: &MockGithub, n: u64) -> Vec<(String, u64)> {
    (1..=n)
        .map(|i| {
            let mut p = MockPr::open(i, BRANCH);
            (p.state, p.merged) = ("closed".into(), true);
            gh.seed(&format!("acme/r{i}"), p);
            (format!("r{i}"), i)
        })
        .collect()
}

fn names(v: &[(String, u64)]) -> Vec<(&str, u64)> {
    v.iter().map(|(n, i)| (n.as_str(), *i)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_in_the_middle_is_waited_out_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let prs_ = merged_prs(&gh, 6);
    let fleet = fleet_with_prs(dir.path(), &names(&prs_));
    // The third request meets the primary limit, reset two seconds ahead.
    gh.limit(Limit::Primary { at: 3, secs: 2 });
    let run = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let limited = gh.limited();
    assert!(!limited.is_empty(), "the limit was met");
    let reset = limited[0].0;
    let seen = gh.seen();
    let first_refused = 2; // zero-based: the third request
    let answered_after: Vec<_> = seen[first_refused..].iter().filter(|s| s.at_unix() < reset).collect();
    assert!(
        answered_after.len() == limited.len(),
        "every request sent before the reset was a refused one, none was answered: {limited:?} {seen:#?}"
    );
    let r = report(dir.path(), "status");
    assert_eq!(r["counts"]["merged"], 6, "{r:#}");
    assert_eq!(r["retries"], limited.len());
    assert_eq!(r["requests"], 6 + limited.len(), "each rate-limited request sent again once");

    // A secondary limit (403 with retry-after: 1) is waited out the same way.
    gh.limit(Limit::Secondary { at: gh.seen().len() + 2, secs: 1 });
    let run = prs(&gh, &fleet, &["status"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(report(dir.path(), "status")["retries"], 1);
}

/// Start `hone fleet prs status FLEET --concurrency 1 EXTRA…` against the stand-in, returning at once.
fn spawn_status(gh: &MockGithub, fleet: &Path, extra: &[&str]) -> std::process::Child {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hone"));
    cmd.args(["fleet", "prs", "status", fleet.to_str().unwrap(), "--concurrency", "1"])
        .args(extra)
        .env_remove("GITHUB_APP_ID")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .envs(gh.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("hone starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_resumes_without_redoing_the_prs_it_finished() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let prs_ = merged_prs(&gh, 5);
    let fleet = fleet_with_prs(dir.path(), &names(&prs_));
    gh.hold("acme/r4", 4);
    let mut child = spawn_status(&gh, &fleet, &[]);
    tokio::time::timeout(Duration::from_secs(60), gh.held()).await.expect("hone reached the fourth PR");
    child.kill().unwrap();
    child.wait().unwrap();
    let journal = std::fs::read_to_string(dir.path().join("out/prs-status.state.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 3, "three PRs were done when it was killed: {journal}");
    assert!(!dir.path().join("out/prs-status.json").exists(), "killed: no report, only the journal");
    *gh.state.hold.lock().unwrap() = None;
    let before = gh.seen().len();
    let run = prs(&gh, &fleet, &["status", "--resume"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let mut again: Vec<String> = gh.seen()[before..].iter().map(|s| s.path.clone()).collect();
    again.sort();
    assert_eq!(again, ["/repos/acme/r4/pulls/4", "/repos/acme/r5/pulls/5"], "only the unfinished ones");
    let r = report(dir.path(), "status");
    assert_eq!(r["requests"], 2);
    for (n, resumed) in [("r1", true), ("r2", true), ("r3", true), ("r4", false), ("r5", false)] {
        assert_eq!(entry(&r, n)["resumed"], resumed, "{n}: {r:#}");
        assert_eq!(entry(&r, n)["state"], "merged");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_the_run_and_the_reports_are_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let prs_ = merged_prs(&gh, 3);
    let fleet = fleet_with_prs(dir.path(), &names(&prs_));
    gh.hold("acme/r2", 2);
    let child = spawn_status(&gh, &fleet, &[]);
    tokio::time::timeout(Duration::from_secs(60), gh.held()).await.expect("hone reached the second PR");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let r = report(dir.path(), "status");
    assert_eq!(r["interrupted"], true);
    assert_eq!(entry(&r, "r1")["state"], "merged");
    for n in ["r2", "r3"] {
        assert_eq!(entry(&r, n)["code"], "E_CANCELLED", "{r:#}");
    }
    assert!(dir.path().join("out/prs-status.md").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prs_a_real_fleet_opened_are_followed_to_merged() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of_one(dir.path(), "prsjob", "pr: { enabled: true }\n");
    let env: Vec<(&str, String)> = gh.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let created = gh.pr("origins/app", 1);
    assert_eq!(created.head_ref, BRANCH);
    // The stand-in hosts no git: it learns the head hone pushed from the origin, as GitHub would.
    let pushed = repo::git(&dir.path().join("origins/app.git"), &["rev-parse", &format!("refs/heads/{BRANCH}")]);
    gh.push("origins/app", BRANCH, &pushed);
    let report = std::fs::read_to_string(dir.path().join("ws/reports/origins__app/report.json")).unwrap();
    assert!(report.contains(&format!("\"pushed_sha\": \"{pushed}\"")), "the run records what it pushed: {report}");
    // The fleet's reports are in its workspace: `--out` points there.
    let out = dir.path().join("ws");
    let out_s = out.display().to_string();
    let status =
        run_hone_env(&["fleet", "prs", "status", fleet.to_str().unwrap(), "--out", &out_s], &[], out.clone(), &env)
            .await;
    assert_eq!(status.code, 4, "open: {}\n{}", status.stdout, status.stderr);
    let merge =
        run_hone_env(&["fleet", "prs", "merge", fleet.to_str().unwrap(), "--out", &out_s], &[], out.clone(), &env)
            .await;
    assert_eq!(merge.code, 0, "{}\n{}", merge.stdout, merge.stderr);
    assert!(gh.pr("origins/app", 1).merged);
    let status =
        run_hone_env(&["fleet", "prs", "status", fleet.to_str().unwrap(), "--out", &out_s], &[], out, &env).await;
    assert_eq!(status.code, 0, "{}\n{}", status.stdout, status.stderr);
}
