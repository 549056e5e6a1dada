//! The environment and the baseline: the run's branch; the setup commands and then the run's
//! jail; the tools and the job's MCP servers; the checks as they stand before any change (a check
//! that cannot run stops the run here, before the model is asked anything); and, for
//! `--continue`, the saved work of a failed run applied on top.

mod setup;

use super::checks::Checks;
use super::handoff::{Checkout, Lane, Ready, Scope};
use super::state::{Run, State};
use crate::error::{Code, HoneError};
use crate::forge::autofix;
use crate::git::{OriginalHead, Saved};
use crate::guard::GitGuard;
use crate::record::Status;
use crate::sandbox::Sandbox;
use crate::spec;
use crate::tools::{self, ToolContext, paths::Root};
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// What the model reads of the saved commit's message (the failed run's summary).
const MAX_NOTE: usize = 4000;

/// Whether a commit is hone's own for `job` (its identity and the job's trailer): such commits
/// on an existing branch of the job's name may be dropped when the run starts it again.
fn hones_commit(job: &spec::Job) -> impl Fn(&git2::Commit<'_>) -> bool + Send + 'static {
    let job = job.clone();
    move |c| {
        let by = autofix::MadeBy::of(c);
        autofix::made_by_hone(&String::from_utf8_lossy(c.message_bytes()), &by, &job)
    }
}

/// The run's branch, at the base; the checkout as it was, for the land stage to put back.
pub async fn check_out(
    s: &Scope,
    pr: Option<&autofix::Target>,
    ignored: Vec<String>,
    run: &mut Run,
) -> Result<Checkout, HoneError> {
    let (job, ws) = (&s.job, &s.ws);
    let original = ws.original_head()?;
    let base = ws.resolve_base(job.repo.base.as_deref())?;
    // A PR's instruction files are its base commit's (intake fetched it), never its head's; a
    // replay's, where the recorded run read them.
    let oid = |sha: &str| git2::Oid::from_str(sha).map_err(HoneError::from);
    let guidance = match (pr, &job.repo.guidance) {
        (Some(t), _) => t.base_sha.clone().and_then(|sha| oid(&sha)),
        (None, Some(sha)) => oid(sha),
        (None, None) => Ok(base),
    };
    run.record.base_sha = base.to_string();
    run.record.base_branch = match (&job.repo.base, &original, pr) {
        (_, _, Some(t)) => t.base_ref.clone(),
        (Some(b), _, _) if ws.is_branch(b) => b.clone(),
        (Some(b), _, _) if b.starts_with("origin/") => b.trim_start_matches("origin/").to_string(),
        (_, OriginalHead::Branch(b), _) => b.clone(),
        _ => "main".into(),
    };
    let (branch, keep, hones) = (job.git.branch.clone(), job.repo.allow_dirty, hones_commit(job));
    // The marker says where the branch starts (and was) before the checkout moves.
    s.marker.set_start(&branch, base, ws.branch_tip(&branch))?;
    let before = match ws.blocking(move |ws| ws.start_branch(&branch, base, keep, &hones)).await {
        Ok(before) => before,
        Err(e) => {
            // Moved part of the way: the marker stays, for the next run to put it back.
            if ws.original_head().ok().as_ref() != Some(&original) {
                s.marker.keep();
            }
            return Err(e);
        }
    };
    Ok(Checkout { original, before, base, ignored, guidance })
}

/// How a lane begins: the saved work a failed run left, if any, to take up after the
/// baseline; or the baseline another try of the job took.
pub struct Begin<'a> {
    pub saved: Option<&'a Saved>,
    /// The model gets the failed run's conversation back too.
    pub with_history: bool,
    /// The job's baseline, taken by its first try: copied, never taken again (`None`: take it).
    pub baseline: Option<&'a [crate::verify::CheckResult]>,
}

