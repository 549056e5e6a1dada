//! `hone fleet prs status`: one PR's state, checks, reviews, mergeability and age, in as few
//! requests as GitHub allows: a merged or closed PR is one GET; an open one adds its head's check
//! runs and statuses, its reviews, GitHub's review decision (GraphQL) and its base branch's
//! rules, asked at once. A GitLab merge request is read in `gitlab.rs` into the same shape.
//! Only people with the right to decide count: reviews of users with write access; checks the
//! rules require must have reported, and none reported yet is pending.

use super::Item;
use super::github::{Api, Pr, Reviewed, Rules};
use super::report::{Checks, PrResult, Review, State};
use crate::error::Result;
use serde_json::Value;
use std::collections::BTreeMap;

/// What was read of one PR.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub pr: Pr,
    pub checks: Option<Checks>,
    /// Why the checks are pending, when hone knows more than "one is running".
    pub checks_why: Option<String>,
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
    let (checks, reviews, rules, decision) =
        tokio::try_join!(api.checks(&pr.head_sha), api.reviews(n), api.rules(&pr.base_ref), api.review_decision(n))?;
    let (state, why) = checks_state(&checks.0, &checks.1, &rules.required_checks);
    let review = match decision.as_deref() {
        Some("APPROVED") => Review::Approved,
        Some("CHANGES_REQUESTED") => Review::ChangesRequested,
        Some(_) => Review::ReviewRequired,
        None => review_state(&reviews, rules.required_reviews),
    };
    Ok(Seen { checks: Some(state), checks_why: why, review: Some(review), rules: Some(rules), gitlab: false, pr })
}

/// Check runs and commit statuses together, against the contexts the rules require: failing if
/// any failed; pending, with why, if none has reported yet or a required one has not; pending if
/// any is not done; else passing.
pub fn checks_state(runs: &[Value], statuses: &[Value], required: &[String]) -> (Checks, Option<String>) {
    let reported = |c: &str| {
        runs.iter().any(|r| r["name"].as_str() == Some(c)) || statuses.iter().any(|s| s["context"].as_str() == Some(c))
    };
    let missing: Vec<String> = required.iter().filter(|c| !reported(c)).map(|c| format!("`{c}`")).collect();
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
    if states.contains(&Checks::Failing) {
        (Checks::Failing, None)
    } else if states.is_empty() {
        (Checks::Pending, Some("no check has reported yet".into()))
    } else if !missing.is_empty() {
        let (one, s) = if missing.len() == 1 { ("has", "") } else { ("have", "s") };
        (Checks::Pending, Some(format!("required check{s} {} {one} not reported", missing.join(", "))))
    } else if states.contains(&Checks::Pending) {
        (Checks::Pending, None)
    } else {
        (Checks::Passing, None)
    }
}

/// Whether a review's `author_association` is one of someone GitHub lets decide: an owner, a
/// member of the organisation, a collaborator. A contributor's or a stranger's does not count.
fn may_decide(association: &str) -> bool {
    matches!(association, "OWNER" | "MEMBER" | "COLLABORATOR")
}

