//! One `hone run`: intake, the turn loop under the run's budgets, the guards, then commit or save
//! the work, restore the user's checkout, and write every report, however the run ends.

pub(crate) mod again;
mod budget;
pub mod checkpoint;
pub mod checks;
pub mod context;
mod deps;
mod execute;
mod finish;
pub mod history;
mod hooks;
pub mod intake;
pub mod locate;
pub mod plan;
pub mod pr_text;
pub mod prompt;
pub mod repomap;
pub mod run;
pub mod setup;
pub mod ship;
pub mod state;
pub mod summarize;
mod tagcache;
mod toolcall;
pub(crate) mod transcript;
pub mod turns;
pub mod watchdog;

use crate::env::{RunEnv, Shared};
use crate::error::Code;
use crate::events::{Events, now_rfc3339};
use crate::forge;
use crate::progress::Progress;
use crate::protocol::Event;
use crate::redact::Redactor;
use crate::report::dir::ReportDir;
use crate::report::{self, ErrorRecord, RunReport, Status};
use intake::Prepared;
use run::Run;
use state::State;
use std::io::Write;
use std::path::PathBuf;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub struct RunOptions {
    /// The job spec; `None`: a one-off job from `task` and `model` alone.
    pub spec: Option<PathBuf>,
    /// A job already read and parsed, in place of `spec` (a fleet reads its job file once).
    pub job: Option<Box<crate::spec::Job>>,
    /// The environment the run starts in, read once by the caller.
    pub env: std::sync::Arc<RunEnv>,
    /// What the runs of this process share.
    pub shared: Shared,
    pub repo: Option<PathBuf>,
    pub report_dir: Option<PathBuf>,
    /// Where the JSONL event stream goes under `--json`.
    pub json_out: Option<Box<dyn Write + Send>>,
    /// Human progress (stderr), unless `--quiet`.
    pub progress: Option<Progress>,
    pub cancel: CancellationToken,
    pub redactor: Redactor,
    /// Write `pr.md` and `change.patch` only: no push, no GitHub API calls.
    pub dry_run: bool,
    /// Where GitHub Actions workflow commands go (`::add-mask::`, `::error`), under Actions.
    pub commands_out: Option<crate::ci_text::Out>,
    /// Overrides from the command line (the Action's inputs).
    pub task: Option<String>,
    pub model: Option<String>,
    pub name: Option<String>,
    /// Verify commands for a one-off job (no spec).
    pub verify: Vec<String>,
    pub pr: Option<u64>,
    /// Overrides `repo.base` (fleet: a repository's base branch).
    pub base: Option<String>,
    /// `owner/repo` on GitHub, instead of `GITHUB_REPOSITORY` (fleet: each repository's own).
    pub github_repo: Option<String>,
    /// Tag every event with this repository id (fleet runs under `--json`).
    pub event_repo: Option<String>,
    /// `hone replay`: the model answers from a transcript.
    pub replay: Option<std::sync::Arc<crate::model::replay::Replay>>,
    /// `hone replay`: the policy replay settled (verify commands allowed), used instead of
    /// loading the job's `policy:` file.
    pub policy: Option<Box<crate::policy::Policy>>,
    /// `--continue REF`: start from the work a failed run saved there.
    pub continue_from: Option<String>,
}

impl RunOptions {
    /// Options for running `spec` with nothing overridden.
    pub fn new(
        spec: Option<PathBuf>,
        env: std::sync::Arc<RunEnv>,
        cancel: CancellationToken,
        redactor: Redactor,
    ) -> Self {
        RunOptions {
            spec,
            job: None,
            env,
            shared: Shared::default(),
            repo: None,
            report_dir: None,
            json_out: None,
            progress: None,
            cancel,
            redactor,
            dry_run: false,
            commands_out: None,
            task: None,
            model: None,
            name: None,
            verify: vec![],
            pr: None,
            base: None,
            github_repo: None,
            event_repo: None,
            replay: None,
            policy: None,
            continue_from: None,
        }
    }
}

/// How the run ended.
pub struct RunOutcome {
    pub status: Status,
    pub exit_code: i32,
    /// The one-line result for stdout.
    pub line: String,
    /// A message for stderr (an input problem, rendered with its position and what to do).
    pub message: Option<String>,
    pub report: Box<RunReport>,
}