/// Setup, the run's jail, the tools and MCP servers, and the baseline (the repo map is built
/// meanwhile). `Err` is the run's status when setup failed or the tools could not be made
/// (recorded in `run`): then nothing else runs in this checkout.
pub async fn prepare(
    s: &Scope,
    lane: Lane<'_>,
    jail: Sandbox,
    checkout: &Checkout,
    map: Option<JoinHandle<String>>,
    begin: Begin<'_>,
    run: &mut Run,
) -> Result<Ready, Status> {
    // Setup first (in its own jail), then the run's jail; without setup, intake's jail is it.
    let (sandbox, setup_jail) = if s.job.setup.is_empty() {
        (jail, None)
    } else {
        (setup::run(s, lane, &jail, &checkout.ignored, run).await?, Some(jail))
    };
    let tools = match tool_context(s, lane, sandbox).await {
        Ok(t) => t,
        Err(e) => return Err(run.fail(&s.redactor, e)),
    };
    let git_guard = GitGuard::snapshot(&lane.ws.git_dir());
    let mut checks = Checks::new(tools.clone());
    // The repo map is built while the baseline runs (both only read the tree as it was).
    let map = map.unwrap_or_else(|| crate::repomap::spawn(lane.ws, &s.job.task, s.job.repo_map_tokens, lane.policy));
    // The baseline, before any change (the job's MCP servers start meanwhile, in jails made
    // first): each server's view of the repository is fixed before any code but hone's has run.
    let jails = mcp_jails(s, lane, &tools).await;
    let given = begin.baseline;
    let baseline = async {
        if let Some(taken) = given {
            run.record.baseline = taken.to_vec();
            return !lane.bound.cancel.is_cancelled();
        }
        tokio::select! {
            r = tokio::time::timeout_at(lane.bound.deadline, checks.run(s, lane, run, 0, true)) => r.is_ok(),
            () = lane.bound.cancel.cancelled() => false,
        }
    };
    let (baseline, ()) = tokio::join!(baseline, start_mcp(s, lane, &tools, jails));
    let mut ready = Ready { tools, checks, map, git_guard, setup_jail, stop: None, note: None, touched: false };
    if !baseline {
        ready.stop = Some(if lane.bound.cancel.is_cancelled() {
            Status::Cancelled
        } else {
            let budget = spec::duration::format(s.job.limits.max_wall_time);
            let why = format!("the wall-time budget ({budget}) ran out while taking the baseline");
            run.record.errors.push(HoneError::new(Code::Budget, why));
            Status::BudgetExhausted
        });
        return Ok(ready);
    }
    match before_start(s, lane, &ready.tools, begin, run).await {
        Err((code, why, status, reason)) => {
            run.record.errors.push(HoneError::new(code, s.redactor.apply(&why)));
            run.enter(lane.events, State::Summarizing, reason);
            ready.stop = Some(status);
        }
        Ok(taken) => {
            (ready.note, ready.touched) = taken.map_or((None, false), |(note, t)| (Some(note), t));
            if lane.bound.cancel.is_cancelled() {
                ready.stop = Some(Status::Cancelled);
            }
        }
    }
    Ok(ready)
}

async fn tool_context(s: &Scope, lane: Lane<'_>, sandbox: Sandbox) -> Result<Arc<ToolContext>, HoneError> {
    let root = Root::new(lane.ws.root())
        .map_err(|e| HoneError::new(Code::Io, format!("cannot resolve the repo root: {e}")))?;
    let protected = lane.ws.blocking(|ws| ws.protected_entries()).await?;
    Ok(Arc::new(ToolContext {
        root,
        limits: s.job.tools.clone(),
        env: crate::sandbox::command_env(lane.policy, &s.env, lane.ws.root()),
        redactor: s.redactor.clone(),
        bound: crate::bound::Bound::new(lane.bound.deadline, &lane.bound.cancel.child_token()),
        changes: Mutex::new(tools::patch::ChangeLog::default()),
        policy: lane.policy.clone(),
        protected,
        sandbox,
        decisions: Mutex::new(Vec::new()),
        mcp: Default::default(),
    }))
}

