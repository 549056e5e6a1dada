//! `hone fleet prs merge`: merge a PR only when hone's reading of it allows (open, not a draft,
//! checks passing, reviews allowing, mergeable), held to the head commit it read, never forced;
//! on a GitHub base branch that requires a merge queue, enqueue it instead. The forge's refusals
//! (branch protection, a head that moved) are reported, never retried.

use super::Item;
use super::forge::Api;
use super::github::Merged;
use super::report::{Action, PrResult, State};
use super::status::{blocker, fill};
use crate::error::Result;

/// How to merge: `merge`, `squash` or `rebase` (GitLab: `squash` squashes, `merge` takes the
/// project's method, `rebase` is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Method {
    #[default]
    Merge,
    Squash,
    Rebase,
}

impl Method {
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Merge => "merge",
            Method::Squash => "squash",
            Method::Rebase => "rebase",
        }
    }
}

/// Merge (or enqueue) one PR; a dry run says what it would do and why the others wait.
pub async fn one(api: &Api<'_>, item: &Item, method: Method, dry_run: bool, r: &mut PrResult) -> Result<()> {
    let seen = api.observe(item.number).await?;
    fill(r, &seen);
    let pr = &seen.pr;
    if let Some(why) = super::close::not_hones_branch(pr, item).filter(|_| !pr.merged && pr.state == "open") {
        return skip(r, &format!("not hone's PR to merge: {why}"));
    }
    if let Some(why) = blocker(&seen) {
        return skip(r, &why);
    }
    if let (Api::Lab(_), Method::Rebase) = (api, method) {
        return skip(r, "GitLab merges by the project's merge method: use --method merge or squash");
    }
    let queue = seen.rules.is_some_and(|x| x.merge_queue);
    if dry_run {
        r.action = Some(if queue { Action::WouldQueue } else { Action::WouldMerge });
        let how = if queue { "add it to the merge queue".to_string() } else { format!("{} it", method.as_str()) };
        r.reason = Some(format!("would {how} at {}", short(&pr.head_sha)));
        return Ok(());
    }
    if let (true, Api::Hub(gh)) = (queue, api) {
        match gh.enqueue(&pr.node_id, &pr.head_sha).await? {
            Ok(()) => {
                r.action = Some(Action::Queued);
                r.reason = Some(format!("added to the merge queue at {}", short(&pr.head_sha)));
            }
            Err(m) => {
                r.action = Some(Action::Refused);
                r.reason = Some(format!("GitHub refused to queue it: {m}"));
            }
        }
        return Ok(());
    }
    match api.merge(item.number, &pr.head_sha, method).await? {
        Merged::Merged => {
            (r.action, r.state) = (Some(Action::Merged), Some(State::Merged));
            (r.checks, r.review, r.mergeable, r.mergeable_state) = (None, None, None, None);
            r.reason = Some(format!("merged ({}) at {}", method.as_str(), short(&pr.head_sha)));
        }
        Merged::Refused(status, m) => {
            r.action = Some(Action::Refused);
            r.reason = Some(format!("{} refused the merge (HTTP {status}): {m}", api.name()));
        }
    }
    Ok(())
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn skip(r: &mut PrResult, why: &str) -> Result<()> {
    (r.action, r.reason) = (Some(Action::Skipped), Some(why.into()));
    Ok(())
}
