//! `hone fleet prs merge`: merge a PR only when the forge shows it is hone's, at the commit hone
//! pushed (`own.rs`), and hone's reading of it allows (open, not a draft, checks passing,
//! reviews allowing, mergeable); the merge is held to that commit, never forced. On a GitHub
//! base branch that requires a merge queue, enqueue it instead. The forge's refusals (branch
//! protection, a head that moved) are reported, never retried.

use super::Item;
use super::own::{self, short};
use super::report::{Action, PrResult, State};
use super::status::fill;
use crate::error::Result;
use crate::forge::campaign::{Api, Merged, Method, Queued, blocker, state_of};

/// Merge (or enqueue) one PR; a dry run says what it would do and why the others wait.
pub async fn one(api: &Api<'_>, item: &Item, method: Method, dry_run: bool, r: &mut PrResult) -> Result<()> {
    let seen = api.observe(item.number).await?;
    fill(r, &seen, item);
    let pr = &seen.pr;
    if matches!(state_of(pr), State::Open | State::Draft) {
        let (owned, why) = own::judge(pr, item, &api.me().await?);
        r.owned = Some(owned);
        if let Some(why) = why {
            return skip(r, &why);
        }
    }
    if let Some(why) = blocker(&seen) {
        return skip(r, &why);
    }
    if let Some(why) = api.refuses(method) {
        return skip(r, why);
    }
    // The commit hone pushed, which `judge` found to be the PR's head: what the merge is held to.
    let Some(at) = item.pushed.as_deref() else { return skip(r, "no commit hone pushed is recorded for it") };
    let queue = seen.rules.as_ref().is_some_and(|x| x.merge_queue);
    if dry_run {
        r.action = Some(if queue { Action::WouldQueue } else { Action::WouldMerge });
        let how = if queue { "add it to the merge queue".to_string() } else { format!("{} it", method.as_str()) };
        r.reason = Some(format!("would {how} at {}", short(at)));
        return Ok(());
    }
    if queue && let Some(queued) = api.enqueue(pr, at).await? {
        match queued {
            Queued::Queued => {
                r.action = Some(Action::Queued);
                r.reason = Some(format!("added to the merge queue at {}", short(at)));
            }
            Queued::Refused(m) => {
                r.action = Some(Action::Refused);
                r.reason = Some(format!("{} refused to queue it: {m}", api.name()));
            }
        }
        return Ok(());
    }
    match api.merge(item.number, at, method).await? {
        Merged::Merged => {
            (r.action, r.state) = (Some(Action::Merged), Some(State::Merged));
            (r.checks, r.review, r.mergeable, r.mergeable_state) = (None, None, None, None);
            r.reason = Some(format!("merged ({}) at {}", method.as_str(), short(at)));
        }
        Merged::Refused(status, m) => {
            r.action = Some(Action::Refused);
            r.reason = Some(format!("{} refused the merge (HTTP {status}): {m}", api.name()));
        }
    }
    Ok(())
}

fn skip(r: &mut PrResult, why: &str) -> Result<()> {
    (r.action, r.reason) = (Some(Action::Skipped), Some(why.into()));
    Ok(())
}
