//! GitHub's review feedback on a pull request hone made: reviews and review comments by the
//! repository's owner, members and collaborators (never a drive-by commenter, a bot or hone
//! itself, nor what hone wrote under a person's login), the newest comments and up to
//! `REVIEW_PAGES` pages of reviews, each made one short paragraph, the newest `MAX_ITEMS` kept.

use super::{GitHub, Resp};
use crate::error::{Code, HoneError, Result};
use crate::forge::feedback::{Feedback, MAX_ITEMS, MAX_LOGIN, MAX_PATH, bounded, newest, stamp, text_of, time_of};
use serde_json::Value;
use time::OffsetDateTime;

/// One page of a list, the most the API gives.
const PER_PAGE: usize = 100;
/// The most pages of reviews read: GitHub lists them oldest first (with no other order), so the
/// newest are on the last page; 10 pages is 1,000 reviews.
const REVIEW_PAGES: usize = 10;
/// The author associations GitHub gives those with a say on the repository.
const TRUSTED: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

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

#[cfg(test)]
#[path = "feedback_tests.rs"]
pub(crate) mod tests;
