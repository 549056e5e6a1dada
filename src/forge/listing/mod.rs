//! Listing repositories on a forge: a GitHub organisation's or user's repositories, a GitHub
//! repository or code search, a GitLab group's projects, a Forgejo organisation's repositories. Pages are counted by hone (never a link
//! from the answer followed), bounded, and every request is paced, timed and cancellable.
//! What comes back is the forge's word, to be checked by the caller.

pub mod filters;

pub use filters::{Filters, Keep};

/// One repository as the forge described it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    /// `owner/name` on GitHub, `group/sub/project` on GitLab.
    pub path: String,
    pub archived: Option<bool>,
    pub fork: Option<bool>,
    /// `public`, `private` or `internal`.
    pub visibility: Option<String>,
    pub topics: Vec<String>,
    pub language: Option<String>,
}

/// A listing: the repositories, what the user should know about it, and the requests it took.
#[derive(Debug, Default)]
pub struct Listing {
    pub repos: Vec<Listed>,
    pub warnings: Vec<String>,
    pub requests: u32,
}

/// A page of at most this many repositories (the most either forge gives).
pub const PER_PAGE: usize = 100;
/// The most pages one listing reads (100,000 repositories): a forge that never stops answering
/// full pages cannot keep hone listing forever.
pub const MAX_PAGES: u32 = 1000;

/// The most topics kept of one repository, and the longest kept (GitHub allows 20 of 50).
const MAX_TOPICS: usize = 100;
const MAX_TOPIC_LEN: usize = 100;

/// A repository's topics as the forge listed them, bounded.
pub fn topics(v: Option<&serde_json::Value>) -> Vec<String> {
    let all = v.and_then(serde_json::Value::as_array).map(Vec::as_slice).unwrap_or_default();
    all.iter()
        .filter_map(|t| t.as_str())
        .filter(|t| t.len() <= MAX_TOPIC_LEN)
        .take(MAX_TOPICS)
        .map(str::to_string)
        .collect()
}

/// Why a query's forge has no server hone may list on.
pub fn no_server(kind: super::Kind) -> crate::error::HoneError {
    use crate::error::{Code, HoneError};
    match kind {
        super::Kind::Github => HoneError::new(Code::Spec, "cannot tell GitHub's server for the fleet's query").hint(
            "set GITHUB_SERVER_URL to GitHub's https:// address (https://github.com, or your GitHub Enterprise Server)",
        ),
        super::Kind::Gitlab => HoneError::new(
            Code::Spec,
            "the GitLab server named (`forge.url` or CI_SERVER_URL) is not a plain https:// address: hone lists no group there, and never falls back to gitlab.com with its token",
        )
        .hint("set `forge.url` in the job to the server's https:// address"),
        super::Kind::Forgejo => HoneError::new(Code::Spec, "cannot tell the Forgejo server for the fleet's query")
            .hint("set `forge.url` in the job to the Forgejo (or Gitea) server's https:// address"),
    }
}

/// The warning for a listing cut at `MAX_PAGES`.
pub fn cut_short(what: &str) -> String {
    format!("{what} had more than {} pages of {PER_PAGE}: hone read the first {}", MAX_PAGES, MAX_PAGES)
}