/// The latest approving, change-requesting or dismissing review of each reviewer who may decide
/// (comments change nothing; anyone else's reviews count for nothing), against the approvals
/// the base branch's rules require.
pub fn review_state(reviews: &[Reviewed], required: u64) -> Review {
    let mut latest: BTreeMap<&str, &str> = BTreeMap::new();
    for r in reviews.iter().filter(|r| may_decide(&r.association)) {
        if matches!(r.state.as_str(), "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED") {
            latest.insert(&r.login, &r.state);
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

/// `status` for one PR: what was seen and, for an open one, whether it is hone's (`owned`) and
/// what keeps it from merging (`reason`: the first of the two).
pub async fn one(api: &super::forge::Api<'_>, item: &Item, r: &mut PrResult) -> Result<()> {
    let seen = api.observe(item.number).await?;
    fill(r, &seen, item);
    if matches!(state_of(&seen.pr), State::Open | State::Draft) {
        let (owned, why) = super::own::judge(&seen.pr, item, &api.me().await?);
        r.owned = Some(owned);
        r.reason = why.or_else(|| blocker(&seen));
    }
    Ok(())
}

/// Fill `r` with what was seen.
pub fn fill(r: &mut PrResult, seen: &Seen, item: &Item) {
    let pr = &seen.pr;
    r.url = Some(pr.url.clone()).filter(|u| !u.is_empty());
    r.author = Some(super::github::quote(&pr.author)).filter(|a| !a.is_empty());
    let state = state_of(pr);
    r.state = Some(state);
    r.age_days = age_days(&pr.created_at);
    if matches!(state, State::Open | State::Draft) {
        r.head_sha = Some(pr.head_sha.clone());
        r.pushed_sha = item.pushed.clone();
        r.checks = seen.checks;
        r.review = seen.review;
        r.merge_queue = seen.rules.as_ref().map(|x| x.merge_queue);
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
    match (pr.mergeable, pr.mergeable_state.as_str()) {
        (None, _) => Some("mergeability unknown (GitHub is computing it; try again)".into()),
        (Some(false), _) | (_, "dirty") => Some("conflicts with its base".into()),
        (_, "blocked") if !seen.rules.as_ref().is_some_and(|r| r.merge_queue) => {
            Some("blocked by branch protection".into())
        }
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
        let run = |s: &str, c: Option<&str>| json!({"name": "ci", "status": s, "conclusion": c});
        let state = |runs: &[Value], st: &[Value]| checks_state(runs, st, &[]).0;
        assert_eq!(checks_state(&[], &[], &[]), (Checks::Pending, Some("no check has reported yet".into())));
        assert_eq!(
            state(&[run("completed", Some("success")), run("completed", Some("skipped"))], &[]),
            Checks::Passing
        );
        assert_eq!(state(&[run("in_progress", None)], &[json!({"state": "success"})]), Checks::Pending);
        assert_eq!(state(&[run("in_progress", None)], &[json!({"state": "failure"})]), Checks::Failing);
        assert_eq!(state(&[run("completed", Some("timed_out"))], &[]), Checks::Failing);
        let required = ["ci".to_string(), "ext".into(), "lint".into(), "docs".into()];
        let ok = [run("completed", Some("success"))];
        let ext = [json!({"context": "ext", "state": "success"})];
        assert_eq!(
            checks_state(&ok, &ext, &required),
            (Checks::Pending, Some("required checks `lint`, `docs` have not reported".into()))
        );
        assert_eq!(checks_state(&ok, &ext, &required[..2]), (Checks::Passing, None));
        let r = |w: &str, s: &str| Reviewed { login: w.into(), state: s.into(), association: "MEMBER".into() };
        assert_eq!(review_state(&[], 0), Review::None);
        assert_eq!(review_state(&[], 1), Review::ReviewRequired);
        assert_eq!(review_state(&[r("a", "CHANGES_REQUESTED"), r("a", "APPROVED")], 1), Review::Approved);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("a", "COMMENTED")], 1), Review::Approved);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("b", "CHANGES_REQUESTED")], 1), Review::ChangesRequested);
        assert_eq!(review_state(&[r("a", "APPROVED"), r("a", "DISMISSED")], 1), Review::ReviewRequired);
        assert_eq!(review_state(&[r("a", "APPROVED")], 2), Review::ReviewRequired);
        let stranger = |s: &str| Reviewed { login: "x".into(), state: s.into(), association: "NONE".into() };
        assert_eq!(review_state(&[stranger("APPROVED")], 1), Review::ReviewRequired);
        assert_eq!(review_state(&[r("a", "APPROVED"), stranger("CHANGES_REQUESTED")], 1), Review::Approved);
        let contributor = Reviewed { association: "CONTRIBUTOR".into(), ..r("c", "APPROVED") };
        assert_eq!(review_state(&[contributor], 0), Review::None);
    }
}
