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
use crate::events::{Events, now_rfc3339};
use crate::output;
use crate::progress::Progress;
use crate::protocol::Event;
use crate::record::{RunRecord, Status};
use crate::redact::Redactor;
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

/// How the run ended: its record, and what the command line prints and exits with.
pub struct RunOutcome {
    /// The record's exit code, unless the reports could not be written.
    pub exit_code: i32,
    /// The one-line result for stdout.
    pub line: String,
    /// A message for stderr (an input problem, rendered with its position and what to do).
    pub message: Option<String>,
    pub record: Box<RunRecord>,
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
    let mut record = RunRecord::new(f.job.as_deref().unwrap_or("hone"), events.run_id(), started_at);
    record.status = Status::InvalidInput;
    record.errors.push(redactor.error(f.error.clone()));
    record.summary = redactor.apply(&summarize::intake_failed(&record.errors));
    record.seal(started.elapsed());
    let env = opts.env.clone();
    let sinks = output::Sinks {
        dir: f.report_dir.as_ref(),
        events: &events,
        redactor,
        env: &env,
        repo_root: None,
        commands: opts.commands_out.as_mut(),
    };
    let published = output::publish(&record, &[], sinks);
    RunOutcome {
        exit_code: published.exit_code,
        line: published.line,
        message: Some(redactor.apply(&f.error.render())),
        record: Box::new(record),
    }
}

async fn run_prepared(p: Prepared, mut opts: RunOptions, started: Instant, started_at: String) -> RunOutcome {
    let job = &p.job;
    if let Some(out) = opts.commands_out.as_mut() {
        for c in output::actions::mask_commands(&p.redactor.values()) {
            let _ = out.command(&c);
        }
    }
    let mut r = Run::new(begin_record(&p, started_at), started);
    p.events.emit(Event::RunStarted {
        job: job.name.clone(),
        repo: r.record.repo.clone(),
        branch: job.git.branch.clone(),
        provider: r.record.provider.clone(),
        model: r.record.model.clone(),
    });
    let executed = match &p.skip {
        Some(reason) => {
            r.record.summary = format!("Skipped: {}\n", crate::markdown::inline(reason));
            r.record.warnings.push(reason.clone());
            turns::enter(&mut r.machine, &p.events, State::Summarizing, "nothing to do");
            Ok(Status::Skipped)
        }
        None => execute::execute(&p, &mut r, &opts.cancel).await,
    };
    let status = match executed {
        Ok(s) => s,
        Err(e) => {
            r.record.errors.push(p.redactor.error(e));
            Status::Error
        }
    };
    let status = ship_if_verified(&p, &mut r, status, opts.dry_run, &opts.cancel).await;
    let record = conclude(&p, &mut r, status);
    let message =
        (status == Status::InvalidInput).then(|| record.errors.first().map(|e| p.redactor.apply(&e.render())));
    let mut said = vec![transcript::header(&r, job, &p.policy)];
    said.append(&mut r.transcript);
    let sinks = output::Sinks {
        dir: Some(&p.report_dir),
        events: &p.events,
        redactor: &p.redactor,
        env: &p.env,
        repo_root: Some(p.ws.root()),
        commands: opts.commands_out.as_mut(),
    };
    let published = output::publish(&record, &said, sinks);
    RunOutcome {
        exit_code: published.exit_code,
        line: published.line,
        message: message.flatten(),
        record: Box::new(record),
    }
}

/// The record of a run that got past intake, as it starts: the job, the repository, the model,
/// the policy and its jail, and the warnings the setup deserves.
fn begin_record(p: &Prepared, started_at: String) -> RunRecord {
    let job = &p.job;
    let mut r = RunRecord::new(&job.name, p.events.run_id(), started_at);
    (r.provider, r.model) = (job.model.provider.as_str().into(), job.model.name.clone());
    r.repo = p.ws.root().display().to_string();
    r.base = job.repo.base.clone().unwrap_or_else(|| "HEAD".into());
    (r.branch, r.context_window) = (job.git.branch.clone(), job.model.context_window);
    r.cost = job.model.pricing.map(|pricing| crate::spec::pricing::Cost {
        usd: 0.0,
        limit_usd: job.limits.max_cost_usd,
        pricing,
    });
    r.policy.source =
        p.policy.source.as_ref().map(|s| s.display().to_string()).unwrap_or_else(|| "built-in default".into());
    r.policy.sandbox = p.sandbox_report.clone();
    r.policy.network = crate::record::network::NetworkReport::of(&p.policy);
    if job.verify.is_empty() {
        r.warnings.push("no verify commands are configured: the change is not verified".into());
    }
    if !p.policy.sandbox {
        r.warnings.push("the policy sets `sandbox: off`: commands ran with the host's network and file access".into());
    }
    r
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
    run.record.status = status;
    let draft_failure = matches!(status, Status::Failed | Status::BudgetExhausted)
        && p.job.pr.on_failure == crate::spec::raw::OnFailure::Draft
        && run.record.saved_ref.is_some()
        && p.autofix.is_none()
        // Work the guards refused (a secret, a denied path, planted hooks) is never pushed.
        && run.record.policy.guard.is_empty();
    if matches!(status, Status::Success | Status::NoChange) || draft_failure {
        return ship::ship(p, run, dry_run, draft_failure, cancel).await;
    }
    status
}

/// The end of every run that got past intake: the final state and the summary; then the record,
/// sealed once.
fn conclude(p: &Prepared, run: &mut Run, status: Status) -> RunRecord {
    let end = match status {
        Status::Success | Status::NoChange | Status::Skipped => State::Done,
        Status::Cancelled => State::Aborted,
        _ => State::Failed,
    };
    if !run.machine.state().is_terminal() {
        turns::enter(&mut run.machine, &p.events, end, status.as_str());
    }
    run.record.status = status;
    if run.record.summary.is_empty() {
        run.record.summary = p.redactor.apply(&summarize::write(run, status));
    }
    run.record.warnings.extend(p.events.write_errors());
    run.record.policy.network.hosts = p.egress.tally();
    run.seal()
}
