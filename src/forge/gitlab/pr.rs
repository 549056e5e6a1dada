//! The run's merge request on GitLab: found by its source branch in this project (never one
//! from a fork), created or updated (title, description, labels, assignees, reviewers, draft as
//! GitLab writes it: a `Draft:` title), or closed when the run changed nothing.

use super::{Answer, GitLab};
use crate::error::{Code, HoneError, Result};
use crate::forge::{PrOperation, PrReport, PrRequest};
use crate::spec::Job;
use serde_json::{Value, json};

/// An open merge request of the project's own branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mr {
    pub iid: u64,
    pub url: String,
}

/// The open merge request from `branch` of this project itself, if there is one.
pub async fn find_open(gl: &GitLab, branch: &str) -> Result<Option<Mr>> {
    // At most 100: forks' merge requests from a branch of the same name are listed too.
    let query =
        format!("/merge_requests?state=opened&per_page=100&source_branch={}", crate::forge::github::encode(branch));
    let a = gl.get(&gl.project_path(&query)).await?;
    if !a.ok() {
        return Err(not_found_hint(
            HoneError::new(Code::Forge, format!("listing merge requests of `{}` failed: {}", gl.project, a.message())),
            &a,
        ));
    }
    Ok(own_open(&a.body))
}

/// The first merge request in a list whose source is the target project (not a fork's branch
/// of the same name).
fn own_open(list: &Value) -> Option<Mr> {
    list.as_array()?.iter().find_map(|m| {
        let own = m["source_project_id"].as_u64().is_some() && m["source_project_id"] == m["target_project_id"];
        let iid = m["iid"].as_u64().filter(|_| own)?;
        Some(Mr { iid, url: m["web_url"].as_str().unwrap_or_default().to_string() })
    })
}

/// The title GitLab shows as a draft: `Draft: ` before it.
pub fn draft_title(title: &str, draft: bool) -> String {
    if draft { format!("Draft: {title}") } else { title.to_string() }
}

/// The user ids of `usernames` (assignees and reviewers are ids on GitLab); unknown names are
/// warned about and left out.
async fn user_ids(gl: &GitLab, usernames: &[String], out: &mut PrReport) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for name in usernames {
        let a = gl.get(&format!("/users?username={}", crate::forge::github::encode(name))).await?;
        match a.body.as_array().and_then(|l| l.first()).and_then(|u| u["id"].as_u64()) {
            Some(id) if a.ok() => ids.push(id),
            _ => out.warnings.push(format!("GitLab has no user `{name}`: not assigned or asked to review")),
        }
    }
    Ok(ids)
}

/// The merge request (or, in autofix, the note) on GitLab.
pub async fn ship(s: &crate::forge::Ship<'_>, req: &PrRequest, out: &mut PrReport) -> Result<()> {
    let gl = GitLab::new(s.place, s.shared.queue.clone(), s.bound)?;
    // The job token cannot write merge requests or notes: where the job did not insist on a
    // merge request (`pr.enabled: auto`, autofix), the push is the result and hone says why
    // nothing more was done; with `pr.enabled: true` GitLab's refusal is the error.
    if gl.job_token() && (s.autofix.is_some() || s.job.pr.enabled == crate::spec::PrEnabled::Auto) {
        let what = if s.autofix.is_some() { "note on the merge request" } else { "merge request" };
        out.warnings.push(format!(
            "{} cannot write a {what}: put a project access token with the `api` scope in GITLAB_TOKEN for it",
            crate::forge::place::CI_JOB_TOKEN
        ));
        if let Some(t) = s.autofix {
            (out.number, out.operation) = (Some(t.number), crate::forge::pushed_op(out.pushed));
        }
        return Ok(());
    }
    let result = match s.autofix {
        Some(t) => {
            let text = crate::forge::fixed_in_place(t, req, out);
            super::autofix::upsert_note(&gl, t.number, &s.job.name, &text).await.map(|u| out.url = u)
        }
        None => publish(&gl, s.job, &s.base_branch, req, s.partial_ref.is_some(), out).await,
    };
    out.retries = gl.retries.load(std::sync::atomic::Ordering::Relaxed);
    result
}