/// The jails of the job's MCP servers (one per stdio server; an HTTP server needs none), made
/// before the baseline runs anything.
async fn mcp_jails(s: &Scope, lane: Lane<'_>, tools: &ToolContext) -> Vec<Result<Sandbox, crate::sandbox::Error>> {
    let stdio: Vec<String> = s
        .job
        .mcp
        .iter()
        .filter(|m| matches!(m.transport, spec::McpTransport::Stdio { .. }))
        .map(|m| m.name.clone())
        .collect();
    let (cancel, deadline) = (lane.bound.cancel.clone(), lane.bound.deadline.into_std());
    let stop = move || cancel.is_cancelled() || std::time::Instant::now() >= deadline;
    let egress = lane.policy.mcp_egress();
    let mut jails =
        crate::sandbox::services(&tools.sandbox, &stdio, &egress, &s.egress, lane.ws.root(), stop).await.into_iter();
    s.job
        .mcp
        .iter()
        .map(|m| match m.transport {
            spec::McpTransport::Stdio { .. } => jails.next().unwrap_or(Err(crate::sandbox::Error::NoJail)),
            spec::McpTransport::Http { .. } => Ok(Sandbox::default()),
        })
        .collect()
}

/// Start the job's MCP servers (stdio ones in `jails`) and hand them to the tools.
async fn start_mcp(s: &Scope, lane: Lane<'_>, tools: &ToolContext, jails: Vec<Result<Sandbox, crate::sandbox::Error>>) {
    if s.job.mcp.is_empty() {
        return;
    }
    let inputs = crate::mcp::connect::Inputs {
        root: lane.ws.root(),
        command_env: &tools.env,
        run_env: &s.env,
        redactor: &s.redactor,
    };
    let bounds = lane.bound.clone();
    let hub = crate::mcp::Hub::start(&s.job.mcp, jails, lane.policy, &inputs, &bounds, lane.events.clone()).await;
    let _ = tools.mcp.set(hub);
}

/// Why the run stops before the first request (code, message, status, reason).
type Stop = (Code, String, Status, &'static str);

/// A check that cannot run, a required MCP server that did not start, or saved work
/// (`--continue`) that does not apply stops the run; otherwise the saved work taken up, if any:
/// the note for the model's first message, and whether it changed the tree.
async fn before_start(
    s: &Scope,
    lane: Lane<'_>,
    tools: &ToolContext,
    begin: Begin<'_>,
    run: &mut Run,
) -> Result<Option<(String, bool)>, Stop> {
    if let Some((code, why)) = crate::verify::unrunnable(&run.record.baseline) {
        return Err((code, why, Status::InvalidInput, "a check cannot run"));
    }
    if let Some(why) =
        tools.mcp.get().filter(|_| !lane.bound.cancel.is_cancelled()).and_then(crate::mcp::Hub::required_down)
    {
        return Err((Code::Mcp, why, Status::Error, "a required MCP server did not start"));
    }
    match begin.saved {
        Some(saved) => take_up(s, lane, saved, begin.with_history, run)
            .await
            .map(Some)
            .map_err(|e| (e.code, e.message, Status::InvalidInput, "the saved work does not apply")),
        None => Ok(None),
    }
}

/// Apply `saved`, counted as this run's change: the note for the model's first message, and
/// whether any file changed.
async fn take_up(
    s: &Scope,
    lane: Lane<'_>,
    saved: &Saved,
    with_history: bool,
    run: &mut Run,
) -> Result<(String, bool), HoneError> {
    let oid = saved.commit;
    let paths = lane.ws.blocking(move |ws| ws.apply_saved(oid)).await?;
    for rel in &paths {
        lane.ws.claim(rel);
    }
    let short = &oid.to_string()[..12];
    run.record.continued_from = Some(format!("{} ({short})", saved.refname));
    let said: String = saved.message.chars().take(MAX_NOTE).collect();
    let files = paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
    let note = s.redactor.apply(&format!(
        "This run continues an earlier attempt that did not pass its checks{}. Its work is already in the work tree \
         ({} file(s): {files}). The earlier attempt's own account:\n\n{said}\n\nReview that work: keep what is right, fix \
         what is not, and make the checks pass. Do not start over unless the work is wrong.",
        if with_history { " (the conversation above)" } else { "" },
        paths.len()
    ));
    Ok((note, !paths.is_empty()))
}
