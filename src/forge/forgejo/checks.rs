//! What decides a merge on Forgejo: a pull request's head's combined commit status, against the
//! status contexts its base branch's protection requires; its official reviews, against the
//! approvals the protection requires; and Forgejo's `mergeable`, read into the shape every
//! forge's campaign gives (`campaign::Seen`).

use super::{Forgejo, encode};
use crate::error::{Code, HoneError, Result};
use crate::forge::campaign::{Checks, Pr, Review, Seen, quote};
use serde_json::Value;

/// The most pages of reviews read (50 a page).
const REVIEW_PAGES: u32 = 10;
const PER_PAGE: usize = 50;

/// What the base branch's protection asks of a merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protection {
    pub required_approvals: u64,
    pub required_checks: Vec<String>,
}

fn failed(what: &str, a: &super::Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&a.message())))
}

/// What decides the merge of PR `n` (`pr`, read already): for an open one, its checks and
/// reviews, read at once; for a closed or merged one, nothing more.
pub async fn observe(fj: &Forgejo, n: u64, pr: Pr) -> Result<Seen> {
    let kind = crate::forge::Kind::Forgejo;
    if pr.state != "open" || pr.merged {
        return Ok(Seen { pr, kind, ..Default::default() });
    }
    let (head, base) = (&pr.head_sha, &pr.base_ref);
    let (combined, prot, reviews) = tokio::try_join!(status(fj, head), protection(fj, base), reviews(fj, n))?;
    let (checks, why) = checks_of(&combined, &prot.required_checks);
    let review = review_of(&reviews, prot.required_approvals);
    Ok(Seen { checks: Some(checks), checks_why: why, review: Some(review), rules: None, kind, pr })
}

/// Why an open PR cannot be merged now on Forgejo, or `None`: its checks pass, the official
/// reviews allow it, and Forgejo says it is mergeable.
pub fn blocker(seen: &Seen) -> Option<String> {
    if let Some(why) = crate::forge::campaign::checks_or_reviews_block(seen) {
        return Some(why);
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

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
