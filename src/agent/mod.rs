//! One `hone run`: intake, the turn loop under the run's budgets, the guards, then commit or save
//! the work, restore the user's checkout, and write every report.

pub mod checkpoint;
pub mod checks;
pub mod context;
pub mod history;
pub mod intake;
pub mod plan;
pub mod prompt;
pub mod repomap;
pub mod setup;
pub mod ship;
pub mod state;
pub mod summarize;
pub mod turns;
pub mod watchdog;

use crate::error::{Code, HoneError};
use crate::events::now_rfc3339;
use crate::forge;
use crate::git::OriginalHead;
use crate::guard::{GitGuard, diff_guard};
use crate::protocol::{Event, Message};
use crate::redact::Redactor;
use crate::report::{self, CommitInfo, ErrorRecord, RunReport, Status};
use crate::spec;
use crate::tools::{self, ToolContext, paths::Root};
use intake::Prepared;
use state::{Machine, State};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub struct RunOptions {
    pub spec: PathBuf,
    pub repo: Option<PathBuf>,
    pub report_dir: Option<PathBuf>,
    /// Where the JSONL event stream goes under `--json`.
    pub json_out: Option<Box<dyn Write + Send>>,
    pub cancel: CancellationToken,
    pub redactor: Redactor,
    /// Write `pr.md` and `change.patch` only: no push, no GitHub API calls.
    pub dry_run: bool,
    /// Where GitHub Actions workflow commands go (`::add-mask::`, `::error`), under Actions.
    pub commands_out: Option<Box<dyn Write + Send>>,
    /// Overrides from the command line (the Action's inputs).
    pub task: Option<String>,
    pub model: Option<String>,
    pub pr: Option<u64>,
    /// Overrides `repo.base` (fleet: a repository's base branch).
    pub base: Option<String>,
    /// `owner/repo` on GitHub, instead of `GITHUB_REPOSITORY` (fleet: each repository's own).
    pub github_repo: Option<String>,
    /// Tag every event with this repository id (fleet runs under `--json`).
    pub event_repo: Option<String>,
}

/// How the run ended, for the CLI.
pub struct RunOutcome {
    pub exit_code: i32,
    /// The one-line result for stdout.
    pub line: String,
}

/// Input problems found before the run starts: rendered messages for stderr (exit 2).
#[derive(Debug)]
pub struct Invalid(pub String);

pub async fn run(mut opts: RunOptions) -> Result<RunOutcome, Invalid> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let mut machine = Machine::new();
    let p = intake::prepare(&mut opts).await?;
    let job = &p.job;
    if let Some(out) = opts.commands_out.as_mut() {
        for line in forge::actions::mask_commands(&p.redactor.values()) {
            let _ = writeln!(out, "{line}");
        }
    }
    let mut report = RunReport::new(&job.name, p.events.run_id(), started_at);
    report.provider = job.model.provider.as_str().into();
    report.model = job.model.name.clone();
    report.repo = p.ws.root().display().to_string();
    report.base = job.repo.base.clone().unwrap_or_else(|| "HEAD".into());
    report.branch = job.git.branch.clone();
    report.policy.source =
        p.policy.source.as_ref().map(|s| s.display().to_string()).unwrap_or_else(|| "built-in default".into());
    report.policy.sandbox = p.sandbox_report.clone();
    if job.verify.is_empty() {
        report.warnings.push("no verify commands are configured: the change is not verified".into());
    }
    if !p.policy.sandbox {
        report
            .warnings
            .push("the policy sets `sandbox: off`: commands ran with the host's network and file access".into());
    }
    p.events.emit(Event::RunStarted {
        job: job.name.clone(),
        repo: report.repo.clone(),
        branch: job.git.branch.clone(),
        provider: report.provider.clone(),
        model: report.model.clone(),
    });
    let executed = match &p.skip {
        Some(reason) => {
            report.summary = format!("Skipped: {reason}\n");
            report.warnings.push(reason.clone());
            turns::enter(&mut machine, &p.events, State::Summarizing, "nothing to do");
            Ok(Status::Skipped)
        }
        None => execute(&p, &mut report, &mut machine, &opts.cancel).await,
    };
    let mut status = match executed {
        Ok(s) => s,
        Err(e) => {
            report.errors.push(ErrorRecord { code: e.code, message: p.redactor.apply(&e.message) });
            Status::Error
        }
    };
    report.status = status;
    report.exit_code = status.exit_code();
    // Only a verified commit (or a verified "nothing to change") is shipped, unless the job asks
    // for failed work as a draft PR.
    let draft_failure = matches!(status, Status::Failed | Status::BudgetExhausted)
        && p.job.pr.on_failure == crate::spec::raw::OnFailure::Draft
        && report.saved_ref.is_some()
        && p.autofix.is_none()
        // Work the guards refused (a secret, a denied path, planted hooks) is never pushed.
        && report.policy.guard.is_empty();
    if matches!(status, Status::Success | Status::NoChange) || draft_failure {
        status = ship::ship(&p, &mut report, opts.dry_run, draft_failure).await;
    }
    let end = match status {
        Status::Success | Status::NoChange | Status::Skipped => State::Done,
        Status::Cancelled => State::Aborted,
        _ => State::Failed,
    };
    if !machine.state().is_terminal() {
        turns::enter(&mut machine, &p.events, end, status.as_str());
    }
    report.states = machine.history();
    report.classify_faults();
    if report.summary.is_empty() {
        report.summary = p.redactor.apply(&summarize::write(&report, status));
    }
    report.status = status;
    report.exit_code = status.exit_code();
    report.duration_ms = started.elapsed().as_millis() as u64;
    p.events.emit(Event::RunCompleted {
        status: status.as_str().into(),
        exit_code: report.exit_code,
        duration_ms: report.duration_ms,
    });
    if let Err(e) = report::write_all(&p.report_dir, &report, &p.redactor) {
        tracing::error!("cannot write the reports to {}: {e}", p.report_dir.display());
        return Ok(RunOutcome {
            exit_code: crate::exit::INFRA_FAILURE,
            line: format!("hone: error: cannot write reports: {e}"),
        });
    }
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        ship::actions_integration(&p, &report, opts.commands_out.as_mut());
    }
    Ok(RunOutcome { exit_code: report.exit_code, line: report.one_line(&p.report_dir) })
}