/// Open or update the run's merge request (or close a stale one when nothing changed).
pub async fn publish(
    gl: &GitLab,
    job: &Job,
    base: &str,
    req: &PrRequest,
    draft: bool,
    out: &mut PrReport,
) -> Result<()> {
    let pr = &job.pr;
    let branch = &job.git.branch;
    let existing = find_open(gl, branch).await?;
    if !req.changed {
        if let (Some(mr), true) = (&existing, pr.close_if_empty) {
            let a = gl
                .put(&gl.project_path(&format!("/merge_requests/{}", mr.iid)), &json!({"state_event": "close"}))
                .await?;
            check(&a, || format!("closing merge request !{}", mr.iid))?;
            (out.operation, out.number, out.url) = (PrOperation::Closed, Some(mr.iid), Some(mr.url.clone()));
        }
        return Ok(());
    }
    if !pr.team_reviewers.is_empty() {
        out.warnings.push(
            "`pr.team_reviewers` is a GitHub setting: GitLab has no team reviewers, so they were not asked".into(),
        );
    }
    let title = draft_title(&req.title, pr.draft || draft);
    let mut fields = json!({"title": title, "description": req.body});
    if !pr.labels.is_empty() {
        fields["labels"] = json!(pr.labels.join(","));
    }
    let mr = match existing {
        Some(mr) => update(gl, job, mr, &fields, out).await?,
        None => {
            // Assignees and reviewers are set when hone opens it; later runs leave whoever
            // people chose since.
            let mut create = fields.clone();
            create["source_branch"] = json!(branch);
            create["target_branch"] = json!(base);
            create["remove_source_branch"] = json!(true);
            if !pr.assignees.is_empty() {
                create["assignee_ids"] = json!(user_ids(gl, &pr.assignees, out).await?);
            }
            if !pr.reviewers.is_empty() {
                create["reviewer_ids"] = json!(user_ids(gl, &pr.reviewers, out).await?);
            }
            let a = gl.post(&gl.project_path("/merge_requests"), &create).await?;
            if a.status == 409 {
                // Opened meanwhile (another run): update that one.
                let mr = find_open(gl, branch).await?.ok_or_else(|| {
                    HoneError::new(
                        Code::Forge,
                        format!("GitLab says a merge request exists, but none is open for the branch: {}", a.message()),
                    )
                })?;
                update(gl, job, mr, &fields, out).await?
            } else {
                check(&a, || "creating the merge request".to_string())?;
                out.operation = PrOperation::Created;
                let iid = a.body["iid"]
                    .as_u64()
                    .ok_or_else(|| HoneError::new(Code::Forge, "GitLab answered without a merge request iid"))?;
                Mr { iid, url: a.body["web_url"].as_str().unwrap_or_default().to_string() }
            }
        }
    };
    (out.number, out.url) = (Some(mr.iid), Some(mr.url));
    Ok(())
}

/// Update `mr` with `fields` (unless `pr.update_existing: false`); labels are added, never
/// replacing those people gave it.
async fn update(gl: &GitLab, job: &Job, mr: Mr, fields: &Value, out: &mut PrReport) -> Result<Mr> {
    out.operation = PrOperation::Updated;
    if job.pr.update_existing {
        let mut fields = fields.clone();
        if let Some(labels) = fields.as_object_mut().and_then(|f| f.remove("labels")) {
            fields["add_labels"] = labels;
        }
        let a = gl.put(&gl.project_path(&format!("/merge_requests/{}", mr.iid)), &fields).await?;
        check(&a, || format!("updating merge request !{}", mr.iid))?;
    }
    Ok(mr)
}

/// `e`, with what to check when GitLab said 404 (no such project, or not one the token's user
/// may see: GitLab answers both alike).
pub fn not_found_hint(e: HoneError, a: &Answer) -> HoneError {
    if a.status != 404 {
        return e;
    }
    e.hint("check the project's path (the remote's URL, or CI_PROJECT_PATH), the server (`forge.url` or CI_SERVER_URL), and that the token's user is a member of the project")
}

/// An error unless GitLab answered with success.
pub fn check(a: &Answer, what: impl FnOnce() -> String) -> Result<()> {
    if a.ok() {
        return Ok(());
    }
    Err(not_found_hint(HoneError::new(Code::Forge, format!("{} failed: {}", what(), a.message())), a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_projects_own_branch_is_its_merge_request() {
        let list = json!([
            {"iid": 3, "source_project_id": 99, "target_project_id": 7, "web_url": "https://g/fork"},
            {"iid": 4, "source_project_id": 7, "target_project_id": 7, "web_url": "https://g/own"},
        ]);
        assert_eq!(own_open(&list), Some(Mr { iid: 4, url: "https://g/own".into() }));
        assert_eq!(own_open(&json!([{"iid": 3, "target_project_id": 7}])), None);
        assert_eq!(own_open(&json!({"message": "x"})), None);
    }

    #[test]
    fn drafts_are_titles() {
        assert_eq!(draft_title("hone: fix", true), "Draft: hone: fix");
        assert_eq!(draft_title("hone: fix", false), "hone: fix");
    }
}
