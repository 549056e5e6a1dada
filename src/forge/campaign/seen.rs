//! What hone asks of a campaign's pull (merge) requests on any forge, in one shape: the PR as
//! the forge describes it, its checks, reviews and rules, the token's identity, how a merge
//! ended. Each forge's `campaign.rs` reads its answers into these.

use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A pull request's state on its forge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Open,
    Draft,
    Merged,
    Closed,
}

/// The head commit's checks (check runs and commit statuses together; GitLab: its head
/// pipeline). No check reported yet, or a required one missing, is `pending`, never `passing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checks {
    Passing,
    Failing,
    Pending,
}

/// A review: the reviewer's login, its state, and the reviewer's `author_association`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    pub login: String,
    pub state: String,
    pub association: String,
}

/// A pull request as GitHub describes it: only the fields hone reads.
#[derive(Debug, Clone, Default)]
pub struct Pr {
    pub url: String,
    /// Who opened it: GitHub's `user.login`, GitLab's `author.username`.
    pub author: String,
    /// GitLab's `author.id` (none on GitHub).
    pub author_id: Option<u64>,
    pub node_id: String,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub draft: bool,
    pub head_sha: String,
    pub head_ref: String,
    /// `owner/repo` of the head, `None` when the fork is gone.
    pub head_repo: Option<String>,
    pub base_ref: String,
    pub base_repo: Option<String>,
    /// `true`, `false`, or `None` while GitHub computes it.
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
    pub created_at: String,
}

/// What the base branch's rules ask of a merge (its rulesets, readable with read access).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub merge_queue: bool,
    pub required_reviews: u64,
    /// The contexts of its `required_status_checks` rules: each must report, and pass.
    pub required_checks: Vec<String>,
}

/// How a merge request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    Merged,
    /// GitHub refused it: 405 (not mergeable, branch protection, a merge queue), 409 (the head
    /// moved since it was checked), 422; with GitHub's message.
    Refused(u16, String),
}

/// How a request to add a PR to the merge queue ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    Queued,
    /// The forge refused it, with its message.
    Refused(String),
}

/// The reviews, the latest of each reviewer, against what the base branch requires.
#[allow(clippy::enum_variant_names)] // GitHub's names: `review_required` is a review state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Review {
    Approved,
    ChangesRequested,
    ReviewRequired,
    None,
}

/// The identity hone's token acts as on a forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    /// GitHub's login (`slug[bot]` for an App), GitLab's user name.
    pub login: String,
    /// GitLab's user id, which decides there (a user name can be changed); none on GitHub.
    pub id: Option<u64>,
}

/// Each token's identity, asked once a run (`GET /user`).
#[derive(Default)]
pub struct Identities(tokio::sync::Mutex<HashMap<String, Me>>);

impl Identities {
    /// The identity known by `key`, else the one `ask` finds (kept only when it is found).
    pub async fn get(&self, key: &str, ask: impl std::future::Future<Output = Result<Me>>) -> Result<Me> {
        let mut known = self.0.lock().await;
        if let Some(me) = known.get(key) {
            return Ok(me.clone());
        }
        let me = ask.await?;
        known.insert(key.to_string(), me.clone());
        Ok(me)
    }
}

/// What was read of one PR.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub pr: Pr,
    pub checks: Option<Checks>,
    /// Why the checks are pending, when hone knows more than "one is running".
    pub checks_why: Option<String>,
    pub review: Option<Review>,
    pub rules: Option<Rules>,
    /// The forge it was read from: whose rules decide a merge (`campaign::blocker`).
    pub kind: crate::forge::Kind,
}

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

/// The state of a PR as GitHub describes it.
pub fn state_of(pr: &Pr) -> State {
    match (pr.merged, pr.state.as_str(), pr.draft) {
        (true, _, _) => State::Merged,
        (false, "closed", _) => State::Closed,
        (false, _, true) => State::Draft,
        _ => State::Open,
    }
}

/// A server's text quoted in a report: at most 200 characters, no control characters.
pub fn quote(m: &str) -> String {
    m.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// What the checks and reviews of an open PR say against merging it now, where the forge sums
/// them up as GitHub does (checks passing, no change requested, the review the rules require):
/// `None` when they allow it.
pub fn checks_or_reviews_block(seen: &Seen) -> Option<String> {
    match (seen.checks, &seen.checks_why) {
        (Some(Checks::Failing), _) => return Some("checks failing".into()),
        (Some(Checks::Pending), Some(why)) => return Some(format!("checks pending: {why}")),
        (Some(Checks::Pending), None) => return Some("checks pending".into()),
        (None, _) => return Some("checks unknown".into()),
        _ => {}
    }
    match seen.review {
        Some(Review::ChangesRequested) => Some("changes requested".into()),
        Some(Review::ReviewRequired) => Some("review required".into()),
        _ => None,
    }
}