/// Branch, loop, then commit or save, always putting the user's checkout back.
async fn execute(
    p: &Prepared,
    report: &mut RunReport,
    machine: &mut Machine,
    cancel: &CancellationToken,
) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    let original = ws.original_head()?;
    let base = ws.resolve_base(job.repo.base.as_deref())?;
    report.base_sha = base.to_string();
    report.base_branch = match (&job.repo.base, &original) {
        _ if p.autofix.is_some() => p.autofix.as_ref().map(|t| t.base_ref.clone()).unwrap_or_default(),
        (Some(b), _) if ws.is_branch(b) => b.clone(),
        (Some(b), _) if b.starts_with("origin/") => b.trim_start_matches("origin/").to_string(),
        (_, OriginalHead::Branch(b)) => b.clone(),
        _ => "main".into(),
    };
    ws.start_branch(&job.git.branch, base, job.repo.allow_dirty)?;
    let result = work(p, report, machine, cancel, base).await;
    if job.repo.allow_dirty {
        report.warnings.push(format!("`repo.allow_dirty` is set: the work tree was left on `{}`", job.git.branch));
    } else {
        let restored = ws.restore(&original);
        if report.commit.is_none() {
            let _ = ws.drop_branch_if_at(&job.git.branch, base);
        }
        if let Err(e) = restored {
            report.errors.push(ErrorRecord {
                code: Code::Git,
                message: format!("could not restore the original checkout: {}", e.message),
            });
        }
    }
    result
}

