//! One `hone run`: intake (spec, model, repo), the turn loop under the run's budgets, then
//! commit or save the work, restore the user's checkout, and write every report.

pub mod history;
pub mod prompt;
pub mod setup;
pub mod turns;

use crate::error::{Code, HoneError};
use crate::events::{Events, now_rfc3339};
use crate::git::{OriginalHead, Workspace};
use crate::protocol::{Event, Message};
use crate::redact::Redactor;
use crate::report::{self, CommitInfo, ErrorRecord, RunReport, Status};
use crate::spec::{self, Job};
use crate::tools::{self, ToolContext, paths::Root};
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
}

/// How the run ended, for the CLI.
pub struct RunOutcome {
    pub exit_code: i32,
    /// The one-line result for stdout (empty under `--json`).
    pub line: String,
}

/// Input problems found before the run starts: rendered messages for stderr (exit 2).
#[derive(Debug)]
pub struct Invalid(pub String);

pub async fn run(mut opts: RunOptions) -> Result<RunOutcome, Invalid> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let mut job = spec::load(&opts.spec).map_err(|e| Invalid(e.render()))?;
    if let Some(r) = opts.repo.take() {
        job.repo.path = r;
    }
    if let Some(d) = opts.report_dir.take() {
        job.report_dir = d;
    }
    let redactor = opts.redactor.clone();
    setup::collect_secrets(&redactor, &job);
    let model = setup::model(&job).map_err(Invalid)?;
    if job.repo.scratch {
        let dest = job.spec_path.parent().unwrap_or(std::path::Path::new(".")).join(".hone/scratch").join(&job.name);
        crate::git::init_scratch(&job.repo.path, &dest).map_err(|e| Invalid(e.render()))?;
        job.repo.path = dest;
    }
    let ws = Workspace::open(&job.repo.path, std::slice::from_ref(&job.report_dir)).map_err(|e| Invalid(e.render()))?;
    if !job.repo.allow_dirty {
        let dirty = ws.dirty_paths().map_err(|e| Invalid(e.render()))?;
        if !dirty.is_empty() {
            let list: Vec<_> = dirty.iter().take(10).map(|p| format!("    {p}")).collect();
            return Err(Invalid(format!(
                "error[E_GIT]: the work tree at {} has uncommitted changes:\n{}\n  = help: commit or stash them first, or set `repo.allow_dirty: true` to start anyway",
                ws.root().display(),
                list.join("\n")
            )));
        }
    }
    std::fs::create_dir_all(&job.report_dir)
        .map_err(|e| Invalid(format!("error[E_IO]: cannot create the report dir {}: {e}", job.report_dir.display())))?;
    let report_dir = job.report_dir.canonicalize().unwrap_or_else(|_| job.report_dir.clone());
    let run_id = uuid::Uuid::new_v4().to_string();
    let events = Events::new(run_id.clone(), redactor.clone(), opts.json_out.take());
    if let Err(e) = events.open_file(&report_dir.join("events.jsonl")) {
        return Err(Invalid(format!("error[E_IO]: cannot write {}: {e}", report_dir.join("events.jsonl").display())));
    }
    let mut report = RunReport::new(&job.name, &run_id, started_at);
    report.provider = job.model.provider.as_str().into();
    report.model = job.model.name.clone();
    report.repo = ws.root().display().to_string();
    report.base = job.repo.base.clone().unwrap_or_else(|| "HEAD".into());
    report.branch = job.git.branch.clone();
    if job.verify.is_empty() {
        report.warnings.push("no verify commands are configured: the change is not verified".into());
    }
    events.emit(Event::RunStarted {
        job: job.name.clone(),
        repo: report.repo.clone(),
        branch: job.git.branch.clone(),
        provider: report.provider.clone(),
        model: report.model.clone(),
    });

    let status = match execute(&job, &ws, &model, &events, &mut report, &opts.cancel, &redactor).await {
        Ok(s) => s,
        Err(e) => {
            report.errors.push(ErrorRecord { code: e.code, message: redactor.apply(&e.message) });
            Status::Error
        }
    };
    report.status = status;
    report.exit_code = status.exit_code();
    report.duration_ms = started.elapsed().as_millis() as u64;
    events.emit(Event::RunCompleted {
        status: status.as_str().into(),
        exit_code: report.exit_code,
        duration_ms: report.duration_ms,
    });
    if let Err(e) = report::write_all(&report_dir, &report, &redactor) {
        tracing::error!("cannot write the reports to {}: {e}", report_dir.display());
        return Ok(RunOutcome {
            exit_code: crate::exit::INFRA_FAILURE,
            line: format!("hone: error: cannot write reports: {e}"),
        });
    }
    Ok(RunOutcome { exit_code: report.exit_code, line: report.one_line(&report_dir) })
}

