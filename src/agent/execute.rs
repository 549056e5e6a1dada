//! The run proper: the run's branch, the baseline (a check that cannot run stops here, before
//! the model is asked anything), the turn loop under the wall-time budget and cancellation, the
//! guards, then commit or save, always putting the user's checkout back.

use super::intake::Prepared;
use super::run::Run;
use super::state::State;
use super::{finish, prompt, repomap, setup, turns};
use crate::error::{Code, HoneError};
use crate::git::OriginalHead;
use crate::guard::{GitGuard, diff_guard};
use crate::protocol::Message;
use crate::record::Status;
use crate::sandbox::Sandbox;
use crate::spec;
use crate::tools::{self, ToolContext, paths::Root};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Whether a commit is hone's own for `job` (its identity and the job's trailer): such commits
/// on an existing branch of the job's name may be dropped when the run starts it again.
fn hones_commit(job: &spec::Job) -> impl Fn(&git2::Commit<'_>) -> bool + Send + 'static {
    let job = job.clone();
    move |c| {
        let by = crate::forge::autofix::MadeBy::of(c);
        crate::forge::autofix::made_by_hone(&String::from_utf8_lossy(c.message_bytes()), &by, &job)
    }
}

/// Branch, loop, then commit or save, always putting the user's checkout back.
pub async fn execute(p: &Prepared, run: &mut Run, cancel: &CancellationToken) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    let original = ws.original_head()?;
    let base = ws.resolve_base(job.repo.base.as_deref())?;
    run.record.base_sha = base.to_string();
    run.record.base_branch = match (&job.repo.base, &original) {
        _ if p.autofix.is_some() => p.autofix.as_ref().map(|t| t.base_ref.clone()).unwrap_or_default(),
        (Some(b), _) if ws.is_branch(b) => b.clone(),
        (Some(b), _) if b.starts_with("origin/") => b.trim_start_matches("origin/").to_string(),
        (_, OriginalHead::Branch(b)) => b.clone(),
        _ => "main".into(),
    };
    let (branch, keep, hones) = (job.git.branch.clone(), job.repo.allow_dirty, hones_commit(job));
    let before = ws.blocking(move |ws| ws.start_branch(&branch, base, keep, &hones)).await?;
    let result = work(p, run, cancel, base).await;
    if job.repo.allow_dirty {
        run.record.warnings.push(format!("`repo.allow_dirty` is set: the work tree was left on `{}`", job.git.branch));
    } else {
        // The checkout back as it was, and what the run left in ignored paths (build output,
        // caches) removed. Not cut short by a cancel: this is what leaves the repo known.
        let ignored = p.ignored.clone();
        let back = original.clone();
        let (restored, cleaned) = ws
            .blocking(move |ws| Ok((ws.restore(&back), ws.remove_new_ignored(&ignored))))
            .await
            .unwrap_or_else(|e| (Err(e), Ok(Vec::new())));
        match cleaned {
            Ok(gone) if !gone.is_empty() => tracing::debug!("removed what the run left in ignored paths: {gone:?}"),
            Ok(_) => {}
            Err(e) => run.record.warnings.push(format!("could not clean ignored paths the run wrote: {}", e.message)),
        }
        // A branch hone made goes; a person's branch of that name goes back where it was.
        if run.record.commit.is_none() {
            let _ = ws.put_branch_back(&job.git.branch, base, before);
        }
        match restored {
            Ok(links) if !links.is_empty() => run.record.warnings.push(format!(
                "symlinks stood where the repository has files or directories ({}); they were removed, not followed, when the checkout was restored",
                links.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
            )),
            Ok(_) => {}
            Err(e) => run.record.errors.push(HoneError::new(Code::Git, format!("could not restore the original checkout: {}", e.message),)),
        }
    }
    result
}

