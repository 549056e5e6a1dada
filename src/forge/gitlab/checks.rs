//! What decides a merge on GitLab: a merge request's state, head pipeline, approvals and
//! `detailed_merge_status`, read into the shape every forge's campaign gives (`campaign::Seen`).

use crate::forge::campaign::{Checks, Pr, Review, Seen, quote};
use serde_json::Value;

/// What a merge request's answer (and its approvals, when read) says, in the shape the GitHub
/// reading has. The head is this project's only when GitLab names the same project as source
/// and target (never a fork's).
pub fn seen(b: &Value, project: &str, approvals: Option<&Value>) -> Seen {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let state = s(&b["state"]);
    let status = s(&b["detailed_merge_status"]);
    let same = b["source_project_id"].as_u64().is_some() && b["source_project_id"] == b["target_project_id"];
    let pr = Pr {
        url: s(&b["web_url"]),
        author: s(&b["author"]["username"]),
        author_id: b["author"]["id"].as_u64(),
        state: if matches!(state.as_str(), "opened" | "locked") { "open".into() } else { "closed".into() },
        merged: state == "merged",
        draft: b["draft"].as_bool().unwrap_or(false) || b["work_in_progress"].as_bool().unwrap_or(false),
        head_sha: s(&b["sha"]),
        head_ref: s(&b["source_branch"]),
        // Another project (a fork) is named by its id: GitLab's answer gives no path for it.
        head_repo: match b["source_project_id"].as_u64() {
            _ if same => Some(project.to_string()),
            Some(id) => Some(format!("project {id}")),
            None => None,
        },
        base_ref: s(&b["target_branch"]),
        base_repo: Some(project.to_string()),
        mergeable: match status.as_str() {
            "unchecked" | "checking" | "preparing" | "approvals_syncing" => None,
            _ => Some(!b["has_conflicts"].as_bool().unwrap_or(false) && status != "conflict"),
        },
        mergeable_state: status.clone(),
        created_at: s(&b["created_at"]),
        node_id: String::new(),
    };
    let open = pr.state == "open" && !pr.merged;
    let (checks, why) = pipeline_checks(&b["head_pipeline"], &pr.head_sha);
    Seen {
        checks: open.then_some(checks),
        checks_why: why.filter(|_| open),
        review: open.then(|| approval_review(approvals, &status)),
        rules: None,
        kind: crate::forge::Kind::Gitlab,
        pr,
    }
}

/// What the approvals say: changes requested when GitLab's merge status says so; review required
/// when the approval rules are not met (`approvals_left`, or the merge status); approved when
/// someone GitLab let approve did; else none. A note is never an approval.
fn approval_review(approvals: Option<&Value>, status: &str) -> Review {
    let a = approvals.unwrap_or(&Value::Null);
    let left = a["approvals_left"].as_u64().unwrap_or(0);
    let by = a["approved_by"].as_array().is_some_and(|v| !v.is_empty());
    if status == "requested_changes" {
        Review::ChangesRequested
    } else if left > 0 || status == "not_approved" {
        Review::ReviewRequired
    } else if by && a["approved"] == true {
        Review::Approved
    } else {
        Review::None
    }
}

/// The head pipeline's status as checks, with why when pending: none yet, or one that ran for
/// another commit than the head, is pending.
pub fn pipeline_checks(p: &Value, head: &str) -> (Checks, Option<String>) {
    if p.is_null() {
        return (Checks::Pending, Some("no pipeline for its head".into()));
    }
    if p["sha"].as_str().is_some_and(|s| !s.eq_ignore_ascii_case(head)) {
        return (Checks::Pending, Some("its pipeline ran for another commit than its head".into()));
    }
    let checks = match p["status"].as_str().unwrap_or("") {
        "success" => Checks::Passing,
        "created"
        | "waiting_for_resource"
        | "preparing"
        | "waiting_for_callback"
        | "pending"
        | "running"
        | "scheduled"
        | "manual" => Checks::Pending,
        _ => Checks::Failing,
    };
    (checks, None)
}

