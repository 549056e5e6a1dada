//! The JSON GitLab answers with: its entities (project, user, merge request, note, token) and
//! its reply shapes (`{"message": …}`, `{"error": …}`, paginated lists).

use super::params::Params;
use super::state::{Kind, Mr, Note, Project, State, TokenRecord};
use axum::body::Body;
use axum::response::Response;
use serde_json::{Value, json};

/// An API answer before it is sent (the stand-in checks its fields against the description).
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply { status, body, headers: Vec::new() }
    }

    /// `{"message": "…"}`, GitLab's shape for 401, 403, 404 and 409.
    pub fn message(status: u16, message: &str) -> Reply {
        Reply::json(status, json!({ "message": message }))
    }

    /// `{"error": "…"}`, GitLab's shape for parameter errors and unknown routes.
    pub fn error(status: u16, error: &str) -> Reply {
        Reply::json(status, json!({ "error": error }))
    }

    pub fn unauthorized() -> Reply {
        Reply::message(401, "401 Unauthorized")
    }

    pub fn into_response(self) -> Response {
        let mut r = Response::builder().status(self.status).header("content-type", "application/json");
        for (k, v) in &self.headers {
            r = r.header(k.as_str(), v.as_str());
        }
        // 204 has no body (GitLab sends none).
        let body = if self.status == 204 { String::new() } else { self.body.to_string() };
        r.body(Body::from(body)).unwrap()
    }
}

pub fn user_basic(st: &State, id: u64, base: &str) -> Value {
    let Some(u) = st.user(id) else { return Value::Null };
    json!({
        "id": u.id,
        "username": u.username,
        "name": u.username,
        "state": "active",
        "locked": false,
        "avatar_url": null,
        "web_url": format!("{base}/{}", u.username),
    })
}

