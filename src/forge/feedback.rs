//! Review feedback on a pull request hone made, from reviewers the repository trusts, as typed
//! and bounded data for hone's memory: GitHub's reviews and review comments by the repository's
//! owner, members and collaborators (never a drive-by commenter, a bot or hone itself, nor what
//! hone wrote under a person's login: its marker comes first), the newest comments and up to `REVIEW_PAGES` pages of reviews, each text made one short paragraph,
//! the newest `MAX_ITEMS` kept.

use super::github::{GitHub, Resp};
use crate::error::{Code, HoneError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The most feedback items kept from one pull or merge request.
pub const MAX_ITEMS: usize = 20;
/// The most characters of a body, of a reviewer's login and of a path.
pub const MAX_BODY: usize = 500;
pub const MAX_LOGIN: usize = 100;
pub const MAX_PATH: usize = 200;
/// One page of a list, the most the API gives.
const PER_PAGE: usize = 100;
/// The most pages of reviews read: GitHub lists them oldest first (with no other order), so the
/// newest are on the last page; 10 pages is 1,000 reviews.
const REVIEW_PAGES: usize = 10;
/// The author associations GitHub gives those with a say on the repository.
const TRUSTED: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

/// One piece of review feedback on a pull (merge) request hone made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The pull request's number (a merge request's iid).
    pub pr: u64,
    /// The reviewer's login (GitLab: username).
    pub reviewer: String,
    /// `CHANGES_REQUESTED`, `COMMENTED` or `APPROVED` (a review comment or a note: `COMMENTED`).
    pub state: String,
    /// The text, whitespace collapsed to one paragraph, at most `MAX_BODY` characters.
    pub body: String,
    /// The file a line comment (a diff note) is on.
    pub path: Option<String>,
    /// When it was written: RFC 3339, UTC, whole seconds.
    pub at: String,
}

/// The feedback on PR `pr` from trusted reviewers, newest first, at most `MAX_ITEMS`.
/// `own_login`: the login hone writes as (looked up with `GET /user` when `None`); its reviews
/// and comments are never feedback. A refusal (401, 403, 404) is an error: the caller decides.
pub async fn github(gh: &GitHub, pr: u64, own_login: Option<&str>) -> Result<Vec<Feedback>> {
    let own = match own_login {
        Some(l) => l.to_string(),
        None => super::autofix::own_login(gh).await?,
    };
    let mut all = reviews(gh, pr, &own).await?;
    let comments = list(
        gh,
        pr,
        &format!("/pulls/{pr}/comments?sort=created&direction=desc&per_page={PER_PAGE}"),
        "review comments",
    )
    .await?;
    all.extend(comments.iter().filter_map(|c| comment(c, pr, &own)));
    Ok(newest(all))
}

/// The newest `MAX_ITEMS` reviews worth keeping, with their times. GitHub lists reviews oldest
/// first, so the pages are read until a short one (at most `REVIEW_PAGES`), each made feedback as
/// it comes (never more than one page's answer held); a page that brings no review not seen
/// before (a server that ignores `page`) ends the reading.
async fn reviews(gh: &GitHub, pr: u64, own: &str) -> Result<Vec<(OffsetDateTime, Feedback)>> {
    let mut kept: Vec<(OffsetDateTime, Feedback)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for page in 1..=REVIEW_PAGES {
        let items = list(gh, pr, &format!("/pulls/{pr}/reviews?per_page={PER_PAGE}&page={page}"), "reviews").await?;
        let fresh: Vec<&Value> =
            items.iter().filter(|r| r["id"].is_null() || seen.insert(r["id"].to_string())).collect();
        if fresh.is_empty() {
            break;
        }
        kept.extend(fresh.into_iter().filter_map(|r| review(r, pr, own)));
        kept.sort_by_key(|a| std::cmp::Reverse(a.0));
        kept.truncate(MAX_ITEMS);
        if items.len() < PER_PAGE {
            break;
        }
    }
    Ok(kept)
}

/// One page of the list at `rest` (under the repository), or the error GitHub's answer is.
async fn list(gh: &GitHub, pr: u64, rest: &str, what: &str) -> Result<Vec<Value>> {
    let resp = gh.get(&gh.repo_path(rest)).await?;
    if !resp.ok() {
        return Err(refused(what, pr, &resp));
    }
    match resp.body {
        Value::Array(items) => Ok(items),
        _ => Err(HoneError::new(Code::Forge, format!("reading the {what} of PR #{pr}: GitHub's answer is not a list"))
            .hint("check GITHUB_API_URL: it should be the GitHub API's address")),
    }
}

