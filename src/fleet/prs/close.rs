//! `hone fleet prs close`: close an open PR with a comment saying why, and record it as closed
//! by choice, only when the forge shows it is hone's PR on the job's branch (`own.rs`); delete
//! its branch only when both the PR's head and the branch itself are still the commit hone
//! pushed, so no one else's commit is lost.

use super::Item;
use super::own::{self, Head, short};
use super::report::{Action, Owned, PrResult, State};
use super::state::Ledger;
use super::status::fill;
use crate::error::Result;
use crate::forge::campaign::Api;
use crate::forge::campaign::{Seen, state_of};

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

/// Why hone's PR's branch is kept, from its head: `None` when the head is what hone pushed.
fn kept_for(head: &Head, item: &Item) -> Option<String> {
    match head {
        Head::Pushed => None,
        Head::Moved { now, pushed } => {
            Some(format!("its head moved: it is at {}, hone pushed {}", short(now), short(pushed)))
        }
        Head::Unrecorded => Some(format!("no commit hone pushed is recorded for it ({})", item.record)),
    }
}

/// Close one PR (a dry run says what it would do). Reads the PR and the token's identity; the
/// branch's commit before deleting it.
pub async fn one(api: &Api<'_>, item: &Item, c: &Close<'_>, r: &mut PrResult) -> Result<()> {
    let pr = api.pull(item.number).await?;
    let seen = Seen { pr, kind: api.kind(), ..Default::default() };
    fill(r, &seen, item);
    let pr = &seen.pr;
    r.closed_by_hone = c.ledger.has(&item.id, item.number);
    match state_of(pr) {
        State::Merged => return skip(r, "already merged"),
        State::Closed if r.closed_by_hone => return skip(r, "already closed by `hone fleet prs close`"),
        State::Closed => return skip(r, "already closed (not by hone)"),
        State::Open | State::Draft => {}
    }
    if let Some((owned, why)) = own::pr_check(pr, item, &api.me().await?) {
        r.owned = Some(owned);
        return skip(r, &why);
    }
    let head = own::head_check(pr, item);
    r.owned = Some(if head == Head::Pushed { Owned::Hones } else { Owned::NotHonesHead });
    let keep = kept_for(&head, item);
    if c.dry_run {
        r.action = Some(Action::WouldClose);
        r.reason = Some(match &keep {
            None => format!("would comment, close it and delete its branch `{}`", item.branch),
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
    let (deleted, why) = match (keep, item.pushed.as_deref()) {
        (None, Some(pushed)) => delete_at(api, &item.branch, pushed).await?,
        (Some(why), _) => (false, format!("closed; branch kept: {why}")),
        (None, None) => (false, "closed; branch kept: no commit hone pushed is recorded for it".into()),
    };
    (r.branch_deleted, r.reason) = (Some(deleted), Some(why));
    Ok(())
}

/// Delete `branch` only while it is still at `pushed` (read just before: a commit pushed since
/// is never lost); whether it was deleted, and the report's reason.
async fn delete_at(api: &Api<'_>, branch: &str, pushed: &str) -> Result<(bool, String)> {
    Ok(match api.branch_sha(branch).await? {
        None => (false, "closed; its branch was already gone".into()),
        Some(now) if !now.eq_ignore_ascii_case(pushed) => (
            false,
            format!("closed; branch kept: its head moved: it is at {}, hone pushed {}", short(&now), short(pushed)),
        ),
        Some(_) if api.delete_branch(branch).await? => (true, "closed; its branch deleted".into()),
        Some(_) => (false, "closed; its branch was already gone".into()),
    })
}

fn skip(r: &mut PrResult, why: &str) -> Result<()> {
    (r.action, r.reason) = (Some(Action::Skipped), Some(why.into()));
    Ok(())
}
