//! How a run's work ends up: a verified change is committed on the run's branch; unverified work
//! is saved on a private ref; and a change that no longer exists is never a success.

use super::super::handoff::Scope;
use super::super::state::Run;
use super::super::summarize;
use crate::error::{Code, HoneError};
use crate::protocol::Event;
use crate::record::{CommitInfo, Status};

/// A success with nothing left to commit, after the model did change files (every change rolled
/// back or undone), is a failure that says what happened. `no_change` is only for a model that
/// changed nothing.
pub fn dropped_change(run: &mut Run, status: Status, touched: bool) -> Status {
    if status != Status::Success || !run.record.files_changed.is_empty() || !touched {
        return status;
    }
    let (code, why) = match run.record.rollbacks.last() {
        Some(rb) => (Code::BuildFail, format!("the change was rolled back: {}", rb.reason)),
        None => (Code::Model, "the model changed files and then undid every change".to_string()),
    };
    run.record
        .errors
        .push(HoneError::new(code, format!("{why}. The final tree equals the base, so there is no change to commit.")));
    Status::Failed
}

/// A read-only job (`change: none`) commits and saves nothing. A change in the tree (only a
/// command outside the jail, under `sandbox: off`, could make one) fails the run; the restore
/// then removes it.
pub fn read_only(p: &Scope, run: &mut Run, status: Status) -> Status {
    let status = if run.record.files_changed.is_empty() {
        status
    } else {
        let files: Vec<String> = run.record.files_changed.iter().take(5).map(|f| format!("`{}`", f.path)).collect();
        run.record.errors.push(
            HoneError::new(
                Code::PolicyDenied,
                format!("this read-only job (`change: none`) changed the repository ({}); nothing was committed or saved, and the checkout was restored", files.join(", ")),
            )
            .hint("a read-only job must not write to the repository: keep the policy's sandbox on, or have the commands write outside it (/tmp)"),
        );
        if status == Status::Success { Status::Failed } else { status }
    };
    run.record.summary = p.redactor.apply(&summarize::write(run, status));
    status
}

/// Commit a verified change, or save unverified work on a private ref (unless `may_save` is
/// false: work that carries a secret is saved nowhere).
pub async fn finish(
    p: &Scope,
    run: &mut Run,
    status: Status,
    base: git2::Oid,
    may_save: bool,
) -> Result<Status, HoneError> {
    let changed = !run.record.files_changed.is_empty();
    let heading_for = if status == Status::Success && !changed { Status::NoChange } else { status };
    run.record.summary = p.redactor.apply(&summarize::write(run, heading_for));
    let result = commit_or_save(p, run, status, base, changed && may_save).await;
    if !matches!(result, Ok(Status::Success | Status::NoChange)) {
        // Written again now that the saved ref (if any) is known.
        run.record.summary = p.redactor.apply(&summarize::write(run, *result.as_ref().unwrap_or(&Status::Error)));
    }
    result
}

async fn commit_or_save(
    p: &Scope,
    run: &mut Run,
    status: Status,
    base: git2::Oid,
    changed: bool,
) -> Result<Status, HoneError> {
    let (job, ws) = (&p.job, &p.ws);
    match status {
        Status::Success if !changed => Ok(Status::NoChange),
        Status::Success if job.git.commit => {
            let message = p.redactor.apply(&summarize::commit_message(job, run));
            let (msg, name, email) = (message.clone(), job.git.author_name.clone(), job.git.author_email.clone());
            let sha = ws.blocking(move |ws| ws.commit(base, &msg, &name, &email)).await?.to_string();
            p.events.emit(Event::Commit {
                sha: sha.clone(),
                branch: job.git.branch.clone(),
                files_changed: run.record.files_changed.len(),
            });
            run.record.commit = Some(CommitInfo { sha, branch: job.git.branch.clone(), message });
            Ok(Status::Success)
        }
        Status::Success => {
            run.record.warnings.push("`git.commit` is false: the verified change was not committed".into());
            Ok(Status::Success)
        }
        other if changed && other != Status::InvalidInput => {
            let refname = format!("refs/hone/{}/failed", job.name);
            // The run's account of itself goes with the work: a second attempt
            // (`--continue`) shows it to the model.
            let msg = p.redactor.apply(&format!(
                "hone: unverified work of a {} run of {}\n\nRun: {}\n\n{}",
                other.as_str(),
                job.name,
                run.record.run_id,
                summarize::write(run, other)
            ));
            let (name, email, to) = (job.git.author_name.clone(), job.git.author_email.clone(), refname.clone());
            match ws.blocking(move |ws| ws.snapshot(base, &to, &msg, &name, &email)).await {
                Ok(_) => run.record.saved_ref = Some(refname),
                Err(e) => run.record.warnings.push(format!("could not save the unverified work: {}", e.message)),
            }
            Ok(other)
        }
        other => Ok(other),
    }
}
