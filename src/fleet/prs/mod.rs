//! `hone fleet prs status|close|merge`: follow the PRs a fleet opened to merged. The PRs are
//! the ones `fleet.json` records; each repository's forge, path and token come from the fleet
//! file's target, decided as the fleet decides them (never from a URL a forge answered); the
//! branch is the job's, and the commit hone pushed is its run's report's. A PR is changed only
//! when the forge shows it is hone's (`own.rs`). Bounded in concurrency, paced by the forge's
//! rate limits, resumable, stopped by a signal with the reports written.

mod close;
mod drive;
pub mod merge;
mod own;
pub mod pace;
mod report;
mod state;
mod status;

use super::spec::{self, Source};
use crate::error::{Code, HoneError};
use crate::redact::Redactor;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use crate::forge::campaign::Method;
pub use report::PrResult;

/// Which command, with its own options.
#[derive(Debug, Clone)]
pub enum Command {
    Status,
    Close { reason: Option<String>, dry_run: bool },
    Merge { method: Method, dry_run: bool },
}

impl Command {
    pub const fn name(&self) -> &'static str {
        match self {
            Command::Status => "status",
            Command::Close { .. } => "close",
            Command::Merge { .. } => "merge",
        }
    }

    fn dry_run(&self) -> bool {
        matches!(self, Command::Close { dry_run: true, .. } | Command::Merge { dry_run: true, .. })
    }
}

pub struct PrsOptions {
    /// The fleet file.
    pub file: PathBuf,
    pub command: Command,
    /// Where `fleet.json` is read and the reports written, instead of the fleet file's `out`.
    pub out: Option<PathBuf>,
    /// Where the fleet's runs left their reports (`reports/<id>/report.json`), instead of the
    /// fleet file's `workspace`; alone, it moves `out` with it, as for `hone fleet`.
    pub workspace: Option<PathBuf>,
    /// Skip the repositories the last run of this command finished.
    pub resume: bool,
    /// At most this many PRs at once, instead of the fleet's `concurrency`.
    pub concurrency: Option<usize>,
    pub cancel: CancellationToken,
    pub redactor: Redactor,
    pub quiet: bool,
    pub env: Arc<crate::env::RunEnv>,
}

/// How a command ended: its exit code, its result line, and its report as JSON (`--json`).
pub struct PrsOutcome {
    pub exit_code: i32,
    pub line: String,
    pub json: String,
}

/// One PR to follow: fleet.json's number, the fleet file's repository, the job's branch and the
/// commit the repository's run pushed.
#[derive(Debug, Clone)]
pub struct Item {
    pub id: String,
    /// The target's URL without credentials.
    pub source: String,
    pub number: u64,
    /// The job's branch, as the job spec names it (`git.branch`, `hone/{name}`).
    pub branch: String,
    /// The commit the run pushed to it, as its `report.json` records it (`pr.pushed_sha`).
    pub pushed: Option<String>,
    /// The base branch that run opened the PR onto, as its report records it (`base_branch`).
    pub base: Option<String>,
    /// Where that report is, for messages.
    pub record: String,
    /// `owner/repo` from the fleet file's URL (empty when it names none).
    pub repo: String,
}

/// The commit the run of repository `id` pushed to `branch` and the base it opened the PR onto,
/// as its report in the workspace says (`pr.pushed_sha`, with `pr.pushed` and the report's branch
/// agreeing; `base_branch`): read as a regular file without following a link. A hint to compare
/// with the forge, never proof on its own.
fn pushed_by_run(workspace: &std::path::Path, id: &str, branch: &str) -> (Option<String>, Option<String>) {
    let dir = crate::output::dir::ReportDir::new(&super::layout::report_dir(workspace, id), None).ok();
    let report = dir.and_then(|d| d.read("report.json").ok()).and_then(|b| serde_json::from_slice(&b).ok());
    let report: serde_json::Value = report.unwrap_or_default();
    let sha = report["pr"]["pushed_sha"].as_str().unwrap_or("");
    let hex = matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit());
    let pushed = hex && report["pr"]["pushed"] == true && report["branch"] == branch;
    let base = report["base_branch"].as_str().filter(|b| pushed && !b.is_empty()).map(str::to_string);
    (pushed.then(|| sha.to_ascii_lowercase()), base)
}

/// Run one of the commands over every PR fleet.json records.
pub async fn run(opts: PrsOptions) -> Result<PrsOutcome, HoneError> {
    let mut fleet = spec::load(&opts.file).map_err(|d| HoneError::located(Code::Spec, d))?;
    if let Some(w) = &opts.workspace {
        if fleet.out == fleet.workspace {
            fleet.out = w.clone();
        }
        fleet.workspace = w.clone();
    }
    let out = opts.out.clone().unwrap_or_else(|| fleet.out.clone());
    let fleet_json = super::journal::report_in(&out).map_err(|e| {
        HoneError::new(
            Code::Io,
            format!("cannot read the fleet's record in {} (fleet.state.jsonl, fleet.json): {e}", out.display()),
        )
        .hint("run `hone fleet FILE` first, or point --out at the directory that holds its fleet.json")
    })?;
    let job = super::read_job(&fleet)?.job;
    super::resolve::from_previous(&mut fleet, &out, &opts.env, &job.forge)?;
    for t in &fleet.targets {
        if let Source::Url(u) = &t.source {
            crate::forge::credential::url_secrets(u).iter().for_each(|s| opts.redactor.add(s));
        }
    }
    let mut items = Vec::new();
    let mut lost = Vec::new();
    for r in fleet_json.repos.iter() {
        let Some(number) = r.pr_number else { continue };
        // The repository is the fleet file's, matched by id; fleet.json gives only the number.
        let target = fleet.targets.iter().find(|t| t.id == r.id);
        let report = super::layout::report_dir(&fleet.workspace, &r.id).join("report.json");
        let item = |url: &str, (pushed, base): (Option<String>, Option<String>)| Item {
            id: r.id.clone(),
            source: crate::forge::credential::without_userinfo(url),
            number,
            branch: job.git.branch.clone(),
            pushed,
            base,
            record: report.display().to_string(),
            repo: String::new(),
        };
        match target.map(|t| (&t.source, &t.id)) {
            // The id is the fleet file's target's (checked when it was made), not fleet.json's.
            Some((Source::Url(u), id)) => {
                items.push((item(u, pushed_by_run(&fleet.workspace, id, &job.git.branch)), u.clone()))
            }
            _ => lost.push(PrResult {
                code: Some(Code::Spec),
                error: Some("not a URL target of the fleet file: its forge and repository are unknown".into()),
                ..drive::result_for(&item(&r.source, (None, None)), r.pr_forge.as_deref().unwrap_or(""))
            }),
        }
    }
    let concurrency = opts.concurrency.unwrap_or(fleet.concurrency).max(1);
    drive::drive(drive::Plan { opts, job, out, items, lost, concurrency }).await
}
