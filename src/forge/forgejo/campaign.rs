//! What `hone fleet prs` asks Forgejo about one pull request: who the token is, the PR (state,
//! author, head, base, mergeability in one answer), its head's combined commit status, its
//! reviews, its base branch's protection (required approvals and status contexts) and its own
//! branch's commit; comment, close, delete its branch, merge it at the head hone pushed. Every
//! path is made from the fleet file's repository, fleet.json's PR number and the job's branch,
//! encoded; nothing in an answer names where the next request goes.

use super::{Answer, Forgejo, encode};
use crate::error::{Code, HoneError, Result};
use serde_json::{Value, json};

/// The most pages of reviews read (50 a page).
const REVIEW_PAGES: u32 = 10;
const PER_PAGE: usize = 50;

/// A pull request as Forgejo describes it: only the fields hone reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    pub url: String,
    pub author: String,
    pub author_id: Option<u64>,
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
    pub mergeable: Option<bool>,
    pub created_at: String,
}

/// The head's checks: Forgejo's combined status of its commit, against the contexts the base
/// branch's protection requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    Passing,
    Failing,
    Pending,
}

/// The reviews as they decide a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    ReviewRequired,
    None,
}

/// What the base branch's protection asks of a merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protection {
    pub required_approvals: u64,
    pub required_checks: Vec<String>,
}

/// How a merge request ended: merged, or refused with Forgejo's status and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    Merged,
    Refused(u16, String),
}

fn failed(what: &str, a: &Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", a.message()))
}

/// PR `n`, read.
pub async fn pull(fj: &Forgejo, n: u64) -> Result<Reading> {
    let a = fj.get(&fj.repo_path(&format!("/pulls/{n}"))).await?;
    if !a.ok() {
        return Err(failed(&format!("reading PR #{n}"), &a));
    }
    Ok(reading(&a.body))
}

/// What Forgejo's answer for a PR says. The draft is Forgejo's `draft`, or a `WIP:` title.
pub fn reading(b: &Value) -> Reading {
    let s = |v: &Value| v.as_str().unwrap_or("").chars().filter(|c| !c.is_control()).take(500).collect::<String>();
    let repo = |k: &str| b[k]["repo"]["full_name"].as_str().filter(|r| super::is_repo_path(r)).map(str::to_string);
    let title = s(&b["title"]);
    let wip = ["WIP:", "[WIP]"].iter().any(|p| title.to_ascii_uppercase().starts_with(p));
    Reading {
        url: s(&b["html_url"]),
        author: s(&b["user"]["login"]),
        author_id: b["user"]["id"].as_u64(),
        state: if b["state"] == "open" { "open".into() } else { "closed".into() },
        merged: b["merged"].as_bool().unwrap_or(false),
        draft: b["draft"].as_bool().unwrap_or(false) || wip,
        head_sha: crate::forge::autofix::commit_id(&b["head"]["sha"]).unwrap_or_default(),
        head_ref: s(&b["head"]["ref"]),
        head_repo: repo("head"),
        base_ref: s(&b["base"]["ref"]),
        base_repo: repo("base"),
        mergeable: b["mergeable"].as_bool(),
        created_at: s(&b["created_at"]),
    }
}

/// The combined status of commit `sha` (Forgejo's own reading of every context's latest).
pub async fn status(fj: &Forgejo, sha: &str) -> Result<Value> {
    let a = fj.get(&fj.repo_path(&format!("/commits/{}/status?limit=50&page=1", encode(sha)))).await?;
    if !a.ok() {
        return Err(failed(&format!("reading the status of commit {sha}"), &a));
    }
    Ok(a.body)
}

/// The checks a combined status makes, with why when pending: none reported, or a context the
/// protection requires has not reported, is pending; any failure or error fails.
pub fn checks_of(combined: &Value, required: &[String]) -> (CheckState, Option<String>) {
    let statuses = combined["statuses"].as_array().map(Vec::as_slice).unwrap_or_default();
    let reported = |c: &str| statuses.iter().any(|s| s["context"].as_str() == Some(c));
    let missing: Vec<String> = required.iter().filter(|c| !reported(c)).map(|c| format!("`{c}`")).collect();
    let states: Vec<&str> = statuses.iter().filter_map(|s| s["status"].as_str()).collect();
    if states.iter().any(|s| matches!(*s, "failure" | "error")) {
        return (CheckState::Failing, None);
    }
    if states.is_empty() {
        return (CheckState::Pending, Some("no check has reported on its head".into()));
    }
    if !missing.is_empty() {
        return (CheckState::Pending, Some(format!("required checks not reported: {}", missing.join(", "))));
    }
    if states.iter().all(|s| matches!(*s, "success" | "warning")) {
        (CheckState::Passing, None)
    } else {
        (CheckState::Pending, None)
    }
}