/// Why an open merge request cannot be merged now on GitLab, or `None`: its pipeline succeeded
/// and GitLab's `detailed_merge_status` is `mergeable`.
pub fn blocker(seen: &Seen) -> Option<String> {
    match (seen.checks, &seen.checks_why) {
        (Some(Checks::Failing), _) => return Some("pipeline failed".into()),
        (Some(Checks::Pending), Some(why)) => return Some(why.clone()),
        (Some(Checks::Pending), None) => return Some("pipeline running".into()),
        (None, _) => return Some("checks unknown".into()),
        _ => {}
    }
    let why = match seen.pr.mergeable_state.as_str() {
        "mergeable" => return None,
        "not_approved" => "review required",
        "requested_changes" => "changes requested",
        "conflict" => "conflicts with its target",
        "need_rebase" => "needs a rebase onto its target",
        "discussions_not_resolved" => "discussions not resolved",
        "draft_status" => "a draft",
        "ci_must_pass" | "ci_still_running" => "its pipeline must pass",
        "unchecked" | "checking" | "preparing" | "approvals_syncing" => {
            "mergeability unknown (GitLab is checking it; try again)"
        }
        "not_open" => "not open",
        other => return Some(format!("GitLab does not allow merging it now (`{}`)", quote(other))),
    };
    Some(why.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_request_reads_as_gitlab_describes_it() {
        let mr = |state: &str, status: &str, pipeline: Value, source: u64| {
            json!({"state": state, "detailed_merge_status": status, "head_pipeline": pipeline, "draft": false,
                "source_project_id": source, "target_project_id": 7, "source_branch": "hone/x", "sha": "abc"})
        };
        let ok = json!({"status": "success", "sha": "abc"});
        let s = seen(&mr("opened", "mergeable", ok.clone(), 7), "g/p", None);
        assert_eq!((s.checks, s.review, blocker(&s)), (Some(Checks::Passing), Some(Review::None), None));
        assert_eq!(s.pr.head_repo.as_deref(), Some("g/p"));
        let fork = seen(&mr("opened", "mergeable", Value::Null, 9), "g/p", None);
        assert_eq!((fork.pr.head_repo.as_deref(), fork.checks), (Some("project 9"), Some(Checks::Pending)));
        assert_eq!(blocker(&fork).as_deref(), Some("no pipeline for its head"));
        let s = seen(&mr("opened", "not_approved", ok.clone(), 7), "g/p", None);
        assert_eq!((s.review, blocker(&s).as_deref()), (Some(Review::ReviewRequired), Some("review required")));
        let s = seen(&mr("opened", "ci_still_running", json!({"status": "running", "sha": "abc"}), 7), "g/p", None);
        assert_eq!(blocker(&s).as_deref(), Some("pipeline running"));
        let stale = seen(&mr("opened", "mergeable", json!({"status": "success", "sha": "old"}), 7), "g/p", None);
        assert_eq!(blocker(&stale).as_deref(), Some("its pipeline ran for another commit than its head"));
        let s = seen(&mr("opened", "checking", ok.clone(), 7), "g/p", None);
        assert_eq!(s.pr.mergeable, None);
        let s = seen(&mr("merged", "not_open", Value::Null, 7), "g/p", None);
        assert!(s.pr.merged && s.checks.is_none());
        assert_eq!(pipeline_checks(&json!({"status": "canceled"}), "abc").0, Checks::Failing);
        let approved = json!({"approved": true, "approved_by": [{"user": {"id": 3}}]});
        let s = seen(&mr("opened", "mergeable", ok.clone(), 7), "g/p", Some(&approved));
        assert_eq!(s.review, Some(Review::Approved));
        let unmet = json!({"approved": false, "approved_by": [], "approvals_required": 1, "approvals_left": 1});
        assert_eq!(
            seen(&mr("opened", "mergeable", ok.clone(), 7), "g/p", Some(&unmet)).review,
            Some(Review::ReviewRequired)
        );
        let nobody = json!({"approved": false, "approved_by": []});
        assert_eq!(seen(&mr("opened", "mergeable", ok, 7), "g/p", Some(&nobody)).review, Some(Review::None));
    }
}
