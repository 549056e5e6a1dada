//! Review mode's shipping: the verified change offered on the PR as one review of suggested
//! changes (`forge::review`), never pushed. Only a verified commit, or a verified "nothing to
//! change", is offered; the review is hone's own, kept up to date on later runs.

use super::super::handoff::Scope;
use super::super::state::Run;
use super::Orders;
use crate::error::{Code, HoneError};
use crate::forge::{self, review};
use crate::protocol::{Event, ReviewReport};
use crate::record::Status;

/// Post (or update) hone's review on the PR; a failure here is an infrastructure failure.
pub async fn ship(p: &Scope, orders: Orders<'_>, run: &mut Run) -> Status {
    let status = run.record.status;
    let Some(target) = orders.autofix else {
        run.record.errors.push(HoneError::new(Code::Internal, "review mode without a pull request"));
        return Status::Error;
    };
    if status == Status::Success && run.record.commit.is_none() {
        run.record
            .warnings
            .push("`git.commit` is false: the verified change was not committed, so no review was posted".into());
        return status;
    }
    let commit = run.record.commit.as_ref().map(|c| c.sha.clone());
    let body = p.redactor.apply(&super::pr_text::details(run));
    if let Err(e) = write_patch(p, run, target.number, commit.as_deref(), &body).await {
        run.record.errors.push(e);
        return Status::Error;
    }
    if orders.dry_run {
        let forge = super::place(p, &orders).await.map(|pl| pl.forge_name().to_lowercase()).unwrap_or_default();
        run.record.review = Some(ReviewReport {
            forge,
            number: target.number,
            commit: target.head_sha.clone(),
            dry_run: true,
            warnings: vec!["dry run: no review was posted and no forge API was called; see change.patch".into()],
            ..Default::default()
        });
        return status;
    }
    match post(p, &orders, target, commit.as_deref(), &body).await {
        Ok(posted) => {
            p.events.emit(Event::ReviewPosted {
                number: posted.number,
                operation: posted.operation,
                suggestions: posted.suggestions,
                url: posted.url.clone(),
            });
            run.record.warnings.extend(posted.warnings.iter().cloned());
            run.record.review = Some(posted);
            status
        }
        Err(e) => {
            run.record.errors.push(p.redactor.error(e));
            Status::Error
        }
    }
}

/// The change as `change.patch` (and the review's text as `pr.md`) in the report dir.
async fn write_patch(p: &Scope, run: &Run, number: u64, commit: Option<&str>, body: &str) -> crate::error::Result<()> {
    match super::change_patch(p, run, commit).await {
        Some(patch) => crate::output::write_change(
            &p.report_dir,
            &format!("hone's review of #{number}"),
            body,
            &p.redactor.apply(&patch),
        ),
        None => Ok(()),
    }
}

/// The review on the place's forge.
async fn post(
    p: &Scope,
    orders: &Orders<'_>,
    target: &forge::autofix::Target,
    commit: Option<&str>,
    body: &str,
) -> crate::error::Result<ReviewReport> {
    let place = super::place(p, orders).await?;
    let Some(token) = place.token.as_ref() else {
        let var = place.token_source(p.job.git.token_env.as_deref());
        return Err(HoneError::new(
            Code::Forge,
            format!("{var} is not set: review mode needs a token to post its review"),
        ));
    };
    let input = review::Input {
        number: target.number,
        head_sha: &target.head_sha,
        commit_sha: commit,
        job: &p.job.name,
        body,
        login: place.login.as_deref(),
    };
    forge::review::publish::publish(&place, token, &p.ws, &input, &p.shared.forge, &p.bound).await
}