async fn tool_context(
    p: &Prepared,
    cancel: &CancellationToken,
    deadline: Instant,
    sandbox: crate::sandbox::Sandbox,
) -> Result<Arc<ToolContext>, HoneError> {
    let root =
        Root::new(p.ws.root()).map_err(|e| HoneError::new(Code::Io, format!("cannot resolve the repo root: {e}")))?;
    let protected = p.ws.blocking(|ws| ws.protected_entries()).await?;
    Ok(Arc::new(ToolContext {
        root,
        limits: p.job.tools.clone(),
        env: setup::command_env(&p.policy, &p.env),
        redactor: p.redactor.clone(),
        cancel: cancel.child_token(),
        deadline,
        changes: Mutex::new(tools::patch::ChangeLog::default()),
        policy: p.policy.clone(),
        protected,
        sandbox,
        decisions: Mutex::new(Vec::new()),
        mcp: Default::default(),
    }))
}

/// The jails of the job's MCP servers (one per stdio server; an HTTP server needs none), made
/// before the baseline runs anything: each server's view of the repository is fixed before any
/// code but hone's has run since setup.
async fn mcp_jails(
    p: &Prepared,
    ctx: &ToolContext,
    cancel: &CancellationToken,
) -> Vec<Result<Sandbox, crate::sandbox::Error>> {
    let stdio: Vec<String> = p
        .job
        .mcp
        .iter()
        .filter(|s| matches!(s.transport, spec::McpTransport::Stdio { .. }))
        .map(|s| s.name.clone())
        .collect();
    let (cancel, deadline) = (cancel.clone(), p.deadline.into_std());
    let stop = move || cancel.is_cancelled() || std::time::Instant::now() >= deadline;
    let egress = (&p.policy.mcp_egress(), &p.egress);
    let mut jails = crate::sandbox::services(&ctx.sandbox, &stdio, egress, p.ws.root(), stop).await.into_iter();
    p.job
        .mcp
        .iter()
        .map(|s| match s.transport {
            spec::McpTransport::Stdio { .. } => jails.next().unwrap_or(Err(crate::sandbox::Error::NoJail)),
            spec::McpTransport::Http { .. } => Ok(Sandbox::default()),
        })
        .collect()
}

/// Start the job's MCP servers (stdio ones in `jails`) and hand them to the tools.
async fn start_mcp(
    p: &Prepared,
    ctx: &ToolContext,
    cancel: &CancellationToken,
    jails: Vec<Result<Sandbox, crate::sandbox::Error>>,
) {
    if p.job.mcp.is_empty() {
        return;
    }
    let inputs = crate::mcp::connect::Inputs {
        root: p.ws.root(),
        command_env: &ctx.env,
        run_env: &p.env,
        redactor: &p.redactor,
    };
    let bounds = crate::mcp::Bounds { cancel: cancel.clone(), deadline: p.deadline };
    let hub = crate::mcp::Hub::start(&p.job.mcp, jails, &p.policy, &inputs, &bounds, p.events.clone()).await;
    let _ = ctx.mcp.set(hub);
}

