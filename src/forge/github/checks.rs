//! What decides a merge on GitHub: one PR's check runs and statuses against the contexts its base
//! branch's rules require, its reviews (only those of people with the right to decide), GitHub's
//! review decision, and its mergeability, read in as few requests as GitHub allows (a merged or
//! closed PR is one GET; an open one asks the rest at once).

use super::campaign::Api;
use crate::error::Result;
use crate::forge::campaign::{Checks, Review, Reviewed, Seen};
use serde_json::Value;
use std::collections::BTreeMap;

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
    Ok(Seen {
        checks: Some(state),
        checks_why: why,
        review: Some(review),
        rules: Some(rules),
        kind: crate::forge::Kind::Github,
        pr,
    })
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

/// Why an open pull request GitHub describes cannot be merged now, or `None` when it can:
/// checks passing, reviews allowing, mergeable (not a draft: `campaign::blocker` asked first).
pub fn blocker(seen: &Seen) -> Option<String> {
    let pr = &seen.pr;
    if let Some(why) = crate::forge::campaign::checks_or_reviews_block(seen) {
        return Some(why);
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
