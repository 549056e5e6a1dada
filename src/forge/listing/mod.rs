//! Listing repositories on a forge: a GitHub organisation's or user's repositories, a GitHub
//! repository or code search, a GitLab group's projects. Pages are counted by hone (never a link
//! from the answer followed), bounded, and every request is paced, timed and cancellable.
//! What comes back is the forge's word, to be checked by the caller.

mod github;
mod gitlab;

use super::github::GitHub;
use super::gitlab::GitLab;
use crate::error::Result;

/// What to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    GithubOrg(String),
    GithubUser(String),
    GithubSearch(String),
    GithubCode(String),
    /// A group's projects (with `subgroups`, its subgroups' too).
    GitlabGroup {
        group: String,
        subgroups: bool,
    },
}

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
fn topics(v: Option<&serde_json::Value>) -> Vec<String> {
    let all = v.and_then(serde_json::Value::as_array).map(Vec::as_slice).unwrap_or_default();
    all.iter()
        .filter_map(|t| t.as_str())
        .filter(|t| t.len() <= MAX_TOPIC_LEN)
        .take(MAX_TOPICS)
        .map(str::to_string)
        .collect()
}

/// The client a listing goes through.
pub enum Client<'a> {
    GitHub(&'a GitHub),
    GitLab(&'a GitLab),
}

/// List `source` through `client` (GitHub sources need a GitHub client, GitLab's a GitLab one).
pub async fn list(client: Client<'_>, source: &Source) -> Result<Listing> {
    match (client, source) {
        (Client::GitLab(gl), Source::GitlabGroup { group, subgroups }) => gitlab::list(gl, group, *subgroups).await,
        (Client::GitHub(gh), s) if !matches!(s, Source::GitlabGroup { .. }) => github::list(gh, s).await,
        _ => Err(crate::error::HoneError::new(
            crate::error::Code::Internal,
            "a listing was sent to the other forge's client",
        )),
    }
}

/// The warning for a listing cut at `MAX_PAGES`.
fn cut_short(what: &str) -> String {
    format!("{what} had more than {} pages of {PER_PAGE}: hone read the first {}", MAX_PAGES, MAX_PAGES)
}