/// Why the run stops before the first request (code, message, status, reason): a check that
/// cannot run, a required MCP server that did not start, saved work (`--continue`) that does
/// not apply. Otherwise the note on the saved work it took up, if any.
type Stop = (Code, String, Status, &'static str);

async fn before_start(
    lp: &mut turns::Loop<'_>,
    p: &Prepared,
    ctx: &ToolContext,
    cancel: &CancellationToken,
) -> Result<Option<String>, Option<Stop>> {
    if let Some((code, why)) = crate::verify::unrunnable(&lp.run.record.baseline) {
        return Err(Some((code, why, Status::InvalidInput, "a check cannot run")));
    }
    if let Some(why) = ctx.mcp.get().filter(|_| !cancel.is_cancelled()).and_then(crate::mcp::Hub::required_down) {
        return Err(Some((Code::Mcp, why, Status::Error, "a required MCP server did not start")));
    }
    match &p.saved {
        Some(saved) => lp
            .take_up(saved)
            .await
            .map(Some)
            .map_err(|e| Some((e.code, e.message, Status::InvalidInput, "the saved work does not apply"))),
        None => Ok(None),
    }
}

/// The conversation's start once the baseline is taken: the repo map, the system prompt and the
/// first user turn, then planning or not.
async fn begin(
    lp: &mut turns::Loop<'_>,
    p: &Prepared,
    map: tokio::task::JoinHandle<String>,
    cancel: &CancellationToken,
    note: Option<String>,
) {
    lp.enter(State::ContextBuilding, "intake passed; baseline taken");
    let map = repomap::wait(map, (cancel, p.deadline)).await;
    let job = &p.job;
    let start = if job.plan { prompt::START_WITH_PLAN } else { prompt::START };
    let mut messages = vec![Message::system(prompt::system(job, p.ws.root(), &map, &p.policy))];
    // A second attempt from a report dir goes on with the failed run's conversation.
    let history = p.saved.as_ref().map(|r| r.history.clone()).unwrap_or_default();
    let start = match note {
        Some(n) if !history.is_empty() => n,
        Some(n) => format!("{start}\n\n{n}"),
        None => start.to_string(),
    };
    messages.extend(history);
    messages.push(Message::user(start));
    lp.start(messages);
    if job.plan {
        lp.enter(State::Planning, "waiting for the model's plan");
    } else {
        lp.enter(State::Executing, "planning is off (`plan: false`)");
    }
}

async fn work(p: &Prepared, run: &mut Run, cancel: &CancellationToken, base: git2::Oid) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    let deadline = p.deadline;
    // Setup first (in its own jail), then the run's jail; without setup, intake's jail is it.
    let sandbox = if job.setup.is_empty() {
        p.sandbox.clone()
    } else {
        match super::deps::run(p, run, cancel).await {
            Ok((sandbox, _)) => sandbox,
            Err(status) => return Ok(status),
        }
    };
    let ctx = tool_context(p, cancel, deadline, sandbox).await?;
    let git_guard = GitGuard::snapshot(&ws.git_dir());
    let mut lp = turns::Loop::new(p, &ctx, run, deadline, base);
    // The repo map is built while the baseline runs (both only read the tree as it was).
    let early = p.map.lock().ok().and_then(|mut m| m.take());
    let map = early.unwrap_or_else(|| repomap::spawn(ws, &job.task, job.repo_map_tokens, &p.policy));
    // The baseline, before any change (the job's MCP servers start meanwhile, in jails made
    // first); then context and execution.
    let jails = mcp_jails(p, &ctx, cancel).await;
    let baseline = async {
        tokio::select! {
            r = tokio::time::timeout_at(deadline, lp.verify(0)) => r.is_ok(),
            () = cancel.cancelled() => false,
        }
    };
    let (baseline, ()) = tokio::join!(baseline, start_mcp(p, &ctx, cancel, jails));
    let stop = if baseline { before_start(&mut lp, p, &ctx, cancel).await } else { Err(None) };
    let stop = match stop {
        Err(Some((code, why, status, reason))) => {
            lp.run.record.errors.push(HoneError::new(code, p.redactor.apply(&why)));
            lp.enter(State::Summarizing, reason);
            Some(status)
        }
        Ok(note) if !cancel.is_cancelled() => {
            begin(&mut lp, p, map, cancel, note).await;
            None
        }
        _ => None,
    };
    let budget_note = || format!("the wall-time budget ({}) ran out", spec::duration::format(job.limits.max_wall_time));
    let status = if let Some(status) = stop {
        status
    } else if !baseline {
        if !cancel.is_cancelled() {
            lp.run
                .record
                .errors
                .push(HoneError::new(Code::Budget, format!("{} while taking the baseline", budget_note())));
        }
        if cancel.is_cancelled() { Status::Cancelled } else { Status::BudgetExhausted }
    } else {
        tokio::select! {
            s = tokio::time::timeout_at(deadline, lp.drive()) => s.unwrap_or_else(|_| {
                lp.run.record.errors.push(HoneError::new(Code::Budget, budget_note()));
                lp.enter(State::Summarizing, "the wall-time budget ran out");
                Status::BudgetExhausted
            }),
            () = cancel.cancelled() => Status::Cancelled,
        }
    };
    lp.settle_marks().await;
    let touched = lp.touched();
    drop(lp);
    if let Some(hub) = ctx.mcp.get() {
        hub.shutdown().await;
        run.record.mcp = hub.records();
    }
    if status == Status::Cancelled || cancel.is_cancelled() {
        turns::enter(&mut run.machine, &p.events, State::Aborted, "cancelled by a signal");
    }
    let status = if cancel.is_cancelled() { Status::Cancelled } else { status };
    if status == Status::Cancelled {
        run.record.errors.push(HoneError::new(Code::Cancelled, "the run was cancelled by a signal"));
    }
    let (status, may_save) = guards(p, run, status, base, &git_guard).await?;
    let status = finish::dropped_change(run, status, touched);
    finish::finish(p, run, status, base, may_save).await
}

