//! The forge behind one PR of `hone fleet prs`, asked the same questions on every forge (who the
//! token is, read it, its checks and reviews, read its branch, comment, close, delete its
//! branch, merge at a head, enqueue) so `status`, `close` and `merge` decide the same way on all.
//! The one place a campaign's request is dispatched to a forge's folder (`<forge>/campaign.rs`).

mod open;
mod seen;

use super::Kind;
use super::{forgejo, github, gitlab};
use crate::error::Result;
use std::sync::atomic::Ordering;

pub use open::{Clients, Opened};
pub use seen::*;

pub enum Api<'a> {
    Hub(github::campaign::Api<'a>),
    Lab(gitlab::campaign::Api<'a>),
    Fj(forgejo::campaign::Api<'a>),
}

impl Api<'_> {
    /// The forge this client speaks to.
    pub const fn kind(&self) -> Kind {
        match self {
            Api::Hub(_) => Kind::Github,
            Api::Lab(_) => Kind::Gitlab,
            Api::Fj(_) => Kind::Forgejo,
        }
    }

    /// The forge's name, for what a report says the forge did.
    pub const fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The PR and, when open, what decides a merge: its checks, reviews and rules.
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        match self {
            Api::Hub(a) => github::checks::observe(a, n).await,
            Api::Lab(a) => a.observe(n).await,
            Api::Fj(a) => a.observe(n).await,
        }
    }

    /// The PR alone.
    pub async fn pull(&self, n: u64) -> Result<Pr> {
        match self {
            Api::Hub(a) => a.pull(n).await,
            Api::Lab(a) => Ok(a.pull(n).await?.pr),
            Api::Fj(a) => a.pull(n).await,
        }
    }

    /// The identity the token acts as (asked once per token).
    pub async fn me(&self) -> Result<Me> {
        match self {
            Api::Hub(a) => a.me().await,
            Api::Lab(a) => a.me().await,
            Api::Fj(a) => a.me().await,
        }
    }

    /// Every PR whose head is `branch` in the repository, open or not, newest first (whoever
    /// opened it: the fleet tells the campaign's by `Me`, the branch and the repository).
    pub async fn campaign_prs(&self, branch: &str) -> Result<Vec<Pr>> {
        match self {
            Api::Hub(a) => a.campaign_prs(branch).await,
            Api::Lab(a) => a.campaign_prs(branch).await,
            Api::Fj(a) => a.campaign_prs(branch).await,
        }
    }

    /// The commit `branch` is at on the forge now, `None` when it does not exist.
    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        match self {
            Api::Hub(a) => a.branch_sha(branch).await,
            Api::Lab(a) => a.branch_sha(branch).await,
            Api::Fj(a) => a.branch_sha(branch).await,
        }
    }

    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        match self {
            Api::Hub(a) => a.comment(n, body).await,
            Api::Lab(a) => a.comment(n, body).await,
            Api::Fj(a) => a.comment(n, body).await,
        }
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        match self {
            Api::Hub(a) => a.close(n).await,
            Api::Lab(a) => a.close(n).await,
            Api::Fj(a) => a.close(n).await,
        }
    }

    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        match self {
            Api::Hub(a) => a.delete_branch(branch).await,
            Api::Lab(a) => a.delete_branch(branch).await,
            Api::Fj(a) => a.delete_branch(branch).await,
        }
    }

    /// Why the forge cannot merge by `method`, when it cannot.
    pub const fn refuses(&self, method: Method) -> Option<&'static str> {
        match (self, method) {
            (Api::Lab(_), Method::Rebase) => {
                Some("GitLab merges by the project's merge method: use --method merge or squash")
            }
            _ => None,
        }
    }

    /// Merge at `sha` by `method` (GitLab: `squash` squashes; `merge` uses the project's method).
    pub async fn merge(&self, n: u64, sha: &str, method: Method) -> Result<Merged> {
        match self {
            Api::Hub(a) => a.merge(n, sha, method.as_str()).await,
            Api::Lab(a) => a.merge(n, sha, method == Method::Squash).await,
            Api::Fj(a) => a.merge(n, sha, method.as_str()).await,
        }
    }

    /// Add the PR (`pr.node_id`) to its base branch's merge queue at `sha`: `None` when the forge
    /// has no merge queue, else whether it queued it or refused.
    pub async fn enqueue(&self, pr: &Pr, sha: &str) -> Result<Option<Queued>> {
        match self {
            Api::Hub(a) => a.enqueue(&pr.node_id, sha).await.map(Some),
            Api::Lab(_) | Api::Fj(_) => Ok(None),
        }
    }

    /// The requests the client sent again (rate limits, server errors).
    pub fn retries(&self) -> u64 {
        match self {
            Api::Hub(a) => a.gh.retries.load(Ordering::Relaxed) as u64,
            Api::Lab(a) => a.gl.retries.load(Ordering::Relaxed) as u64,
            Api::Fj(a) => a.fj.retries.load(Ordering::Relaxed) as u64,
        }
    }
}

/// Why an open PR cannot be merged now, or `None` when it can: not a draft, checks passing (or
/// none), reviews allowing, mergeable.
pub fn blocker(seen: &Seen) -> Option<String> {
    let pr = &seen.pr;
    match state_of(pr) {
        State::Merged => return Some("already merged".into()),
        State::Closed => return Some("closed".into()),
        State::Draft => return Some("a draft".into()),
        State::Open => {}
    }
    match seen.kind {
        Kind::Github => github::checks::blocker(seen),
        Kind::Gitlab => gitlab::checks::blocker(seen),
        Kind::Forgejo => forgejo::checks::blocker(seen),
    }
}
