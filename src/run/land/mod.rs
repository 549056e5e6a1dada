//! Landing the work: the session's tools closed, the guards (nothing planted in `.git`, nothing
//! written where the policy forbids, nothing too big, no secret in the change), then commit or
//! save; and, however the run went, the user's checkout put back as it was.

mod commit;

use super::handoff::{Checkout, Ended, Lane, Scope};
use super::state::{Run, State};
use crate::error::{Code, HoneError};
use crate::guard::{GitGuard, diff_guard};
use crate::record::Status;
use crate::tools::ToolContext;
use std::sync::Arc;
use tokio::time::Instant;

/// The session's tools closed: its MCP servers stopped (what they did recorded) and its jail
/// gone, before the change is judged: no command the model started is still running while the
/// guards measure the change and it is committed.
pub async fn close(tools: Arc<ToolContext>, run: &mut Run) {
    if let Some(hub) = tools.mcp.get() {
        hub.shutdown().await;
        run.record.mcp = hub.records();
    }
    drop(tools);
}

/// The session's end (its tools closed) judged by the guards in `lane`'s tree: the status, and
/// whether the work may be saved anywhere (`judge`'s second value is false when it carries a
/// secret). A cancel is the status whatever the session said.
pub async fn judge(
    s: &Scope,
    lane: Lane<'_>,
    git_guard: &GitGuard,
    ended: &Ended,
    base: git2::Oid,
    run: &mut Run,
) -> Result<(Status, bool), HoneError> {
    // A try's lane is stopped alone when another try passed first (`cascade`).
    let why = if s.bound.cancel.is_cancelled() || lane.number == 0 {
        ("cancelled by a signal", "the run was cancelled by a signal")
    } else {
        ("stopped: another try passed its checks", "this try was stopped: another try passed its checks first")
    };
    if ended.status == Status::Cancelled || lane.bound.cancel.is_cancelled() {
        run.enter(lane.events, State::Aborted, why.0);
    }
    let status = if lane.bound.cancel.is_cancelled() { Status::Cancelled } else { ended.status };
    if status == Status::Cancelled {
        run.record.errors.push(HoneError::new(Code::Cancelled, why.1));
    }
    guards(s, lane, run, status, base, git_guard).await
}

/// The session's end (its tools closed), judged and landed in the main checkout: the run's status.
pub async fn land(s: &Scope, git_guard: GitGuard, ended: Ended, base: git2::Oid, run: &mut Run) -> Status {
    let landed = async {
        let (status, may_save) = judge(s, s.lane(), &git_guard, &ended, base, run).await?;
        if s.policy.read_only_repo {
            return Ok(commit::read_only(s, run, status));
        }
        let status = commit::dropped_change(run, status, ended.touched);
        commit::finish(s, run, status, base, may_save).await
    };
    match landed.await {
        Ok(status) => status,
        Err(e) => run.fail(&s.redactor, e),
    }
}

/// The checkout back as it was (unless `repo.allow_dirty`), and what the run left in ignored
/// paths removed. Not cut short by a cancel: this is what leaves the repo known.
pub async fn restore(s: &Scope, checkout: Checkout, run: &mut Run) {
    test_stop(&s.env, "after-commit");
    let (job, ws) = (&s.job, &s.ws);
    let Checkout { original, before, base, ignored, .. } = checkout;
    if job.repo.allow_dirty {
        run.record.warnings.push(format!("`repo.allow_dirty` is set: the work tree was left on `{}`", job.git.branch));
        release(s, run);
    } else {
        // The checkout back as it was, and what the run left in ignored paths (build output,
        // caches) removed. Not cut short by a cancel: this is what leaves the repo known.
        let back = original;
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
        let restored_ok = restored.is_ok();
        match restored {
            Ok(links) if !links.is_empty() => run.record.warnings.push(format!(
                "symlinks stood where the repository has files or directories ({}); they were removed, not followed, when the checkout was restored",
                links.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
            )),
            Ok(_) => {}
            Err(e) => run.record.errors.push(HoneError::new(Code::Git, format!("could not restore the original checkout: {}", e.message),)),
        }
        if restored_ok {
            release(s, run);
        } else {
            // The next run (or `hone recover`) saves what is left and puts the checkout back.
            s.marker.keep();
        }
    }
}

/// The checkout is back: the run's marker goes.
fn release(s: &Scope, run: &mut Run) {
    if let Err(e) = s.marker.release() {
        run.record.warnings.push(e.message);
    }
}