/// How long the diffs of the change may take when the run's wall time is spent.
const MIN_DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// What the change is, within the policy's limits, and what is wrong with it: the problems,
/// and whether it carries a secret. The files are counted first, stopping one past the limit, so
/// a change of too many files is never diffed; no file larger than the byte limit is read.
async fn measure(p: &Prepared, run: &mut Run, base: git2::Oid) -> Result<(Vec<String>, bool), HoneError> {
    let (cap, max) = (p.policy.max_files_changed, p.policy.max_bytes_changed);
    let counted = p.ws.blocking(move |ws| ws.count_changed(cap, max)).await?;
    if counted.over {
        run.record.files_changed.clear();
        return Ok((vec![crate::guard::too_large(&p.policy, &counted)], false));
    }
    let want_diff = !p.redactor.is_empty();
    // The diffs get what is left of the wall time, and a few seconds when none is.
    let until = std::time::Instant::now() + p.deadline.saturating_duration_since(Instant::now()).max(MIN_DIFF_TIME);
    let Some(measured) = p.ws.blocking(move |ws| ws.changes(base, max, want_diff, until)).await? else {
        run.record.files_changed.clear();
        let why = "the change could not be diffed within the run's wall time (its files have very many changed lines); a change this costly to check is neither committed nor saved";
        return Ok((vec![why.to_string()], false));
    };
    let (changes, diff) = (measured.changes, measured.text);
    run.record.files_changed = changes;
    let mut problems = diff_guard(&p.policy, &run.record.files_changed);
    let out = crate::guard::links_out(p.ws.root(), &run.record.files_changed);
    if !out.is_empty() {
        problems.push(format!("the change adds symlinks that lead outside the repository: {}", out.join(", ")));
    }
    let (mut carried, unscanned) =
        crate::guard::binary_secrets(p.ws.root(), &run.record.files_changed, &p.redactor, max);
    if diff.is_some_and(|d| p.redactor.apply(&d) != d) {
        carried.insert(0, "the diff".into());
    }
    if !carried.is_empty() {
        problems.push(format!(
            "the change contains the value of a secret (or an encoding of it) in {}; committing it would leak it, so it is not saved either",
            carried.join(", ")
        ));
    }
    if !p.redactor.is_empty() && !unscanned.is_empty() {
        problems.push(format!(
            "{} larger than the byte limit ({max}), as far as hone reads a file to scan it for secrets; a change it cannot clear is not saved",
            unscanned.iter().map(|u| format!("`{u}` is")).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok((problems, !carried.is_empty() || (!p.redactor.is_empty() && !unscanned.is_empty())))
}

/// The guards: nothing planted in .git, nothing written where the policy forbids, nothing too
/// big, no secret in the change. A success they refuse becomes a failure. The second value is
/// false when the work must not be saved anywhere (it carries a secret).
async fn guards(
    p: &Prepared,
    run: &mut Run,
    status: Status,
    base: git2::Oid,
    git_guard: &GitGuard,
) -> Result<(Status, bool), HoneError> {
    let planted = git_guard.check_and_restore();
    let mut problems: Vec<String> =
        planted.iter().map(|f| format!("a command wrote `{f}`; it was put back as it was")).collect();
    let (found, secret) = measure(p, run, base).await?;
    problems.extend(found);
    run.record.policy.guard = problems.clone();
    if status == Status::Success && !problems.is_empty() {
        let message = format!("the change was refused before commit: {}", problems.join("; "));
        run.record.errors.push(HoneError::new(Code::PolicyDenied, message));
        return Ok((Status::Failed, !secret));
    }
    Ok((status, !secret))
}
