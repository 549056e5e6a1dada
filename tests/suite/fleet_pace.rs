//! A campaign's pace (`pr.hourly_limit`, `pr.open_limit`) against the GitHub stand-in: counted
//! from the forge's PRs (the campaign's identity's, on the job's branch), never from a file; a
//! repository past the pace is not run (nothing pushed, no tokens) and reported `waiting`, not
//! failed; an hour later the next ones open; a PR someone else opened counts for nothing.

use crate::common::mock_github::{MockGithub, MockPr};
use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const BRANCH: &str = "hone/pacejob";

/// `n` repositories `origins/r01`… as local bare origins (GitHub `origins/rNN` to the stand-in),
/// and a fleet over them whose job ends with `pr_tail`.
fn fleet_of(dir: &Path, n: usize, pr_tail: &str, concurrency: usize) -> PathBuf {
    let src = broken_repo();
    let mut repos = String::new();
    for i in 1..=n {
        let origin = dir.join(format!("origins/r{i:02}.git"));
        repo::git(dir, &["clone", "-q", "--bare", src.origin.to_str().unwrap(), origin.to_str().unwrap()]);
        repos.push_str(&format!("  - url: {}\n", origin.display()));
    }
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: pacejob\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\npr: {{ enabled: true{pr_tail} }}\n"
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let fleet = dir.join("fleet.yaml");
    let text = format!("version: 1\njob: job.yaml\nrepos:\n{repos}workspace: ws\nconcurrency: {concurrency}\n");
    std::fs::write(&fleet, text).unwrap();
    fleet
}

/// `hone fleet FLEET` (`--json` with `json`) against the stand-in with the clock at `now` (Unix
/// seconds).
async fn fleet_run_as(gh: &MockGithub, fleet: &Path, now: i64, json: bool) -> Run {
    let mut env: Vec<(&str, String)> = gh.env();
    env.push(("HONE_TEST_NOW", now.to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["fleet", fleet.to_str().unwrap(), "--json"];
    let args = if json { &args[..] } else { &args[..2] };
    run_hone_env(args, &[], fleet.parent().unwrap().join("unused"), &env).await
}

async fn fleet_run(gh: &MockGithub, fleet: &Path, now: i64) -> Run {
    fleet_run_as(gh, fleet, now, true).await
}

fn fleet_json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("ws/fleet.json")).unwrap()).unwrap()
}

/// The ids of the repositories with `status`.
fn with_status(r: &Value, status: &str) -> Vec<String> {
    let repos = r["repos"].as_array().unwrap();
    repos.iter().filter(|x| x["status"] == status).map(|x| x["id"].as_str().unwrap().to_string()).collect()
}

/// Whether hone pushed the job's branch to repository `rNN`'s origin.
fn pushed(dir: &Path, id: &str) -> bool {
    let bare = dir.join("origins").join(format!("{}.git", id.trim_start_matches("origins__")));
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{BRANCH}")])
        .current_dir(bare)
        .output()
        .unwrap();
    out.status.success()
}