async fn work(
    p: &Prepared,
    report: &mut RunReport,
    machine: &mut Machine,
    cancel: &CancellationToken,
    base: git2::Oid,
) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    let deadline = Instant::now() + job.limits.max_wall_time;
    let root =
        Root::new(ws.root()).map_err(|e| HoneError::new(Code::Io, format!("cannot resolve the repo root: {e}")))?;
    let git_guard = GitGuard::snapshot(&ws.git_dir());
    let ctx = ToolContext {
        root,
        limits: job.tools.clone(),
        env: setup::command_env(&p.policy),
        redactor: p.redactor.clone(),
        cancel: cancel.child_token(),
        deadline,
        changes: Mutex::new(tools::patch::ChangeLog::default()),
        policy: p.policy.clone(),
        sandbox: p.sandbox.clone(),
        decisions: Mutex::new(Vec::new()),
    };
    let mut lp = turns::Loop {
        job,
        model: &p.model,
        tools: &ctx,
        specs: tools::specs()
            .into_iter()
            .chain(plan::specs().into_iter().filter(|s| job.plan || s.name != "update_plan"))
            .collect(),
        events: &p.events,
        report,
        messages: vec![],
        deadline,
        machine,
        loops: Default::default(),
        degenerate_streak: 0,
        ws,
        base,
        clarify_requested: false,
        last_request: Vec::new(),
        calibration: 1.0,
        reuse_sum: 0.0,
    };
    lp.report.context_window = job.model.context_window;
    // The baseline, before any change; then context and execution.
    let baseline = tokio::select! {
        r = tokio::time::timeout_at(deadline, lp.verify(0)) => r.is_ok(),
        () = cancel.cancelled() => false,
    };
    if baseline && !cancel.is_cancelled() {
        lp.enter(State::ContextBuilding, "intake passed; baseline taken");
        let map = repomap::build(ws.root(), &job.task, job.repo_map_tokens);
        let start = if job.plan { prompt::START_WITH_PLAN } else { prompt::START };
        lp.messages = vec![Message::system(prompt::system(job, ws.root(), &map)), Message::user(start)];
        lp.first_checkpoint();
        if job.plan {
            lp.enter(State::Planning, "waiting for the model's plan");
        } else {
            lp.enter(State::Executing, "planning is off (`plan: false`)");
        }
    }
    let budget_note = || format!("the wall-time budget ({}) ran out", spec::duration::format(job.limits.max_wall_time));
    let status = if !baseline {
        if !cancel.is_cancelled() {
            lp.report.errors.push(ErrorRecord {
                code: Code::Budget,
                message: format!("{} while taking the baseline", budget_note()),
            });
        }
        if cancel.is_cancelled() { Status::Cancelled } else { Status::BudgetExhausted }
    } else {
        tokio::select! {
            s = tokio::time::timeout_at(deadline, lp.drive()) => s.unwrap_or_else(|_| {
                lp.report.errors.push(ErrorRecord { code: Code::Budget, message: budget_note() });
                lp.enter(State::Summarizing, "the wall-time budget ran out");
                Status::BudgetExhausted
            }),
            () = cancel.cancelled() => Status::Cancelled,
        }
    };
    if status == Status::Cancelled || cancel.is_cancelled() {
        turns::enter(machine, &p.events, State::Aborted, "cancelled by a signal");
    }
    let status = if cancel.is_cancelled() { Status::Cancelled } else { status };
    if status == Status::Cancelled {
        report.errors.push(ErrorRecord { code: Code::Cancelled, message: "the run was cancelled by a signal".into() });
    }
    // Guards: nothing planted in .git, nothing written where the policy forbids, nothing too big.
    let planted = git_guard.check_and_restore();
    report.files_changed = ws.changes(base)?;
    let mut problems: Vec<String> =
        planted.iter().map(|f| format!("a command wrote `{f}`; it was put back as it was")).collect();
    problems.extend(diff_guard(&p.policy, &report.files_changed));
    if !p.redactor.is_empty() {
        let diff = ws.diff_text(base)?;
        if p.redactor.apply(&diff) != diff {
            problems.push(
                "the change contains the value of a secret (or an encoding of it); committing it would leak it".into(),
            );
        }
    }
    report.policy.guard = problems.clone();
    let status = if status == Status::Success && !problems.is_empty() {
        let message = format!("the change was refused before commit: {}", problems.join("; "));
        report.errors.push(ErrorRecord { code: Code::PolicyDenied, message });
        Status::Failed
    } else {
        status
    };
    finish(p, report, status, base)
}

/// Commit a verified change, or save unverified work on a private ref.
fn finish(p: &Prepared, report: &mut RunReport, status: Status, base: git2::Oid) -> Result<Status, HoneError> {
    let changed = !report.files_changed.is_empty();
    let heading_for = if status == Status::Success && !changed { Status::NoChange } else { status };
    report.summary = p.redactor.apply(&summarize::write(report, heading_for));
    let result = finish_inner(p, report, status, base, changed);
    if !matches!(result, Ok(Status::Success | Status::NoChange)) {
        // Written again now that the saved ref (if any) is known.
        report.summary = p.redactor.apply(&summarize::write(report, *result.as_ref().unwrap_or(&Status::Error)));
    }
    result
}

fn finish_inner(
    p: &Prepared,
    report: &mut RunReport,
    status: Status,
    base: git2::Oid,
    changed: bool,
) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    match status {
        Status::Success if !changed => Ok(Status::NoChange),
        Status::Success if job.git.commit => {
            let message = p.redactor.apply(&summarize::commit_message(job, report));
            let sha = ws.commit(base, &message, &job.git.author_name, &job.git.author_email)?.to_string();
            p.events.emit(Event::Commit {
                sha: sha.clone(),
                branch: job.git.branch.clone(),
                files_changed: report.files_changed.len(),
            });
            report.commit = Some(CommitInfo { sha, branch: job.git.branch.clone(), message });
            Ok(Status::Success)
        }
        Status::Success => {
            report.warnings.push("`git.commit` is false: the verified change was not committed".into());
            Ok(Status::Success)
        }
        other if changed => {
            let refname = format!("refs/hone/{}/failed", job.name);
            let msg = format!(
                "hone: unverified work of a {} run of {}\n\nRun: {}\n",
                other.as_str(),
                job.name,
                report.run_id
            );
            match ws.snapshot(base, &refname, &msg, &job.git.author_name, &job.git.author_email) {
                Ok(_) => report.saved_ref = Some(refname),
                Err(e) => report.warnings.push(format!("could not save the unverified work: {}", e.message)),
            }
            Ok(other)
        }
        other => Ok(other),
    }
}
