//! Review mode: a verified change offered on a pull request (merge request) as one review of
//! suggested changes anchored to the lines of its diff, instead of a push; what no suggestion can
//! carry goes into the review's body as a patch.

pub mod anchors;
pub mod body;
pub mod publish;
pub mod suggest;

pub use crate::protocol::{ReviewOperation, ReviewReport};

/// A suggested change: lines `start..=end` (1-based) of `path`, as the PR's head has it, become
/// `lines` (no line ends; empty to delete them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub path: String,
    pub start: u32,
    pub end: u32,
    pub lines: Vec<String>,
}

/// The review hone posts: its suggestions, and the rest of the change as a patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewPlan {
    pub suggestions: Vec<Suggestion>,
    /// What no suggestion can carry (new, deleted, renamed or binary files; hunks outside the
    /// PR's diff) as a patch `git apply` takes, relative to the PR's head with the suggestions
    /// applied (a file that has both differs from the head only there); empty when none.
    pub patch: String,
    /// Each file in `patch`, with why it is there.
    pub in_patch: Vec<(String, String)>,
}

/// What the run asks the forge to post.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The PR (merge request) number.
    pub number: u64,
    /// The PR's head, which the change was made on: the review is for this commit.
    pub head_sha: &'a str,
    /// hone's verified commit on top of `head_sha`; `None` when the verified outcome is that
    /// nothing needs to change (an earlier review of hone's is then updated to say so).
    pub commit_sha: Option<&'a str>,
    /// The job's name: hone's reviews for this job carry its marker.
    pub job: &'a str,
    /// The summary body: what was changed and how it was verified (markdown, redacted, inert).
    pub body: &'a str,
    /// The login hone writes as, when hone knows it (a GitHub App's bot); else asked of the forge.
    pub login: Option<&'a str>,
}

impl ReviewPlan {
    /// Each file in the patch as `path: why`, as the report lists it.
    pub fn in_patch_lines(&self) -> Vec<String> {
        self.in_patch.iter().map(|(p, why)| format!("{p}: {why}")).collect()
    }
}

/// The plan for hone's `commit` on the PR's `head`, anchored to the lines `commentable` allows
/// (git work, off the executor).
pub async fn plan_on(
    ws: &crate::git::Workspace,
    head: &str,
    commit: &str,
    commentable: anchors::Commentable,
) -> crate::error::Result<ReviewPlan> {
    let (head, commit) = (oid(head)?, oid(commit)?);
    ws.blocking(move |ws| suggest::plan(ws.repository(), head, commit, &commentable)).await
}

fn oid(sha: &str) -> crate::error::Result<git2::Oid> {
    use crate::error::{Code, HoneError};
    git2::Oid::from_str(sha).map_err(|_| HoneError::new(Code::Git, format!("`{sha}` is not a commit id")))
}

/// The marker that starts the body of every review hone writes for `job`.
pub fn marker(job: &str) -> String {
    format!("<!-- hone:review job={job} -->")
}
