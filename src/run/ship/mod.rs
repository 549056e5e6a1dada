//! Shipping a verified commit: push and open or update the PR, or (autofix) push and comment.

mod pr_text;
mod review;

use super::handoff::Scope;
use super::state::Run;
use crate::forge::{self, autofix};
use crate::record::Status;
use crate::spec::answer::Change;

/// What shipping needs beyond the scope: the request's say, and the PR being fixed in autofix.
pub struct Orders<'a> {
    /// Write `pr.md` and `change.patch` only: no push, no GitHub API calls.
    pub dry_run: bool,
    /// Whether the environment's repository is this one (`Request::env_repo`), and whether the
    /// remote's URL is trusted (`Request::remote_trusted`).
    pub env_repo: bool,
    pub remote_trusted: bool,
    pub autofix: Option<&'a autofix::Target>,
}

/// Only a verified commit (or a verified "nothing to change") is shipped, unless the job asks
/// for failed work as a draft PR.
pub async fn ship_if_verified(p: &Scope, orders: Orders<'_>, status: Status, run: &mut Run) -> Status {
    run.record.status = status;
    let draft_failure = matches!(status, Status::Failed | Status::BudgetExhausted)
        && p.job.pr.on_failure == crate::spec::raw::OnFailure::Draft
        && run.record.saved_ref.is_some()
        && orders.autofix.is_none()
        // Work the guards refused (a secret, a denied path, planted hooks) is never pushed.
        && run.record.policy.guard.is_empty();
    let verified = matches!(status, Status::Success | Status::NoChange);
    if p.job.change == Change::None {
        // A read-only job's answer is its result: there is nothing to ship.
        return status;
    }
    if p.job.change == Change::Review {
        // Only verified work is ever offered, and only ever as a review.
        return if verified { review::ship(p, orders, run).await } else { status };
    }
    if verified || draft_failure {
        return ship(p, orders, draft_failure, run).await;
    }
    status
}

/// Push and open or update the PR; a failure here is an infrastructure failure (exit 3).
async fn ship(p: &Scope, orders: Orders<'_>, draft_failure: bool, run: &mut Run) -> Status {
    let partial_ref = if draft_failure { run.record.saved_ref.clone() } else { None };
    let head = match (&run.record.commit, &partial_ref) {
        (Some(c), _) => Some(c.sha.clone()),
        (None, Some(r)) => p.ws.resolve_base(Some(r)).ok().map(|o| o.to_string()),
        _ => None,
    };
    let patch = change_patch(p, run, head.as_deref()).await;
    let title = pr_text::title(&p.job.pr.title, run);
    let request = forge::PrRequest {
        title: if partial_ref.is_some() { format!("[checks failing] {title}") } else { title },
        body: p.redactor.apply(&pr_text::body(run)),
        changed: (run.record.status == Status::Success && run.record.commit.is_some()) || partial_ref.is_some(),
        head,
        patch: patch.map(|t| p.redactor.apply(&t)),
    };
    if let (Some(_), Some(patch)) = (&request.head, &request.patch)
        && let Err(e) = crate::output::write_change(&p.report_dir, &request.title, &request.body, patch)
    {
        run.record.errors.push(e);
        return Status::Error;
    }
    let place = match place(p, &orders).await {
        Ok(place) => place,
        Err(e) => {
            run.record.errors.push(p.redactor.error(e));
            return Status::Error;
        }
    };
    let s = forge::Ship {
        job: &p.job,
        env: &p.env,
        shared: &p.shared.forge,
        ws: &p.ws,
        bound: &p.bound,
        dry_run: orders.dry_run,
        base_branch: run.record.base_branch.clone(),
        autofix: orders.autofix,
        partial_ref,
        place: &place,
    };
    match s.run(&request).await {
        Ok(pr) => {
            if let Some(n) = &pr.notice {
                tracing::info!("{n}");
            }
            run.record.warnings.extend(pr.warnings.iter().cloned());
            run.record.pr = Some(pr);
            run.record.status
        }
        Err(e) => {
            run.record.errors.push(p.redactor.error(e));
            Status::Error
        }
    }
}

/// The change from the run's base to `head`, as a patch; `None` when there is no head or it
/// cannot be diffed.
async fn change_patch(p: &Scope, run: &Run, head: Option<&str>) -> Option<String> {
    match (head.map(git2::Oid::from_str), git2::Oid::from_str(&run.record.base_sha)) {
        (Some(Ok(h)), Ok(base)) => p.ws.blocking(move |ws| ws.diff_commits(base, h)).await.ok(),
        _ => None,
    }
}

/// Where the change goes, with a GitHub App's token when one is configured (not for a dry run,
/// which calls no API).
async fn place(p: &Scope, orders: &Orders<'_>) -> crate::error::Result<forge::place::Place> {
    let mut place = forge::place::Place::decide(&forge::place::Input {
        env: &p.env,
        spec: &p.job.forge,
        token_env: p.job.git.token_env.as_deref(),
        remote_url: p.ws.remote_url(&p.job.git.remote).as_deref(),
        env_repo: orders.env_repo,
        remote_trusted: orders.remote_trusted,
    });
    if !orders.dry_run {
        let (env, shared, redactor, bound) = (&p.env, &p.shared.forge, &p.redactor, &p.bound);
        let cx = forge::tokens::Context { env, shared, redactor, bound };
        forge::tokens::into_place(&cx, &p.job, &mut place).await?;
    }
    Ok(place)
}