/// The base branch's protection, as its `GET …/branches/{b}` answer says (none: nothing asked).
pub async fn protection(fj: &Forgejo, base: &str) -> Result<Protection> {
    let a = fj.get(&fj.repo_path(&format!("/branches/{}", encode(base)))).await?;
    if !a.ok() {
        return Err(failed(&format!("reading the branch {base}"), &a));
    }
    Ok(protection_of(&a.body))
}

pub fn protection_of(b: &Value) -> Protection {
    let contexts = b["status_check_contexts"].as_array().map(Vec::as_slice).unwrap_or_default();
    let checks = b["enable_status_check"] == true;
    Protection {
        required_approvals: b["required_approvals"].as_u64().unwrap_or(0),
        required_checks: contexts.iter().filter_map(Value::as_str).filter(|_| checks).map(str::to_string).collect(),
    }
}

/// The PR's reviews, page by page (at most `REVIEW_PAGES`).
pub async fn reviews(fj: &Forgejo, n: u64) -> Result<Vec<Value>> {
    let mut all = Vec::new();
    for page in 1..=REVIEW_PAGES {
        let a = fj.get(&fj.repo_path(&format!("/pulls/{n}/reviews?limit={PER_PAGE}&page={page}"))).await?;
        if !a.ok() {
            return Err(failed(&format!("reading the reviews of PR #{n}"), &a));
        }
        let items = a.body.as_array().cloned().unwrap_or_default();
        let short = items.len() < PER_PAGE;
        all.extend(items);
        if short {
            break;
        }
    }
    Ok(all)
}

/// The reviews' verdict: the latest official (by someone whose approval counts), not dismissed
/// or stale, review of each reviewer; changes requested by any wins; approved when at least the
/// approvals the protection requires (one when it requires none) are there.
pub fn review_of(reviews: &[Value], required: u64) -> ReviewState {
    let mut latest: std::collections::BTreeMap<u64, &str> = Default::default();
    for r in reviews {
        let counts = r["official"] == true && r["dismissed"] != true && r["stale"] != true;
        if let (Some(id), Some(state)) = (r["user"]["id"].as_u64(), r["state"].as_str())
            && counts
            && matches!(state, "APPROVED" | "REQUEST_CHANGES")
        {
            latest.insert(id, state);
        }
    }
    let approvals = latest.values().filter(|s| **s == "APPROVED").count() as u64;
    if latest.values().any(|s| *s == "REQUEST_CHANGES") {
        ReviewState::ChangesRequested
    } else if approvals < required {
        ReviewState::ReviewRequired
    } else if approvals > 0 {
        ReviewState::Approved
    } else {
        ReviewState::None
    }
}

/// The commit the repository's branch `branch` is at, `None` when there is no such branch.
pub async fn branch_sha(fj: &Forgejo, branch: &str) -> Result<Option<String>> {
    let a = fj.get(&fj.repo_path(&format!("/branches/{}", encode(branch)))).await?;
    match a.status {
        404 => Ok(None),
        _ if a.ok() => Ok(crate::forge::autofix::commit_id(&a.body["commit"]["id"])),
        _ => Err(failed(&format!("reading the branch {branch}"), &a)),
    }
}

/// A comment on PR `n`.
pub async fn comment(fj: &Forgejo, n: u64, body: &str) -> Result<()> {
    let a = fj.post(&fj.repo_path(&format!("/issues/{n}/comments")), &json!({"body": body})).await?;
    if !a.ok() {
        return Err(failed(&format!("commenting on PR #{n}"), &a));
    }
    Ok(())
}

pub async fn close(fj: &Forgejo, n: u64) -> Result<()> {
    let a = fj.patch(&fj.repo_path(&format!("/pulls/{n}")), &json!({"state": "closed"})).await?;
    if !a.ok() {
        return Err(failed(&format!("closing PR #{n}"), &a));
    }
    Ok(())
}

/// Delete the repository's branch `branch` (encoded as one segment). A branch already gone (404)
/// is fine.
pub async fn delete_branch(fj: &Forgejo, branch: &str) -> Result<bool> {
    let a = fj.delete(&fj.repo_path(&format!("/branches/{}", encode(branch)))).await?;
    match a.status {
        200 | 204 => Ok(true),
        404 => Ok(false),
        _ => Err(failed(&format!("deleting the branch {branch}"), &a)),
    }
}

/// PR `n` merged by `how` (`merge`, `squash`, `rebase`) if its head is still `sha`, never
/// forced: Forgejo checks its own rules again (405 not mergeable or not allowed, 409 the head
/// moved or conflicts).
pub async fn merge(fj: &Forgejo, n: u64, sha: &str, how: &str) -> Result<Merge> {
    let body = json!({"Do": how, "head_commit_id": sha});
    let a = fj.post(&fj.repo_path(&format!("/pulls/{n}/merge")), &body).await?;
    match a.status {
        200 | 204 => Ok(Merge::Merged),
        405 | 409 | 422 => Ok(Merge::Refused(a.status, a.message())),
        _ => Err(failed(&format!("merging PR #{n}"), &a)),
    }
}

#[cfg(test)]
#[path = "campaign_tests.rs"]
mod tests;