/// An input problem found before the run starts: its code and the message rendered for stderr.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub code: Code,
    pub message: String,
}

impl Invalid {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Invalid { code, message: message.into() }
    }
}

pub async fn run(mut opts: RunOptions) -> RunOutcome {
    let started = Instant::now();
    let started_at = now_rfc3339();
    match intake::prepare(&mut opts).await {
        Ok(p) => run_prepared(p, opts, started, started_at).await,
        Err(f) => intake_failed(*f, &mut opts, started, started_at),
    }
}

/// An intake failure still ends with reports (where a report dir is known) that say why.
fn intake_failed(f: intake::Failure, opts: &mut RunOptions, started: Instant, started_at: String) -> RunOutcome {
    let redactor = &opts.redactor.clone();
    let events =
        f.events.unwrap_or_else(|| Events::new(uuid::Uuid::new_v4().to_string(), redactor.clone(), None, None, None));
    let mut report = RunReport::new(f.job.as_deref().unwrap_or("hone"), events.run_id(), started_at);
    report.status = Status::InvalidInput;
    report.exit_code = Status::InvalidInput.exit_code();
    report.errors.push(ErrorRecord { code: f.invalid.code, message: redactor.apply(&f.invalid.message) });
    report.summary = redactor.apply(&summarize::intake_failed(&report.errors));
    report.duration_ms = started.elapsed().as_millis() as u64;
    events.emit(Event::RunCompleted {
        status: report.status.as_str().into(),
        exit_code: report.exit_code,
        duration_ms: report.duration_ms,
    });
    let mut line = report.one_line(f.report_dir.as_ref().map(ReportDir::path));
    if let Some(dir) = &f.report_dir
        && let Err(e) = write_reports(dir, &report, &events, redactor, &[])
    {
        line = format!("{line} (the reports could not be written: {e})");
    }
    if opts.env.actions {
        let dir = f.report_dir.as_ref().map(ReportDir::path);
        let env = opts.env.clone();
        ship::actions_integration(&report, (dir, None), &env, redactor, opts.commands_out.as_mut());
    }
    RunOutcome {
        status: report.status,
        exit_code: report.exit_code,
        line: redactor.apply(&line),
        message: Some(redactor.apply(&f.invalid.message)),
        report: Box::new(report),
    }
}

/// Write `report.json`, `junit.xml`, `summary.md` and the whole `events.jsonl` (replacing the
/// live one, so nothing a command did to it survives).
fn write_reports(
    dir: &ReportDir,
    report: &RunReport,
    events: &Events,
    redactor: &Redactor,
    said: &[crate::protocol::transcript::Entry],
) -> std::io::Result<()> {
    events.detach_file();
    report::write_all(dir, report, redactor)?;
    if !said.is_empty() {
        dir.write("transcript.jsonl", transcript::jsonl(said, redactor).as_bytes())?;
    }
    dir.write("events.jsonl", events.jsonl().as_bytes())
}