/// The PRs the stand-in holds for `origins/rNN`.
fn prs_in(gh: &MockGithub, id: &str) -> usize {
    let repo = format!("origins/{}", id.trim_start_matches("origins__"));
    gh.with_repo(&repo, |r| r.prs.len())
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The `--json` events of type `kind`.
fn events(run: &Run, kind: &str) -> Vec<Value> {
    let lines = run.stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok());
    lines.filter(|e| e["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_repositories_at_ten_an_hour_open_ten_then_ten_more_an_hour_later() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 30, ", hourly_limit: 10", 4);
    let t0 = now();
    let run = fleet_run(&gh, &fleet, t0).await;
    assert_eq!(run.code, 0, "waiting is no failure: {}\n{}", run.stdout, run.stderr);
    let r = fleet_json(dir.path());
    let (created, waiting) = (with_status(&r, "pr_created"), with_status(&r, "waiting"));
    assert_eq!((created.len(), waiting.len()), (10, 20), "{r:#}");
    assert_eq!(r["counts"]["waiting"], 20);
    for id in &waiting {
        let e = r["repos"].as_array().unwrap().iter().find(|x| x["id"] == *id).unwrap();
        assert!(e["error"].as_str().unwrap().contains("hourly_limit: 10"), "{e:#}");
        assert_eq!((e["tokens"].as_u64(), e["code"].is_null()), (Some(0), true), "{e:#}");
        assert!(!pushed(dir.path(), id), "{id} waited: nothing ran, nothing was pushed");
        assert_eq!(prs_in(&gh, id), 0);
    }
    assert!(created.iter().all(|id| pushed(dir.path(), id) && prs_in(&gh, id) == 1));
    // JUnit: skipped with the reason; the JSONL events: `waiting` then `run_completed`, tagged.
    let junit = std::fs::read_to_string(dir.path().join("ws/fleet-junit.xml")).unwrap();
    assert_eq!(junit.matches("<skipped type=\"waiting\" message=\"waiting: the campaign opened 10 PRs").count(), 20);
    let said = events(&run, "waiting");
    assert_eq!(said.len(), 20, "{}", run.stdout);
    assert!(said.iter().all(|e| waiting.contains(&e["repo"].as_str().unwrap().to_string())));
    let summary = std::fs::read_to_string(dir.path().join("ws/fleet-summary.md")).unwrap();
    assert!(summary.contains("20 waiting"), "{summary}");

    // An hour later (hone's clock; the stand-in dated the PRs now): ten more open, and the ten
    // open ones are updated, never opened again.
    let run = fleet_run_as(&gh, &fleet, t0 + 3600 + 120, false).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("10 pr_created, 10 pr_updated, 10 waiting (exit 0)"),
        "the result line: {}",
        run.stdout
    );
    let r2 = fleet_json(dir.path());
    let (updated, created2) = (with_status(&r2, "pr_updated"), with_status(&r2, "pr_created"));
    assert_eq!((updated.len(), created2.len(), with_status(&r2, "waiting").len()), (10, 10, 10), "{r2:#}");
    let mut again = updated.clone();
    again.sort();
    let mut first = created.clone();
    first.sort();
    assert_eq!(again, first, "the first ten are updated");
    assert!(created2.iter().all(|id| waiting.contains(id)), "the new ones were waiting");
    let total: usize = (1..=30).map(|i| prs_in(&gh, &format!("origins__r{i:02}"))).sum();
    assert_eq!(total, 20, "no duplicate PR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_open_limit_only_one_more_opens_and_open_ones_are_still_updated() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 5, ", open_limit: 3", 2);
    for (i, repo) in ["origins/r01", "origins/r02"].iter().enumerate() {
        gh.seed(repo, MockPr::open(i as u64 + 1, BRANCH));
    }
    let run = fleet_run(&gh, &fleet, now()).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = fleet_json(dir.path());
    assert_eq!(with_status(&r, "pr_updated"), ["origins__r01", "origins__r02"], "{r:#}");
    assert_eq!(with_status(&r, "pr_created").len(), 1, "{r:#}");
    let waiting = with_status(&r, "waiting");
    assert_eq!(waiting.len(), 2, "{r:#}");
    let e = r["repos"].as_array().unwrap().iter().find(|x| x["id"] == waiting[0].as_str()).unwrap();
    assert!(e["error"].as_str().unwrap().contains("3 of the campaign's PRs are open (open_limit: 3)"), "{e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_limit_the_forge_is_asked_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 3, "", 2);
    let run = fleet_run(&gh, &fleet, now()).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(with_status(&fleet_json(dir.path()), "pr_created").len(), 3);
    let seen: Vec<String> = gh.seen().iter().map(|s| format!("{} {}", s.method, s.path)).collect();
    // Each run: is a PR open for the branch, then open one. Nothing else.
    assert_eq!(seen.len(), 6, "{seen:#?}");
    assert_eq!(seen.iter().filter(|s| s.starts_with("GET ") && s.contains("state=open")).count(), 3, "{seen:#?}");
    assert_eq!(seen.iter().filter(|s| s.starts_with("POST ")).count(), 3, "{seen:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recent_pr_someone_else_opened_on_the_branch_is_not_the_campaigns() {
    // Attack: mallory opens PRs from a branch of the job's name. Recent and closed: not the
    // campaign's hour. Open: not the campaign's open PR, so no repository is "updating" it free.
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 3, ", hourly_limit: 1", 1);
    let mut recent = MockPr::open(1, BRANCH);
    (recent.author, recent.state, recent.created_at) = ("mallory".into(), "closed".into(), mock_now());
    gh.seed("origins/r01", recent);
    let run = fleet_run(&gh, &fleet, now()).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = fleet_json(dir.path());
    assert_eq!((with_status(&r, "pr_created").len(), with_status(&r, "waiting").len()), (1, 2), "{r:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_pr_someone_else_opened_on_the_branch_is_not_the_campaigns() {
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 3, ", open_limit: 1", 1);
    let mut open = MockPr::open(1, BRANCH);
    open.author = "mallory".into();
    gh.seed("origins/r01", open);
    let run = fleet_run(&gh, &fleet, now()).await;
    let r = fleet_json(dir.path());
    // mallory's open PR is no campaign PR: r01's run takes a slot, will not adopt mallory's PR
    // (GitHub refuses a second one for the same head and base) and fails saying so, giving the
    // slot back; one new PR opens elsewhere and one repository waits.
    assert_eq!(with_status(&r, "failed"), ["origins__r01"], "{r:#}\n{}", run.stderr);
    let e = r["repos"].as_array().unwrap().iter().find(|x| x["id"] == "origins__r01").unwrap();
    assert!(e["error"].as_str().unwrap().contains("did not open it"), "{e:#}");
    assert_eq!(gh.pr("origins/r01", 1).author, "mallory", "mallory's PR is left as it was");
    assert_eq!(with_status(&r, "pr_created").len(), 1, "{r:#}");
    assert_eq!(with_status(&r, "waiting").len(), 1, "{r:#}");
}

fn mock_now() -> String {
    crate::common::mock_github::now_rfc3339()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_counts_the_prs_of_the_repositories_it_does_not_run_again() {
    // Attack on the budget: `--resume` runs only the waiting repositories; the PRs the others
    // opened minutes ago are the campaign's hour all the same.
    let dir = tempfile::tempdir().unwrap();
    let gh = MockGithub::start().await;
    let fleet = fleet_of(dir.path(), 4, ", hourly_limit: 2", 2);
    let at = now();
    let run = fleet_run(&gh, &fleet, at).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(with_status(&fleet_json(dir.path()), "pr_created").len(), 2);
    let mut env: Vec<(&str, String)> = gh.env();
    env.push(("HONE_TEST_NOW", (at + 60).to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["fleet", fleet.to_str().unwrap(), "--resume"];
    let again = run_hone_env(&args, &[], dir.path().join("unused"), &env).await;
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    let r = fleet_json(dir.path());
    assert_eq!(with_status(&r, "waiting").len(), 2, "{r:#}");
    let total: usize = (1..=4).map(|i| prs_in(&gh, &format!("origins__r{i:02}"))).sum();
    assert_eq!(total, 2, "no PR past the hour's budget");
}
