//! `hone fleet prs status`: one PR's state, checks, reviews, mergeability and age, in as few
//! requests as GitHub's REST API allows: a merged or closed PR is one GET; an open one adds its
//! head's check runs and statuses, its reviews and its base branch's rules, asked at once. A
//! GitLab merge request is one GET (`gitlab.rs`) read into the same shape.

use super::github::{Api, Pr, Rules};
use super::report::{Checks, PrResult, Review, State};
use crate::error::Result;
use serde_json::Value;
use std::collections::BTreeMap;

/// What was read of one PR.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub pr: Pr,
    pub checks: Option<Checks>,
    pub review: Option<Review>,
    pub rules: Option<Rules>,
    /// Read from GitLab: `pr.mergeable_state` is its `detailed_merge_status`.
    pub gitlab: bool,
}

/// Read PR `n`: the PR itself, and for an open one its checks, reviews and rules.
pub async fn observe(api: &Api<'_>, n: u64) -> Result<Seen> {
    let pr = api.pull(n).await?;
    if pr.state != "open" || pr.merged {
        return Ok(Seen { pr, ..Default::default() });
    }
    let (checks, reviews, rules) = tokio::try_join!(api.checks(&pr.head_sha), api.reviews(n), api.rules(&pr.base_ref))?;
    Ok(Seen {
        checks: Some(checks_state(&checks.0, &checks.1)),
        review: Some(review_state(&reviews, rules.required_reviews)),
        rules: Some(rules),
        gitlab: false,
        pr,
    })
}

/// Check runs and commit statuses together: failing if any failed, else pending if any is not
/// done, else passing if there are any.
pub fn checks_state(runs: &[Value], statuses: &[Value]) -> Checks {
    let mut states = Vec::new();
    for r in runs {
        states.push(match (r["status"].as_str(), r["conclusion"].as_str()) {
            (Some("completed"), Some("success" | "neutral" | "skipped")) => Checks::Passing,
            (Some("completed"), _) => Checks::Failing,
            _ => Checks::Pending,
        });
    }
    for s in statuses {
        states.push(match s["state"].as_str() {
            Some("success") => Checks::Passing,
            Some("pending") => Checks::Pending,
            _ => Checks::Failing,
        });
    }
    [Checks::Failing, Checks::Pending, Checks::Passing].into_iter().find(|c| states.contains(c)).unwrap_or(Checks::None)
}

/// The latest approving, change-requesting or dismissing review of each reviewer (comments
/// change nothing), against the approvals the base branch's rules require.
pub fn review_state(reviews: &[(String, String)], required: u64) -> Review {
    let mut latest: BTreeMap<&str, &str> = BTreeMap::new();
    for (who, state) in reviews {
        if matches!(state.as_str(), "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED") {
            latest.insert(who, state);
        }
    }
    let approvals = latest.values().filter(|s| **s == "APPROVED").count() as u64;
    if latest.values().any(|s| *s == "CHANGES_REQUESTED") {
        Review::ChangesRequested
    } else if approvals < required {
        Review::ReviewRequired
    } else if approvals > 0 {
        Review::Approved
    } else {
        Review::None
    }
}

/// Whole days from `created_at` (RFC 3339) to now.
fn age_days(created_at: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(created_at, &time::format_description::well_known::Rfc3339).ok()?;
    let secs = (time::OffsetDateTime::now_utc() - t).whole_seconds();
    u64::try_from(secs / 86_400).ok()
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

/// Fill `r` with what was seen.
pub fn fill(r: &mut PrResult, seen: &Seen) {
    let pr = &seen.pr;
    r.url = Some(pr.url.clone()).filter(|u| !u.is_empty());
    let state = state_of(pr);
    r.state = Some(state);
    r.age_days = age_days(&pr.created_at);
    if matches!(state, State::Open | State::Draft) {
        r.head_sha = Some(pr.head_sha.clone());
        r.checks = seen.checks;
        r.review = seen.review;
        r.merge_queue = seen.rules.map(|x| x.merge_queue);
        r.mergeable = Some(
            match pr.mergeable {
                Some(true) => "mergeable",
                Some(false) => "conflicting",
                None => "unknown",
            }
            .into(),
        );
        r.mergeable_state = Some(super::github::quote(&pr.mergeable_state)).filter(|s| !s.is_empty());
    }
}

/// Why an open PR cannot be merged now, or `None` when it can: not a draft, checks passing (or
/// none), reviews allowing, mergeable.
pub fn blocker(seen: &Seen) -> Option<String> {
    let pr = &seen.pr;
    match state_of(pr) {
        State::Merged => return Some("already merged".into()),
        State::Closed => return Some("closed".into()),
        State::Draft => return Some("a draft".into()),
        State::Open => {}
    }
    if seen.gitlab {
        return super::gitlab::blocker(seen);
    }
    match seen.checks {
        Some(Checks::Failing) => return Some("checks failing".into()),
        Some(Checks::Pending) => return Some("checks pending".into()),
        _ => {}
    }
    match seen.review {
        Some(Review::ChangesRequested) => return Some("changes requested".into()),
        Some(Review::ReviewRequired) => return Some("review required".into()),
        _ => {}
    }
    match (pr.mergeable, pr.mergeable_state.as_str()) {
        (None, _) => Some("mergeability unknown (GitHub is computing it; try again)".into()),
        (Some(false), _) | (_, "dirty") => Some("conflicts with its base".into()),
        (_, "blocked") if !seen.rules.is_some_and(|r| r.merge_queue) => Some("blocked by branch protection".into()),
        (_, "behind") => Some("behind its base (branch protection requires it up to date)".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_and_reviews_are_summed_up_as_github_shows_them() {
        let run = |s: &str, c: Option<&str>| json!({"status": s, "conclusion": c});
        assert_eq!(checks_state(&[], &[]), Checks::None);
        assert_eq!(
            checks_state(&[run("completed", Some("success")), run("completed", Some("skipped"))], &[]),
            Checks::Passing
        );
        assert_eq!(checks_state(&[run("in_progress", None)], &[json!({"state": "success"})]), Checks::Pending);
        assert_eq!(checks_state(&[run("in_progress", None)], &[json!({"state": "failure"})]), Checks::Failing);
        assert_eq!(checks_state(&[run("completed", Some("timed_out"))], &[]), Checks::Failing);
        let r = |w: &str, s: &str| (w.to_string(), s.to_string());
        assert_eq!(review_state(&[], 0), Review::None);
        assert_eq!(review_state(&[], 1), Review::ReviewRequired);
        assert_eq!(review_state(&[r("a", "CHANGES_REQUESTED"), r("a", "APPROVED")], 1), Review::Approved);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("a", "COMMENTED")], 1), Review::Approved);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("b", "CHANGES_REQUESTED")], 1), Review::ChangesRequested);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("a", "DISMISSED")], 1), Review::ReviewRequired);
        assert_eq!(review_state(&[r("a", "APPROVED")], 2), Review::ReviewRequired);
    }
}