/// `GET /user`: the user entity with the fields a user sees about themselves.
pub fn user_public(st: &State, id: u64, base: &str) -> Value {
    let mut v = user_basic(st, id, base);
    let Some(u) = st.user(id) else { return v };
    let extra = json!({
        "created_at": u.created_at,
        "bio": "",
        "bot": u.bot,
        "email": format!("{}@example.com", u.username),
        "public_email": null,
        "can_create_group": !u.bot,
        "can_create_project": !u.bot,
        "two_factor_enabled": false,
        "external": false,
        "private_profile": false,
    });
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn namespace(p: &Project, base: &str) -> Value {
    let (parent, _) = p.path.rsplit_once('/').unwrap_or(("", &p.path));
    json!({"id": p.id + 100_000, "name": parent, "path": parent.rsplit('/').next().unwrap_or(parent),
           "kind": "group", "full_path": parent, "web_url": format!("{base}/groups/{parent}")})
}

fn project_basic(p: &Project, base: &str) -> Value {
    let name = p.path.rsplit('/').next().unwrap_or(&p.path);
    json!({
        "id": p.id,
        "description": null,
        "name": name,
        "name_with_namespace": p.path.replace('/', " / "),
        "path": name,
        "path_with_namespace": p.path,
        "created_at": p.created_at,
        "default_branch": p.default_branch,
        "topics": p.topics,
        "http_url_to_repo": format!("{base}/{}.git", p.path),
        "ssh_url_to_repo": format!("git@localhost:{}.git", p.path),
        "web_url": format!("{base}/{}", p.path),
    })
}

/// `GET /projects/:id`, as its caller (`access`: the caller's role, 30 developer) sees it.
pub fn project(st: &State, p: &Project, base: &str, access: u64) -> Value {
    let mut v = project_basic(p, base);
    let forks = st.projects.iter().filter(|f| f.forked_from == Some(p.id)).count();
    let extra = json!({
        "visibility": "private",
        "namespace": namespace(p, base),
        "forks_count": forks,
        "forked_from_project": p.forked_from.and_then(|id| st.project_by_id(id)).map(|f| project_basic(f, base)),
        "empty_repo": false,
        "archived": p.archived,
        "merge_requests_enabled": true,
        "merge_requests_access_level": "enabled",
        "repository_access_level": "enabled",
        "ci_push_repository_for_job_token_allowed": p.job_token_push,
        "permissions": {"project_access": {"access_level": access, "notification_level": 3}, "group_access": null},
    });
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

/// The commit `branch` points at in a project's repository, if the branch exists.
pub fn branch_head(p: &Project, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}^{{commit}}")])
        .current_dir(&p.bare)
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether a title marks its merge request a draft, as GitLab reads it.
pub fn is_draft(title: &str) -> bool {
    let t = title.trim_start().to_ascii_lowercase();
    ["draft:", "[draft]", "(draft)", "draft -"].iter().any(|p| t.starts_with(p))
}

/// A merge request; `detail` adds what only `GET …/merge_requests/:iid` (and create, update) give.
pub fn merge_request(st: &State, m: &Mr, base: &str, detail: bool) -> Value {
    let target = st.project_by_id(m.project).expect("a merge request's project exists");
    let sha = st.project_by_id(m.source_project).and_then(|p| branch_head(p, &m.source_branch));
    let users = |ids: &[u64]| ids.iter().map(|id| user_basic(st, *id, base)).collect::<Vec<_>>();
    let mut v = json!({
        "id": m.id, "iid": m.iid, "project_id": m.project,
        "title": m.title, "description": m.description, "state": m.state,
        "created_at": m.created_at, "updated_at": m.updated_at,
        "merged_by": m.merged_by.map(|id| user_basic(st, id, base)),
        "merge_user": m.merged_by.map(|id| user_basic(st, id, base)), "merged_at": m.merged_at,
        "closed_by": m.closed_by.map(|id| user_basic(st, id, base)), "closed_at": m.closed_at,
        "target_branch": m.target_branch, "source_branch": m.source_branch,
        "user_notes_count": st.notes.iter().filter(|n| n.project == m.project && n.iid == m.iid).count(),
        "upvotes": 0, "downvotes": 0,
        "author": user_basic(st, m.author, base),
        "assignees": users(&m.assignees),
        "assignee": m.assignees.first().map(|id| user_basic(st, *id, base)),
        "reviewers": users(&m.reviewers),
        "source_project_id": m.source_project, "target_project_id": m.project,
        "labels": m.labels,
    });
    let status = detailed_merge_status(m);
    let more = json!({
        "draft": is_draft(&m.title), "work_in_progress": is_draft(&m.title),
        "milestone": null, "merge_when_pipeline_succeeds": false,
        "merge_status": if status == "conflict" { "cannot_be_merged" } else { "can_be_merged" },
        "detailed_merge_status": status,
        "sha": sha, "merge_commit_sha": null, "squash_commit_sha": null,
        "discussion_locked": null, "should_remove_source_branch": null,
        "force_remove_source_branch": m.remove_source_branch,
        "reference": format!("!{}", m.iid),
        "references": {"short": format!("!{}", m.iid), "full": format!("{}!{}", target.path, m.iid)},
        "web_url": format!("{base}/{}/-/merge_requests/{}", target.path, m.iid),
        "squash": m.squash, "squash_on_merge": m.squash,
        "has_conflicts": status == "conflict", "blocking_discussions_resolved": true,
    });
    v.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    if detail {
        let base_sha = branch_head(target, &m.target_branch);
        let extra = json!({
            "subscribed": true, "changes_count": null,
            "pipeline": pipeline(m, target, sha.as_deref(), base), "head_pipeline": pipeline(m, target, sha.as_deref(), base),
            "diff_refs": {"base_sha": base_sha, "head_sha": sha, "start_sha": base_sha},
            "merge_error": null, "first_contribution": false,
            "user": {"can_merge": true},
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    }
    v
}

/// `detailed_merge_status` as GitLab computes it (a project whose pipelines must succeed), or as
/// the test set it.
pub fn detailed_merge_status(m: &Mr) -> String {
    let status = match (&m.merge_status, m.state.as_str(), m.pipeline.as_deref()) {
        (Some(s), _, _) => s.as_str(),
        (None, s, _) if s != "opened" => "not_open",
        _ if is_draft(&m.title) => "draft_status",
        _ if m.approvals_required.is_some_and(|n| (m.approved_by.len() as u64) < n) => "not_approved",
        (None, _, Some("created" | "pending" | "running" | "preparing" | "waiting_for_resource")) => "ci_still_running",
        (None, _, Some("failed" | "canceled")) => "ci_must_pass",
        _ => "mergeable",
    };
    status.to_string()
}

/// The head pipeline (`API_Entities_Ci_PipelineBasic`), `null` without one.
fn pipeline(m: &Mr, target: &Project, sha: Option<&str>, base: &str) -> Value {
    let Some(status) = &m.pipeline else { return Value::Null };
    let id = 5000 + m.id;
    json!({"id": id, "iid": m.iid, "project_id": m.source_project, "sha": sha, "ref": m.source_branch,
        "status": status, "source": "merge_request_event", "created_at": m.created_at, "updated_at": m.updated_at,
        "web_url": format!("{base}/{}/-/pipelines/{id}", target.path)})
}

pub fn note(st: &State, n: &Note, base: &str) -> Value {
    let mr_id = st.mr(n.project, n.iid).map(|m| m.id);
    let mut v = json!({
        "id": n.id, "type": n.kind, "body": n.body, "attachment": null,
        "author": user_basic(st, n.author, base),
        "created_at": n.created_at, "updated_at": n.updated_at,
        "system": false, "noteable_id": mr_id, "noteable_type": "MergeRequest",
        "project_id": n.project, "noteable_iid": n.iid,
        "resolvable": n.kind.is_some(), "confidential": false, "internal": false,
        "imported": false, "imported_from": "none",
    });
    if let Some(p) = &n.position {
        v["position"] = position(p);
    }
    if n.kind.is_some() {
        v["resolved"] = n.resolved.into();
    }
    v
}

/// A note's position as GitLab shows it: every field, `null` where not given.
pub fn position(p: &Value) -> Value {
    let mut v = json!({"base_sha": null, "start_sha": null, "head_sha": null, "old_path": null, "new_path": null,
                       "position_type": "text", "old_line": null, "new_line": null, "line_range": null});
    for (k, value) in p.as_object().into_iter().flatten() {
        if v.get(k).is_some() {
            v[k] = value.clone();
        }
    }
    v
}

/// `GET /personal_access_tokens/self`.
pub fn token_self(t: &TokenRecord) -> Value {
    let name = match t.kind {
        Kind::Personal => "personal token",
        Kind::Project => "project token",
        Kind::Group => "group token",
        Kind::Job => "job token",
    };
    json!({
        "id": t.id, "name": name, "revoked": false, "created_at": t.created_at, "description": null,
        "scopes": t.scopes, "user_id": t.user, "last_used_at": t.created_at, "active": true,
        "expires_at": "2099-01-01",
    })
}

/// A list answered one page at a time, with GitLab's pagination headers (`page`, `per_page` up
/// to 100, default 20).
pub fn paginate(items: Vec<Value>, params: &Params, url: &str) -> Reply {
    let per_page = params.u64("per_page").unwrap_or(20).clamp(1, 100) as usize;
    let page = params.u64("page").unwrap_or(1).max(1) as usize;
    let total = items.len();
    let pages = total.div_ceil(per_page).max(1);
    let body: Vec<Value> = items.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    let link = |p: usize, rel: &str| format!("<{url}?page={p}&per_page={per_page}>; rel=\"{rel}\"");
    let mut links = vec![link(1, "first"), link(pages, "last")];
    let next = if page < pages {
        links.push(link(page + 1, "next"));
        (page + 1).to_string()
    } else {
        String::new()
    };
    let prev = if page > 1 {
        links.push(link(page - 1, "prev"));
        (page - 1).to_string()
    } else {
        String::new()
    };
    let mut reply = Reply::json(200, Value::Array(body));
    reply.headers = vec![
        ("x-page".into(), page.to_string()),
        ("x-per-page".into(), per_page.to_string()),
        ("x-total".into(), total.to_string()),
        ("x-total-pages".into(), pages.to_string()),
        ("x-next-page".into(), next),
        ("x-prev-page".into(), prev),
        ("link".into(), links.join(", ")),
    ];
    reply
}
