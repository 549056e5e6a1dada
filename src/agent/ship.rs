//! Shipping a verified commit: push and open or update the PR, or (autofix) push and comment.

use super::intake::Prepared;
use super::pr_text;
use super::run::Run;
use crate::forge;
use crate::record::Status;

/// Push and open or update the PR; a failure here is an infrastructure failure (exit 3).
pub async fn ship(
    p: &Prepared,
    run: &mut Run,
    dry_run: bool,
    draft_failure: bool,
    cancel: &tokio_util::sync::CancellationToken,
) -> Status {
    let partial_ref = if draft_failure { run.record.saved_ref.clone() } else { None };
    let head = match (&run.record.commit, &partial_ref) {
        (Some(c), _) => Some(c.sha.clone()),
        (None, Some(r)) => p.ws.resolve_base(Some(r)).ok().map(|o| o.to_string()),
        _ => None,
    };
    let patch = match (head.as_deref().map(git2::Oid::from_str), git2::Oid::from_str(&run.record.base_sha)) {
        (Some(Ok(h)), Ok(base)) => p.ws.blocking(move |ws| ws.diff_commits(base, h)).await.ok(),
        _ => None,
    };
    let title = pr_text::title(&p.job.pr.title, run);
    let request = forge::PrRequest {
        title: if partial_ref.is_some() { format!("[checks failing] {title}") } else { title },
        body: p.redactor.apply(&pr_text::body(run)),
        changed: (run.record.status == Status::Success && run.record.commit.is_some()) || partial_ref.is_some(),
        head,
        patch: patch.map(|t| p.redactor.apply(&t)),
    };
    let s = forge::Ship {
        job: &p.job,
        env: &p.env,
        shared: &p.shared,
        ws: &p.ws,
        deadline: p.deadline,
        cancel,
        dry_run,
        base_branch: run.record.base_branch.clone(),
        autofix: p.autofix.as_ref(),
        partial_ref,
        github_repo: p.github_repo.clone(),
    };
    if let (Some(_), Some(patch)) = (&request.head, &request.patch)
        && let Err(e) = crate::output::write_change(&p.report_dir, &request.title, &request.body, patch)
    {
        run.record.errors.push(e);
        return Status::Error;
    }
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
