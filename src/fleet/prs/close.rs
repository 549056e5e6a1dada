//! `hone fleet prs close`: close an open PR with a comment saying why, record it as closed by
//! choice, and delete its branch only when the branch is hone's: the one fleet.json recorded,
//! which the forge names as the PR's head in this very repository (GitLab: the source branch,
//! with the same project as source and target).

use super::Item;
use super::forge::Api;
use super::github::Pr;
use super::report::{Action, PrResult, State};
use super::state::Ledger;
use super::status::{Seen, fill, state_of};
use crate::error::Result;

/// Why the PR's head branch is not one hone may delete, or `None` when it is hone's: recorded in
/// fleet.json, the PR's head ref, not its base, and in the same repository as the PR (a fork's
/// branch, or a branch only GitHub's answer names, is never deleted).
pub fn not_hones_branch(pr: &Pr, item: &Item) -> Option<String> {
    let Some(branch) = item.branch.as_deref().filter(|b| !b.is_empty()) else {
        return Some("fleet.json records no branch for it".into());
    };
    let same = |r: &Option<String>| r.as_deref().is_some_and(|r| r.eq_ignore_ascii_case(&item.repo));
    if pr.head_ref != branch {
        Some(format!("its head is not the branch hone pushed (`{branch}`)"))
    } else if !same(&pr.head_repo) || !same(&pr.base_repo) {
        Some("its head is in another repository (a fork)".into())
    } else if pr.base_ref == pr.head_ref {
        Some("its head is its base".into())
    } else {
        None
    }
}

/// What `close` says on the PR.
pub fn comment_text(reason: Option<&str>, job: &str) -> String {
    let why = reason.map_or_else(
        || format!("The change of the hone fleet job `{job}` is no longer wanted."),
        |r| r.trim().to_string(),
    );
    format!("{why}\n\nClosed by `hone fleet prs close`.")
}

pub struct Close<'a> {
    pub comment: &'a str,
    pub dry_run: bool,
    pub ledger: &'a Ledger,
}

/// Close one PR (a dry run says what it would do). Reads only the PR.
pub async fn one(api: &Api<'_>, item: &Item, c: &Close<'_>, r: &mut PrResult) -> Result<()> {
    let pr = api.pull(item.number).await?;
    let seen = Seen { pr, gitlab: matches!(api, Api::Lab(_)), ..Default::default() };
    fill(r, &seen);
    let pr = &seen.pr;
    r.closed_by_hone = c.ledger.has(&item.id, item.number);
    match state_of(pr) {
        State::Merged => return skip(r, "already merged"),
        State::Closed if r.closed_by_hone => return skip(r, "already closed by `hone fleet prs close`"),
        State::Closed => return skip(r, "already closed (not by hone)"),
        State::Open | State::Draft => {}
    }
    let keep = not_hones_branch(pr, item);
    if c.dry_run {
        r.action = Some(Action::WouldClose);
        r.reason = Some(match &keep {
            None => format!("would comment, close it and delete its branch `{}`", pr.head_ref),
            Some(why) => format!("would comment and close it, keeping its branch: {why}"),
        });
        return Ok(());
    }
    api.comment(item.number, c.comment).await?;
    api.close(item.number).await?;
    c.ledger.record(&item.id, item.number).map_err(|e| {
        crate::error::HoneError::new(
            crate::error::Code::Io,
            format!("closed PR #{}, but cannot record it in {}: {e}", item.number, super::state::LEDGER),
        )
    })?;
    (r.state, r.closed_by_hone, r.action) = (Some(State::Closed), true, Some(Action::Closed));
    (r.checks, r.review, r.mergeable, r.mergeable_state, r.merge_queue) = (None, None, None, None, None);
    match keep {
        None => {
            let deleted = api.delete_branch(&pr.head_ref).await?;
            r.branch_deleted = Some(deleted);
            r.reason =
                Some(if deleted { "closed; its branch deleted" } else { "closed; its branch was already gone" }.into());
        }
        Some(why) => {
            r.branch_deleted = Some(false);
            r.reason = Some(format!("closed; branch kept: {why}"));
        }
    }
    Ok(())
}

fn skip(r: &mut PrResult, why: &str) -> Result<()> {
    (r.action, r.reason) = (Some(Action::Skipped), Some(why.into()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> Item {
        Item {
            id: "a".into(),
            source: String::new(),
            number: 1,
            branch: Some("hone/job".into()),
            repo: "acme/app".into(),
        }
    }

    fn pr(head_ref: &str, head_repo: Option<&str>) -> Pr {
        Pr {
            head_ref: head_ref.into(),
            head_repo: head_repo.map(str::to_string),
            base_ref: "main".into(),
            base_repo: Some("acme/app".into()),
            ..Default::default()
        }
    }

    #[test]
    fn only_hones_own_branch_in_the_same_repository_is_deleted() {
        assert_eq!(not_hones_branch(&pr("hone/job", Some("Acme/App")), &item()), None);
        assert!(not_hones_branch(&pr("main", Some("acme/app")), &item()).is_some());
        assert!(not_hones_branch(&pr("hone/job", Some("mallory/app")), &item()).is_some());
        assert!(not_hones_branch(&pr("hone/job", None), &item()).is_some(), "a deleted fork");
        let mut same_as_base = pr("main", Some("acme/app"));
        same_as_base.base_ref = "main".into();
        let mut i = item();
        i.branch = Some("main".into());
        assert!(not_hones_branch(&same_as_base, &i).is_some());
        i.branch = None;
        assert!(not_hones_branch(&pr("hone/job", Some("acme/app")), &i).is_some());
    }
}
