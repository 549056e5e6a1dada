//! What `hone fleet prs` asks Forgejo about one pull request: who the token is, the PR (state,
//! author, head, base, mergeability in one answer), its head's combined commit status, its
//! reviews, its base branch's protection (required approvals and status contexts) and its own
//! branch's commit; comment, close, delete its branch, merge it at the head hone pushed. Every
//! path is made from the fleet file's repository, fleet.json's PR number and the job's branch,
//! encoded; nothing in an answer names where the next request goes.

use super::{Answer, Forgejo, encode};
use crate::error::{Code, HoneError, Result};
use crate::forge::campaign::{Checks, Identities, Me, Merged, Pr, Review, Seen, quote};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most pages of reviews read (50 a page).
const REVIEW_PAGES: u32 = 10;
const PER_PAGE: usize = 50;

/// What the base branch's protection asks of a merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protection {
    pub required_approvals: u64,
    pub required_checks: Vec<String>,
}

/// One repository's client, counting the requests it makes.
pub struct Api<'a> {
    pub fj: Forgejo,
    pub sent: &'a AtomicU64,
    /// Each token's identity, asked once (`key` names this client's server and token).
    pub ids: &'a Identities,
    pub key: String,
}

fn failed(what: &str, a: &Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&a.message())))
}

impl Api<'_> {
    fn count(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// PR `n` alone.
    pub async fn pull(&self, n: u64) -> Result<Pr> {
        self.count(1);
        let a = self.fj.get(&self.fj.repo_path(&format!("/pulls/{n}"))).await?;
        if !a.ok() {
            return Err(failed(&format!("reading PR #{n}"), &a));
        }
        Ok(reading(&a.body))
    }

    /// PR `n` and, when open, its head's checks against its base's protection, and its reviews.
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        let pr = self.pull(n).await?;
        let kind = crate::forge::Kind::Forgejo;
        if pr.state != "open" || pr.merged {
            return Ok(Seen { pr, kind, ..Default::default() });
        }
        self.count(3);
        let fj = &self.fj;
        let (combined, prot, reviews) =
            tokio::try_join!(status(fj, &pr.head_sha), protection(fj, &pr.base_ref), reviews(fj, n))?;
        let (checks, why) = checks_of(&combined, &prot.required_checks);
        let review = review_of(&reviews, prot.required_approvals);
        Ok(Seen { checks: Some(checks), checks_why: why, review: Some(review), rules: None, kind, pr })
    }

    /// The token's user (`GET /user`): its id decides whose PR it is.
    pub async fn me(&self) -> Result<Me> {
        self.ids
            .get(&self.key, async {
                self.count(1);
                let (id, login) = super::whoami(&self.fj).await?;
                Ok(Me { login, id: Some(id) })
            })
            .await
    }

    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        self.count(1);
        branch_sha(&self.fj, branch).await
    }

    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        self.count(1);
        comment(&self.fj, n, body).await
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        self.count(1);
        close(&self.fj, n).await
    }

    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        self.count(1);
        delete_branch(&self.fj, branch).await
    }

    /// Merge at `sha` (`head_commit_id`) by `how`, never forced.
    pub async fn merge(&self, n: u64, sha: &str, how: &str) -> Result<Merged> {
        self.count(1);
        merge(&self.fj, n, sha, how).await
    }
}

/// What Forgejo's answer for a PR says. The draft is Forgejo's `draft`, or a `WIP:` title.
pub fn reading(b: &Value) -> Pr {
    let s = |v: &Value| v.as_str().unwrap_or("").chars().filter(|c| !c.is_control()).take(500).collect::<String>();
    let repo = |k: &str| b[k]["repo"]["full_name"].as_str().filter(|r| super::is_repo_path(r)).map(str::to_string);
    let title = s(&b["title"]).to_ascii_uppercase();
    let wip = ["WIP:", "[WIP]"].iter().any(|p| title.starts_with(p));
    Pr {
        url: s(&b["html_url"]),
        author: s(&b["user"]["login"]),
        author_id: b["user"]["id"].as_u64(),
        node_id: String::new(),
        state: if b["state"] == "open" { "open".into() } else { "closed".into() },
        merged: b["merged"].as_bool().unwrap_or(false),
        draft: b["draft"].as_bool().unwrap_or(false) || wip,
        head_sha: crate::forge::autofix::commit_id(&b["head"]["sha"]).unwrap_or_default(),
        head_ref: s(&b["head"]["ref"]),
        head_repo: repo("head"),
        base_ref: s(&b["base"]["ref"]),
        base_repo: repo("base"),
        mergeable: b["mergeable"].as_bool(),
        mergeable_state: String::new(),
        created_at: s(&b["created_at"]),
    }
}

/// Why an open PR cannot be merged now on Forgejo, or `None`: its checks pass, the official
/// reviews allow it, and Forgejo says it is mergeable.
pub fn blocker(seen: &Seen) -> Option<String> {
    match (seen.checks, &seen.checks_why) {
        (Some(Checks::Failing), _) => return Some("checks failing".into()),
        (Some(Checks::Pending), Some(why)) => return Some(format!("checks pending: {why}")),
        (Some(Checks::Pending), None) => return Some("checks pending".into()),
        (None, _) => return Some("checks unknown".into()),
        _ => {}
    }
    match seen.review {
        Some(Review::ChangesRequested) => return Some("changes requested".into()),
        Some(Review::ReviewRequired) => return Some("review required".into()),
        _ => {}
    }
    match seen.pr.mergeable {
        None => Some("mergeability unknown (Forgejo is checking it; try again)".into()),
        Some(false) => Some("conflicts with its base".into()),
        Some(true) => None,
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
pub fn checks_of(combined: &Value, required: &[String]) -> (Checks, Option<String>) {
    let statuses = combined["statuses"].as_array().map(Vec::as_slice).unwrap_or_default();
    let reported = |c: &str| statuses.iter().any(|s| s["context"].as_str() == Some(c));
    let missing: Vec<String> = required.iter().filter(|c| !reported(c)).map(|c| format!("`{c}`")).collect();
    let states: Vec<&str> = statuses.iter().filter_map(|s| s["status"].as_str()).collect();
    if states.iter().any(|s| matches!(*s, "failure" | "error")) {
        return (Checks::Failing, None);
    }
    if states.is_empty() {
        return (Checks::Pending, Some("no check has reported on its head".into()));
    }
    if !missing.is_empty() {
        return (Checks::Pending, Some(format!("required checks not reported: {}", missing.join(", "))));
    }
    if states.iter().all(|s| matches!(*s, "success" | "warning")) {
        (Checks::Passing, None)
    } else {
        (Checks::Pending, None)
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
pub fn review_of(reviews: &[Value], required: u64) -> Review {
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
        Review::ChangesRequested
    } else if approvals < required {
        Review::ReviewRequired
    } else if approvals > 0 {
        Review::Approved
    } else {
        Review::None
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
pub async fn merge(fj: &Forgejo, n: u64, sha: &str, how: &str) -> Result<Merged> {
    let body = json!({"Do": how, "head_commit_id": sha});
    let a = fj.post(&fj.repo_path(&format!("/pulls/{n}/merge")), &body).await?;
    match a.status {
        200 | 204 => Ok(Merged::Merged),
        405 | 409 | 422 => {
            let m = a.message();
            let m = m.strip_prefix(&format!("HTTP {}: ", a.status)).unwrap_or(&m);
            Ok(Merged::Refused(a.status, quote(m)))
        }
        _ => Err(failed(&format!("merging PR #{n}"), &a)),
    }
}

#[cfg(test)]
#[path = "campaign_tests.rs"]
mod tests;