async fn run_prepared(p: Prepared, mut opts: RunOptions, started: Instant, started_at: String) -> RunOutcome {
    let job = &p.job;
    if let Some(out) = opts.commands_out.as_mut() {
        for c in forge::actions::mask_commands(&p.redactor.values()) {
            let _ = out.command(&c);
        }
    }
    let mut r = Run::new(run::RunMeta {
        job: job.name.clone(),
        run_id: p.events.run_id().to_string(),
        started_at,
        started,
        provider: job.model.provider.as_str().into(),
        model: job.model.name.clone(),
        repo: p.ws.root().display().to_string(),
        base: job.repo.base.clone().unwrap_or_else(|| "HEAD".into()),
        branch: job.git.branch.clone(),
        context_window: job.model.context_window,
        pricing: job.model.pricing,
        max_cost_usd: job.limits.max_cost_usd,
    });
    r.policy.source =
        p.policy.source.as_ref().map(|s| s.display().to_string()).unwrap_or_else(|| "built-in default".into());
    r.policy.sandbox = p.sandbox_report.clone();
    r.policy.network = report::network::NetworkReport::of(&p.policy);
    if job.verify.is_empty() {
        r.warnings.push("no verify commands are configured: the change is not verified".into());
    }
    if !p.policy.sandbox {
        r.warnings.push("the policy sets `sandbox: off`: commands ran with the host's network and file access".into());
    }
    p.events.emit(Event::RunStarted {
        job: job.name.clone(),
        repo: r.meta.repo.clone(),
        branch: job.git.branch.clone(),
        provider: r.meta.provider.clone(),
        model: r.meta.model.clone(),
    });
    let executed = match &p.skip {
        Some(reason) => {
            r.summary = format!("Skipped: {}\n", crate::markdown::inline(reason));
            r.warnings.push(reason.clone());
            turns::enter(&mut r.machine, &p.events, State::Summarizing, "nothing to do");
            Ok(Status::Skipped)
        }
        None => execute::execute(&p, &mut r, &opts.cancel).await,
    };
    let status = match executed {
        Ok(s) => s,
        Err(e) => {
            r.errors.push(ErrorRecord { code: e.code, message: p.redactor.apply(&e.message) });
            Status::Error
        }
    };
    let status = ship_if_verified(&p, &mut r, status, opts.dry_run, &opts.cancel).await;
    let report = conclude(&p, &mut r, status);
    let mut outcome = RunOutcome {
        status: report.status,
        exit_code: report.exit_code,
        line: p.redactor.apply(&report.one_line(Some(p.report_dir.path()))),
        message: None,
        report: Box::new(RunReport::new("", "", String::new())),
    };
    if status == Status::InvalidInput {
        outcome.message = report.errors.first().map(|e| p.redactor.apply(&e.message));
    }
    let mut said = vec![transcript::header(&r, job, &p.policy)];
    said.append(&mut r.transcript);
    if let Err(e) = write_reports(&p.report_dir, &report, &p.events, &p.redactor, &said) {
        tracing::error!("cannot write the reports to {}: {e}", p.report_dir.path().display());
        outcome.exit_code = crate::exit::INFRA_FAILURE;
        outcome.line = format!("hone: error: cannot write reports to {}: {e}", p.report_dir.path().display());
    }
    if p.env.actions {
        let dirs = (Some(p.report_dir.path()), Some(p.ws.root()));
        ship::actions_integration(&report, dirs, &p.env, &p.redactor, opts.commands_out.as_mut());
    }
    outcome.report = Box::new(report);
    outcome
}

/// Only a verified commit (or a verified "nothing to change") is shipped, unless the job asks
/// for failed work as a draft PR.
async fn ship_if_verified(
    p: &Prepared,
    run: &mut Run,
    status: Status,
    dry_run: bool,
    cancel: &CancellationToken,
) -> Status {
    run.status = status;
    let draft_failure = matches!(status, Status::Failed | Status::BudgetExhausted)
        && p.job.pr.on_failure == crate::spec::raw::OnFailure::Draft
        && run.saved_ref.is_some()
        && p.autofix.is_none()
        // Work the guards refused (a secret, a denied path, planted hooks) is never pushed.
        && run.policy.guard.is_empty();
    if matches!(status, Status::Success | Status::NoChange) || draft_failure {
        return ship::ship(p, run, dry_run, draft_failure, cancel).await;
    }
    status
}

/// The end of every run that got past intake: the final state and the summary; then the report,
/// built from the run once.
fn conclude(p: &Prepared, run: &mut Run, status: Status) -> RunReport {
    let end = match status {
        Status::Success | Status::NoChange | Status::Skipped => State::Done,
        Status::Cancelled => State::Aborted,
        _ => State::Failed,
    };
    if !run.machine.state().is_terminal() {
        turns::enter(&mut run.machine, &p.events, end, status.as_str());
    }
    run.status = status;
    if run.summary.is_empty() {
        run.summary = p.redactor.apply(&summarize::write(run, status));
    }
    run.warnings.extend(p.events.write_errors());
    run.policy.network.hosts = p.egress.tally();
    let report = RunReport::from(&*run);
    p.events.emit(Event::RunCompleted {
        status: status.as_str().into(),
        exit_code: report.exit_code,
        duration_ms: report.duration_ms,
    });
    report
}
