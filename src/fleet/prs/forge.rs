//! The forge behind one PR of `hone fleet prs`: GitHub's pull request or GitLab's merge request,
//! asked the same questions (who the token is, read it, read its branch, comment, close, delete
//! its branch, merge at a head) so `status`, `close` and `merge` decide the same way on both.

use super::github::{self, Merged, Pr};
use super::gitlab;
use super::status::Seen;
use crate::error::Result;
use std::sync::atomic::Ordering;

pub enum Api<'a> {
    Hub(github::Api<'a>),
    Lab(gitlab::Api<'a>),
}

impl Api<'_> {
    /// `GitHub` or `GitLab`, for what a report says the forge did.
    pub const fn name(&self) -> &'static str {
        match self {
            Api::Hub(_) => "GitHub",
            Api::Lab(_) => "GitLab",
        }
    }

    /// The PR and, when open, what decides a merge: its checks, reviews and rules.
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        match self {
            Api::Hub(a) => super::status::observe(a, n).await,
            Api::Lab(a) => a.observe(n).await,
        }
    }

    /// The PR alone.
    pub async fn pull(&self, n: u64) -> Result<Pr> {
        match self {
            Api::Hub(a) => a.pull(n).await,
            Api::Lab(a) => Ok(a.pull(n).await?.pr),
        }
    }

    /// The identity the token acts as (asked once per token).
    pub async fn me(&self) -> Result<super::own::Me> {
        match self {
            Api::Hub(a) => a.me().await,
            Api::Lab(a) => a.me().await,
        }
    }

    /// Every PR whose head is `branch` in the repository, open or not, newest first (whoever
    /// opened it: `own::pr_check` tells the campaign's).
    pub async fn campaign_prs(&self, branch: &str) -> Result<Vec<Pr>> {
        match self {
            Api::Hub(a) => a.campaign_prs(branch).await,
            Api::Lab(a) => a.campaign_prs(branch).await,
        }
    }

    /// The commit `branch` is at on the forge now, `None` when it does not exist.
    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        match self {
            Api::Hub(a) => a.branch_sha(branch).await,
            Api::Lab(a) => a.branch_sha(branch).await,
        }
    }

    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        match self {
            Api::Hub(a) => a.comment(n, body).await,
            Api::Lab(a) => a.comment(n, body).await,
        }
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        match self {
            Api::Hub(a) => a.close(n).await,
            Api::Lab(a) => a.close(n).await,
        }
    }

    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        match self {
            Api::Hub(a) => a.delete_branch(branch).await,
            Api::Lab(a) => a.delete_branch(branch).await,
        }
    }

    /// Merge at `sha` by `method` (GitLab: `squash` squashes; `merge` uses the project's method).
    pub async fn merge(&self, n: u64, sha: &str, method: super::Method) -> Result<Merged> {
        match self {
            Api::Hub(a) => a.merge(n, sha, method.as_str()).await,
            Api::Lab(a) => a.merge(n, sha, method == super::Method::Squash).await,
        }
    }

    /// The requests the client sent again (rate limits, server errors).
    pub fn retries(&self) -> u64 {
        match self {
            Api::Hub(a) => a.gh.retries.load(Ordering::Relaxed) as u64,
            Api::Lab(a) => a.gl.retries.load(Ordering::Relaxed) as u64,
        }
    }
}