fn refused(what: &str, pr: u64, resp: &Resp) -> HoneError {
    let hint = match resp.status {
        401 => "the token was not accepted: check GITHUB_TOKEN (or the GitHub App's credentials)",
        403 | 404 => {
            "check the PR number and that the token may read the repository's pull requests (`pull-requests: read`)"
        }
        _ => "check the GitHub API's status and try again",
    };
    HoneError::new(Code::Forge, format!("reading the {what} of PR #{pr} failed: {}", resp.message())).hint(hint)
}

/// The reviewer of `v` when GitHub says they have a say on the repository and they are neither
/// a bot nor hone (`own`, compared as GitHub compares logins).
fn trusted_author(v: &Value, own: &str) -> Option<String> {
    let login = v["user"]["login"].as_str()?;
    let association = v["author_association"].as_str()?;
    let trusted = TRUSTED.contains(&association)
        && v["user"]["type"].as_str() == Some("User")
        && !login.eq_ignore_ascii_case(own);
    trusted.then(|| bounded(login, MAX_LOGIN)).filter(|l| !l.is_empty())
}

/// The prefix of every marker hone writes first in what it posts (`<!-- hone:review job=… -->`,
/// `<!-- hone:autofix job=… -->`, `<!-- hone:job=… -->`).
pub const HONE_MARKER: &str = "<!-- hone:";

/// The text of `body` as feedback: `None` when it is hone's own (it starts with a marker hone
/// writes), whoever's login it came under (a person who ran hone with their own token, another
/// job's token): its words are a model's, not a reviewer's.
pub(crate) fn text_of(body: Option<&str>) -> Option<String> {
    let body = body.unwrap_or("");
    (!body.trim_start().starts_with(HONE_MARKER)).then(|| bounded(body, MAX_BODY))
}

/// A review that says something: changes requested, or a comment or approval with a body.
fn review(r: &Value, pr: u64, own: &str) -> Option<(OffsetDateTime, Feedback)> {
    let reviewer = trusted_author(r, own)?;
    let state = r["state"].as_str()?;
    let body = text_of(r["body"].as_str())?;
    let keep = match state {
        "CHANGES_REQUESTED" => true,
        "COMMENTED" | "APPROVED" => !body.is_empty(),
        _ => false,
    };
    let at = time_of(&r["submitted_at"]).filter(|_| keep)?;
    Some((at, Feedback { pr, reviewer, state: state.to_string(), body, path: None, at: stamp(at) }))
}

/// A review comment with its file.
fn comment(c: &Value, pr: u64, own: &str) -> Option<(OffsetDateTime, Feedback)> {
    let reviewer = trusted_author(c, own)?;
    let body = text_of(c["body"].as_str())?;
    let path = c["path"].as_str().map(|p| bounded(p, MAX_PATH)).filter(|p| !p.is_empty());
    let at = time_of(&c["created_at"]).filter(|_| !body.is_empty())?;
    Some((at, Feedback { pr, reviewer, state: "COMMENTED".into(), body, path, at: stamp(at) }))
}

/// The newest `MAX_ITEMS` of `all`, newest first (ties in the order given).
pub(crate) fn newest(mut all: Vec<(OffsetDateTime, Feedback)>) -> Vec<Feedback> {
    all.sort_by_key(|a| std::cmp::Reverse(a.0));
    all.into_iter().take(MAX_ITEMS).map(|(_, f)| f).collect()
}

/// A server's RFC 3339 time, to whole seconds in UTC.
pub(crate) fn time_of(v: &Value) -> Option<OffsetDateTime> {
    let t = OffsetDateTime::parse(v.as_str()?, &Rfc3339).ok()?;
    t.to_offset(time::UtcOffset::UTC).replace_nanosecond(0).ok()
}

pub(crate) fn stamp(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// `text` as one paragraph (whitespace runs made one space, control characters dropped), cut
/// at a character boundary to at most `max` characters, the cut marked with `…`.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    let clean: String =
        text.chars().map(|c| if c.is_whitespace() { ' ' } else { c }).filter(|c| !c.is_control()).collect();
    let one = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

#[cfg(test)]
#[path = "feedback_tests.rs"]
pub(crate) mod tests;