/// A test hook, in debug builds only (release builds have none): with `HONE_TEST_STOP_AT` set
/// to `point`, hone stops itself there (SIGSTOP), so that a test can kill it at that point.
#[cfg(debug_assertions)]
fn test_stop(env: &crate::env::RunEnv, point: &str) {
    if env.var("HONE_TEST_STOP_AT") == Some(point) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
}

#[cfg(not(debug_assertions))]
fn test_stop(_: &crate::env::RunEnv, _: &str) {}

/// How long the diffs of the change may take when the run's wall time is spent.
const MIN_DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// What the change is, within the policy's limits, and what is wrong with it: the problems,
/// and whether it carries a secret. The files are counted first, stopping one past the limit, so
/// a change of too many files is never diffed; no file larger than the byte limit is read.
async fn measure(s: &Scope, p: Lane<'_>, run: &mut Run, base: git2::Oid) -> Result<(Vec<String>, bool), HoneError> {
    let redactor = &s.redactor;
    let (cap, max) = (p.policy.max_files_changed, p.policy.max_bytes_changed);
    let counted = p.ws.blocking(move |ws| ws.count_changed(cap, max)).await?;
    if counted.over {
        run.record.files_changed.clear();
        return Ok((vec![crate::guard::too_large(p.policy, &counted)], false));
    }
    let want_diff = !redactor.is_empty();
    // The diffs get what is left of the wall time, and a few seconds when none is.
    let until =
        std::time::Instant::now() + p.bound.deadline.saturating_duration_since(Instant::now()).max(MIN_DIFF_TIME);
    let Some(measured) = p.ws.blocking(move |ws| ws.changes(base, max, want_diff, until)).await? else {
        run.record.files_changed.clear();
        let why = "the change could not be diffed within the run's wall time (its files have very many changed lines); a change this costly to check is neither committed nor saved";
        return Ok((vec![why.to_string()], false));
    };
    let (changes, diff) = (measured.changes, measured.text);
    if !measured.withheld.is_empty() {
        let shown: Vec<String> = measured.withheld.iter().take(10).map(|w| format!("`{w}`")).collect();
        run.record.warnings.push(format!(
            "left out of the change: {} (commands may not read it: a credentials file or a path the policy denies reading, which hone never commits)",
            shown.join(", ")
        ));
    }
    run.record.files_changed = changes;
    let mut problems = diff_guard(p.policy, &run.record.files_changed);
    let out = crate::guard::links_out(p.ws.root(), &run.record.files_changed);
    if !out.is_empty() {
        problems.push(format!("the change adds symlinks that lead outside the repository: {}", out.join(", ")));
    }
    let (mut carried, unscanned) = crate::guard::binary_secrets(p.ws.root(), &run.record.files_changed, redactor, max);
    if diff.is_some_and(|d| redactor.apply(&d) != d) {
        carried.insert(0, "the diff".into());
    }
    if !carried.is_empty() {
        problems.push(format!(
            "the change contains the value of a secret (or an encoding of it) in {}; committing it would leak it, so it is not saved either",
            carried.join(", ")
        ));
    }
    if !redactor.is_empty() && !unscanned.is_empty() {
        problems.push(format!(
            "{} larger than the byte limit ({max}), as far as hone reads a file to scan it for secrets; a change it cannot clear is not saved",
            unscanned.iter().map(|u| format!("`{u}` is")).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok((problems, !carried.is_empty() || (!redactor.is_empty() && !unscanned.is_empty())))
}

/// The guards: nothing planted in .git, nothing written where the policy forbids, nothing too
/// big, no secret in the change. A success they refuse becomes a failure. The second value is
/// false when the work must not be saved anywhere (it carries a secret).
async fn guards(
    s: &Scope,
    p: Lane<'_>,
    run: &mut Run,
    status: Status,
    base: git2::Oid,
    git_guard: &GitGuard,
) -> Result<(Status, bool), HoneError> {
    let planted = git_guard.check_and_restore();
    let mut problems: Vec<String> =
        planted.iter().map(|f| format!("a command wrote `{f}`; it was put back as it was")).collect();
    let (found, secret) = measure(s, p, run, base).await?;
    problems.extend(found);
    run.record.policy.guard = problems.clone();
    if status == Status::Success && !problems.is_empty() {
        let message = format!("the change was refused before commit: {}", problems.join("; "));
        run.record.errors.push(HoneError::new(Code::PolicyDenied, message));
        return Ok((Status::Failed, !secret));
    }
    Ok((status, !secret))
}