/// Branch, loop, then commit or save, always putting the user's checkout back.
async fn execute(
    job: &Job,
    ws: &Workspace,
    model: &crate::model::Model,
    events: &Events,
    report: &mut RunReport,
    cancel: &CancellationToken,
    redactor: &Redactor,
) -> Result<Status, HoneError> {
    let original = ws.original_head()?;
    let base = ws.resolve_base(job.repo.base.as_deref())?;
    report.base_sha = base.to_string();
    ws.start_branch(&job.git.branch, base, job.repo.allow_dirty)?;
    let result = work(job, ws, model, events, report, cancel, redactor, base).await;
    if !job.repo.allow_dirty {
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
    } else {
        report.warnings.push(format!("`repo.allow_dirty` is set: the work tree was left on `{}`", job.git.branch));
    }
    if let OriginalHead::Branch(b) = &original {
        tracing::info!("restored the checkout to branch {b}");
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn work(
    job: &Job,
    ws: &Workspace,
    model: &crate::model::Model,
    events: &Events,
    report: &mut RunReport,
    cancel: &CancellationToken,
    redactor: &Redactor,
    base: git2::Oid,
) -> Result<Status, HoneError> {
    let deadline = Instant::now() + job.limits.max_wall_time;
    let root =
        Root::new(ws.root()).map_err(|e| HoneError::new(Code::Io, format!("cannot resolve the repo root: {e}")))?;
    let ctx = ToolContext {
        root,
        limits: job.tools.clone(),
        env: setup::command_env(job),
        redactor: redactor.clone(),
        cancel: cancel.child_token(),
        deadline,
        changes: Mutex::new(tools::patch::ChangeLog::default()),
    };
    let mut lp = turns::Loop {
        job,
        model,
        tools: &ctx,
        specs: tools::specs(),
        events,
        report,
        messages: vec![Message::system(prompt::system(job, ws.root())), Message::user(prompt::START)],
        deadline,
    };
    let status = tokio::select! {
        s = tokio::time::timeout_at(deadline, lp.drive()) => match s {
            Ok(s) => s,
            Err(_) => {
                lp.report.errors.push(ErrorRecord { code: Code::Budget, message: format!("the wall-time budget ({}) ran out", spec::duration::format(job.limits.max_wall_time)) });
                Status::BudgetExhausted
            }
        },
        () = cancel.cancelled() => Status::Cancelled,
    };
    let status = if cancel.is_cancelled() { Status::Cancelled } else { status };
    if status == Status::Cancelled {
        report.errors.push(ErrorRecord { code: Code::Cancelled, message: "the run was cancelled by a signal".into() });
    }
    report.files_changed = ws.changes(base)?;
    let changed = !report.files_changed.is_empty();
    match status {
        Status::Success if !changed => Ok(Status::NoChange),
        Status::Success if job.git.commit => {
            let message = commit_message(job, report);
            let sha = ws.commit(base, &redactor.apply(&message), &job.git.author_name, &job.git.author_email)?;
            events.emit(Event::Commit {
                sha: sha.to_string(),
                branch: job.git.branch.clone(),
                files_changed: report.files_changed.len(),
            });
            report.commit = Some(CommitInfo {
                sha: sha.to_string(),
                branch: job.git.branch.clone(),
                message: redactor.apply(&message),
            });
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

/// First line: a summary of the change; body: what was done and the checks that passed.
fn commit_message(job: &Job, report: &RunReport) -> String {
    let first = report.final_message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let first = first.trim_start_matches(['#', '*', '-', ' ']);
    let mut subject: String = if first.is_empty() { format!("hone: {}", job.name) } else { format!("hone: {first}") };
    if subject.chars().count() > 72 {
        subject = subject.chars().take(69).collect::<String>() + "...";
    }
    let mut body = String::new();
    if !report.final_message.trim().is_empty() {
        body.push_str(report.final_message.trim());
        body.push_str("\n\n");
    }
    let checks: Vec<String> =
        report.final_checks().iter().map(|c| format!("- {}: `{}` passed", c.name, c.command)).collect();
    if !checks.is_empty() {
        body.push_str("Checks:\n");
        body.push_str(&checks.join("\n"));
        body.push_str("\n\n");
    }
    body.push_str(&format!(
        "Task: {}\n\nHone-Job: {}\nHone-Run: {}\n",
        job.task.trim().lines().next().unwrap_or(""),
        job.name,
        report.run_id
    ));
    format!("{subject}\n\n{body}")
}
