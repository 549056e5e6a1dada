//! Fleet results: each repository's named outcome, and the aggregate reports `fleet.json`,
//! `fleet-junit.xml` (a testsuite per repository) and `fleet-summary.md`; merging shards.

use junit_report::{ReportBuilder, TestCaseBuilder, TestSuiteBuilder};
use serde::{Deserialize, Serialize};
use std::path::Path;

mod summary;
pub use summary::summary;

/// A repository's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepoStatus {
    Succeeded,
    PrCreated,
    PrUpdated,
    NoChange,
    Skipped,
    Failed,
    Cancelled,
    /// Not run: the campaign's pace (`pr.hourly_limit`, `pr.open_limit`) is spent; a later
    /// fleet run picks it up. Not a failure.
    Waiting,
}

impl RepoStatus {
    pub fn ok(self) -> bool {
        !matches!(self, RepoStatus::Failed | RepoStatus::Cancelled)
    }

    /// The name in `fleet.json`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RepoStatus::Succeeded => "succeeded",
            RepoStatus::PrCreated => "pr_created",
            RepoStatus::PrUpdated => "pr_updated",
            RepoStatus::NoChange => "no_change",
            RepoStatus::Skipped => "skipped",
            RepoStatus::Failed => "failed",
            RepoStatus::Cancelled => "cancelled",
            RepoStatus::Waiting => "waiting",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepoResult {
    pub id: String,
    /// The URL or path.
    pub source: String,
    pub status: RepoStatus,
    /// The error code when failed (E_BUILD_FAIL, E_GIT, …).
    pub code: Option<crate::error::Code>,
    pub error: Option<String>,
    pub pr_url: Option<String>,
    /// The PR's (merge request's) number on its forge, for `hone fleet prs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_number: Option<u64>,
    /// `github` or `gitlab`: where the PR is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_forge: Option<String>,
    /// The branch hone committed the change on (the PR's head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub duration_ms: u64,
    pub tokens: u64,
    /// What its run cost, in US dollars (null without `model.pricing`).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    pub report_dir: String,
    /// The job's hash when it ran: `--resume` only trusts results of the same job.
    pub job_hash: String,
    /// Carried over from an earlier run by `--resume`.
    #[serde(default)]
    pub resumed: bool,
    /// A `--dry-run` preview: nothing was pushed, so `--resume` runs it again.
    #[serde(default)]
    pub dry_run: bool,
    /// The run's answer, valid against the job's `output:` schema (a read-only fleet's table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// With `attempts:`: the later try whose change landed after the first try failed its
    /// checks (the repository a second or third try rescued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescued_by: Option<u32>,
    /// What its run spent: tokens in, out and cached, cost, turns, model requests, duration.
    #[serde(default)]
    pub spend: crate::record::Spend,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetReport {
    pub schema_version: u32,
    pub job: String,
    pub job_hash: String,
    pub started_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The sum of the repositories' costs, in US dollars (null when none is known).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// With `attempts:`: the repositories a later try rescued (the first try failed its checks).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rescued: usize,
    /// What the campaign spent: the repositories' spends summed (the duration is the runs' total).
    #[serde(default)]
    pub spend: crate::record::Spend,
    /// The OpenTelemetry trace the fleet was exported as; absent when telemetry is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::record::TraceRef>,
    /// What went wrong beside the repositories (telemetry's export).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub repos: Vec<RepoResult>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// 0 when every repository succeeded, had nothing to change or is waiting for the campaign's
/// pace; 1 if any failed; 130 if cancelled.
pub fn exit_code(repos: &[RepoResult], interrupted: bool) -> i32 {
    if interrupted || repos.iter().any(|r| r.status == RepoStatus::Cancelled) {
        crate::exit::INTERRUPTED
    } else if repos.iter().any(|r| r.status == RepoStatus::Failed) {
        crate::exit::TASK_FAILED
    } else {
        crate::exit::SUCCESS
    }
}

pub fn build(
    job: &str,
    job_hash: &str,
    started_at: String,
    duration_ms: u64,
    mut repos: Vec<RepoResult>,
    interrupted: bool,
) -> FleetReport {
    repos.sort_by(|a, b| a.id.cmp(&b.id));
    let mut counts = std::collections::BTreeMap::new();
    for r in &repos {
        *counts.entry(r.status.as_str().to_string()).or_insert(0) += 1;
    }
    let costs: Vec<f64> = repos.iter().filter_map(|r| r.cost_usd).collect();
    let cost_usd = (!costs.is_empty()).then(|| (costs.iter().sum::<f64>() * 1e6).round() / 1e6);
    let mut spend = crate::record::Spend::default();
    repos.iter().for_each(|r| spend.add(&r.spend));
    FleetReport {
        spend,
        trace: None,
        warnings: Vec::new(),
        cost_usd,
        rescued: repos.iter().filter(|r| r.rescued_by.is_some()).count(),
        schema_version: 1,
        job: job.into(),
        job_hash: job_hash.into(),
        started_at,
        duration_ms,
        exit_code: exit_code(&repos, interrupted),
        counts,
        repos,
    }
}

/// Write the aggregate reports by rename into `dir` (reached without following a symlink in
/// its place), so a symlink or FIFO a run left there is replaced, never written through. Each is
/// written durably (temp file, fsync, rename, fsync of the directory): a kill leaves each file
/// whole, old or new, and the journal they are rebuilt from is already complete.
pub fn write(dir: &Path, r: &FleetReport) -> std::io::Result<()> {
    let d = super::journal::open_out(dir)?;
    let files = [
        ("fleet.json", serde_json::to_string_pretty(r).map_err(std::io::Error::other)?),
        ("fleet-junit.xml", junit(r)?),
        ("fleet-summary.md", summary(r)),
        ("fleet.env", crate::output::dotenv::render(&ci_outputs(r))),
    ];
    for (name, text) in files {
        hold_before(name);
        super::journal::write_durably(&d, name, text.as_bytes())?;
    }
    Ok(())
}

/// What CI reads of a fleet (the step's outputs under Actions, GitLab's dotenv report): its exit
/// code, how many repositories and how many failed, its trace, and the campaign's spend.
pub fn ci_outputs(r: &FleetReport) -> Vec<(&'static str, String)> {
    let failed = r.repos.iter().filter(|x| x.status == RepoStatus::Failed).count();
    let mut out = vec![
        ("exit-code", r.exit_code.to_string()),
        ("repositories", r.repos.len().to_string()),
        ("failed", failed.to_string()),
        ("trace-id", r.trace.as_ref().map(|t| t.trace_id.clone()).unwrap_or_default()),
    ];
    out.extend(r.spend.outputs());
    out
}

/// Debug builds (the test suite's) only: with `HONE_TEST_FLEET_HOLD=<file>:<marker>`, stop for
/// good before writing `<file>`, once `<marker>` is made, so a test can kill hone between two
/// steps of the writer. A release build never reads it.
#[cfg(debug_assertions)]
fn hold_before(name: &str) {
    let Ok(v) = std::env::var("HONE_TEST_FLEET_HOLD") else { return };
    let Some((file, marker)) = v.split_once(':') else { return };
    if file == name && std::fs::write(marker, name).is_ok() {
        loop {
            std::thread::park();
        }
    }
}

#[cfg(not(debug_assertions))]
fn hold_before(_: &str) {}

/// Read `fleet.json` back: a regular file only (never a FIFO a run could have left).
pub fn read(dir: &Path) -> std::io::Result<FleetReport> {
    let d = crate::output::dir::ReportDir::new(dir, None)?;
    let bytes = d.read("fleet.json")?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

fn junit(r: &FleetReport) -> std::io::Result<String> {
    let mut report = ReportBuilder::new();
    for repo in &r.repos {
        let time = time::Duration::milliseconds(repo.duration_ms as i64);
        let mut case = if repo.status == RepoStatus::Waiting {
            TestCaseBuilder::skipped_with_cause("run", "waiting", repo.error.as_deref().unwrap_or("waiting"))
        } else if repo.status.ok() {
            TestCaseBuilder::success("run", time)
        } else {
            let msg = format!("{}: {}", repo.code.map_or("E_?", |c| c.as_str()), repo.error.as_deref().unwrap_or(""));
            TestCaseBuilder::failure("run", time, repo.status.as_str(), &msg)
        };
        case.set_classname(&format!("hone.fleet.{}", repo.id)).set_system_out(&format!(
            "status: {}\nsource: {}\npr: {}\nreports: {}",
            repo.status.as_str(),
            repo.source,
            repo.pr_url.as_deref().unwrap_or("-"),
            repo.report_dir
        ));
        let mut suite = TestSuiteBuilder::new(&format!("hone.fleet.{}", repo.id));
        suite.add_testcase(case.build());
        report.add_testsuite(suite.build());
    }
    crate::output::junit::xml(report)
}

/// Merge shard reports into one aggregate.
pub fn merge(reports: Vec<FleetReport>) -> Option<FleetReport> {
    let first = reports.first()?.clone();
    let repos: Vec<RepoResult> = reports.iter().flat_map(|r| r.repos.clone()).collect();
    let duration = reports.iter().map(|r| r.duration_ms).max().unwrap_or(0);
    Some(build(&first.job, &first.job_hash, first.started_at, duration, repos, false))
}

/// Shard `i` of `n` (1-based): the targets at positions i-1, i-1+n, … (balanced by count).
pub fn shard<T: Clone>(items: &[T], i: usize, n: usize) -> Vec<T> {
    items.iter().enumerate().filter(|(k, _)| k % n == i - 1).map(|(_, t)| t.clone()).collect()
}

/// `{"include": [{"shard": "1/N"}, …]}` for `strategy.matrix`.
pub fn matrix(n: usize, total: usize) -> serde_json::Value {
    let n = n.clamp(1, total.max(1));
    serde_json::json!({"include": (1..=n).map(|i| serde_json::json!({"shard": format!("{i}/{n}")})).collect::<Vec<_>>()})
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A result for repository `id` with `status`, for tests.
    pub(crate) fn repo(id: &str, status: RepoStatus) -> RepoResult {
        RepoResult {
            id: id.into(),
            source: id.into(),
            status,
            code: None,
            error: None,
            pr_url: None,
            pr_number: None,
            pr_forge: None,
            output: None,
            branch: None,
            duration_ms: 1,
            tokens: 0,
            cost_usd: None,
            report_dir: String::new(),
            job_hash: "h".into(),
            resumed: false,
            dry_run: false,
            rescued_by: None,
            spend: Default::default(),
        }
    }

    #[test]
    fn exit_codes_are_honest() {
        assert_eq!(exit_code(&[repo("a", RepoStatus::PrCreated), repo("b", RepoStatus::NoChange)], false), 0);
        assert_eq!(exit_code(&[repo("a", RepoStatus::PrCreated), repo("b", RepoStatus::Failed)], false), 1);
        assert_eq!(exit_code(&[repo("a", RepoStatus::Cancelled)], false), 130);
        assert_eq!(exit_code(&[repo("a", RepoStatus::PrCreated), repo("b", RepoStatus::Waiting)], false), 0);
    }

    #[test]
    fn shards_cover_every_repo_once_and_balance() {
        let items: Vec<u32> = (0..10).collect();
        let shards: Vec<Vec<u32>> = (1..=3).map(|i| shard(&items, i, 3)).collect();
        let mut all: Vec<u32> = shards.concat();
        all.sort();
        assert_eq!(all, items);
        assert_eq!(shards.iter().map(Vec::len).collect::<Vec<_>>(), [4, 3, 3]);
        assert_eq!(matrix(3, 10)["include"][2]["shard"], "3/3");
        assert_eq!(matrix(5, 2)["include"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn merge_equals_the_whole() {
        let a = build("j", "h", "t".into(), 5, vec![repo("b", RepoStatus::Failed)], false);
        let b = build("j", "h", "t".into(), 7, vec![repo("a", RepoStatus::PrCreated)], false);
        let m = merge(vec![a, b]).unwrap();
        let whole = build(
            "j",
            "h",
            "t".into(),
            7,
            vec![repo("a", RepoStatus::PrCreated), repo("b", RepoStatus::Failed)],
            false,
        );
        assert_eq!(serde_json::to_value(&m).unwrap(), serde_json::to_value(&whole).unwrap());
    }

    #[test]
    fn the_fleet_cost_is_the_sum_of_the_known_costs() {
        let priced = |id: &str, c: Option<f64>| RepoResult { cost_usd: c, ..repo(id, RepoStatus::PrCreated) };
        let r = build(
            "j",
            "h",
            "t".into(),
            1,
            vec![priced("a", Some(0.25)), priced("b", None), priced("c", Some(1.0))],
            false,
        );
        assert_eq!(r.cost_usd, Some(1.25));
        assert!(summary(&r).contains("; cost $1.25"), "{}", summary(&r));
        let r = build("j", "h", "t".into(), 1, vec![priced("a", None)], false);
        assert_eq!(r.cost_usd, None, "no price, no cost");
        // Shards merge to the same sum.
        let (x, y) = (
            build("j", "h", "t".into(), 1, vec![priced("a", Some(0.5))], false),
            build("j", "h", "t".into(), 1, vec![priced("b", Some(0.25))], false),
        );
        assert_eq!(merge(vec![x, y]).unwrap().cost_usd, Some(0.75));
    }
}
