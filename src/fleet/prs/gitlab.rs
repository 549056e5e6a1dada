//! The GitLab requests `hone fleet prs` makes for one merge request: read it (state, head,
//! pipeline and merge status in one answer), add a note, close it, delete its source branch,
//! merge it at the head it read. Every path is made from the fleet file's project and
//! fleet.json's merge request number and branch, encoded; nothing in an answer names where the
//! next request goes.

use super::github::{Merged, Pr, quote};
use super::report::{Checks, Review};
use super::status::Seen;
use crate::error::{Code, HoneError, Result};
use crate::forge::github::encode;
use crate::forge::gitlab::{Answer, GitLab};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// One project's client, counting the requests it makes.
pub struct Api<'a> {
    pub gl: GitLab,
    pub sent: &'a AtomicU64,
}

fn failed(what: &str, a: &Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&a.message())))
}

impl Api<'_> {
    fn count(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    fn mr_path(&self, n: u64, rest: &str) -> String {
        self.gl.project_path(&format!("/merge_requests/{n}{rest}"))
    }

    /// Merge request `n` with its head pipeline and merge status: one request.
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        self.count();
        let a = self.gl.get(&self.mr_path(n, "")).await?;
        if !a.ok() {
            return Err(failed(&format!("reading merge request !{n}"), &a));
        }
        Ok(seen(&a.body, &self.gl.project))
    }

    /// A note on merge request `n`.
    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        self.count();
        let a = self.gl.post(&self.mr_path(n, "/notes"), &json!({"body": body})).await?;
        if !a.ok() {
            return Err(failed(&format!("adding a note to merge request !{n}"), &a));
        }
        Ok(())
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        self.count();
        let a = self.gl.put(&self.mr_path(n, ""), &json!({"state_event": "close"})).await?;
        if !a.ok() {
            return Err(failed(&format!("closing merge request !{n}"), &a));
        }
        Ok(())
    }

    /// Delete the project's branch `branch` (encoded as one segment). A branch already gone
    /// (404) is fine.
    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        self.count();
        let a = self.gl.delete(&self.gl.project_path(&format!("/repository/branches/{}", encode(branch)))).await?;
        match a.status {
            200 | 204 => Ok(true),
            404 => Ok(false),
            _ => Err(failed(&format!("deleting the branch {branch}"), &a)),
        }
    }

    /// Merge request `n` merged if its head is still `sha`, never forced: GitLab checks its own
    /// rules again (405 not mergeable, 409 the head moved, 422 cannot be merged).
    pub async fn merge(&self, n: u64, sha: &str, squash: bool) -> Result<Merged> {
        self.count();
        let mut body = json!({"sha": sha});
        if squash {
            body["squash"] = json!(true);
        }
        let a = self.gl.put(&self.mr_path(n, "/merge"), &body).await?;
        match a.status {
            200 if a.body["state"] == "merged" => Ok(Merged::Merged),
            200 | 405 | 406 | 409 | 422 => Ok(Merged::Refused(a.status, lab_message(&a))),
            _ => Err(failed(&format!("merging merge request !{n}"), &a)),
        }
    }
}

/// GitLab's message in an answer, quoted safely.
fn lab_message(a: &Answer) -> String {
    let m = a.message();
    let prefix = format!("HTTP {}: ", a.status);
    quote(m.strip_prefix(&prefix).unwrap_or(&m))
}

/// What a merge request's answer says, in the shape the GitHub reading has. The head is this
/// project's only when GitLab names the same project as source and target (never a fork's).
pub fn seen(b: &Value, project: &str) -> Seen {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let state = s(&b["state"]);
    let status = s(&b["detailed_merge_status"]);
    let same = b["source_project_id"].as_u64().is_some() && b["source_project_id"] == b["target_project_id"];
    let pr = Pr {
        url: s(&b["web_url"]),
        state: if matches!(state.as_str(), "opened" | "locked") { "open".into() } else { "closed".into() },
        merged: state == "merged",
        draft: b["draft"].as_bool().unwrap_or(false) || b["work_in_progress"].as_bool().unwrap_or(false),
        head_sha: s(&b["sha"]),
        head_ref: s(&b["source_branch"]),
        head_repo: same.then(|| project.to_string()),
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
    Seen {
        checks: open.then(|| pipeline_checks(&b["head_pipeline"])),
        review: open.then_some(match status.as_str() {
            "not_approved" => Review::ReviewRequired,
            "requested_changes" => Review::ChangesRequested,
            _ => Review::None,
        }),
        rules: None,
        gitlab: true,
        pr,
    }
}

/// The head pipeline's status as checks: none without a pipeline.
pub fn pipeline_checks(p: &Value) -> Checks {
    if p.is_null() {
        return Checks::None;
    }
    match p["status"].as_str().unwrap_or("") {
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
    }
}

/// Why an open merge request cannot be merged now on GitLab, or `None`: its pipeline succeeded
/// and GitLab's `detailed_merge_status` is `mergeable`.
pub fn blocker(seen: &Seen) -> Option<String> {
    match seen.checks {
        Some(Checks::Failing) => return Some("pipeline failed".into()),
        Some(Checks::Pending) => return Some("pipeline running".into()),
        Some(Checks::None) => return Some("no pipeline for its head".into()),
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

    #[test]
    fn a_merge_request_reads_as_gitlab_describes_it() {
        let mr = |state: &str, status: &str, pipeline: Value, source: u64| {
            json!({"state": state, "detailed_merge_status": status, "head_pipeline": pipeline, "draft": false,
                "source_project_id": source, "target_project_id": 7, "source_branch": "hone/x", "sha": "abc"})
        };
        let s = seen(&mr("opened", "mergeable", json!({"status": "success"}), 7), "g/p");
        assert_eq!((s.checks, s.review, blocker(&s)), (Some(Checks::Passing), Some(Review::None), None));
        assert_eq!(s.pr.head_repo.as_deref(), Some("g/p"));
        let fork = seen(&mr("opened", "mergeable", Value::Null, 9), "g/p");
        assert_eq!((fork.pr.head_repo, fork.checks), (None, Some(Checks::None)));
        let s = seen(&mr("opened", "not_approved", json!({"status": "success"}), 7), "g/p");
        assert_eq!((s.review, blocker(&s).as_deref()), (Some(Review::ReviewRequired), Some("review required")));
        let s = seen(&mr("opened", "ci_still_running", json!({"status": "running"}), 7), "g/p");
        assert_eq!(blocker(&s).as_deref(), Some("pipeline running"));
        let s = seen(&mr("opened", "checking", json!({"status": "success"}), 7), "g/p");
        assert_eq!(s.pr.mergeable, None);
        let s = seen(&mr("merged", "not_open", Value::Null, 7), "g/p");
        assert!(s.pr.merged && s.checks.is_none());
        assert_eq!(pipeline_checks(&json!({"status": "canceled"})), Checks::Failing);
    }
}
