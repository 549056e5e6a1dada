//! Forgejo's JSON for what the stand-in keeps, with the fields of the swagger's definitions
//! (`User`, `Repository`, `PullRequest`, `PRBranchInfo`, `Comment`, `PullReview`, `Branch`,
//! `CombinedStatus`) that hone could read.

use super::state::{Comment, Pull, Repo, Review, State, branch_sha};
use serde_json::{Value, json};

pub fn user(st: &State, id: u64) -> Value {
    let login = st.login(id);
    json!({"id": id, "login": login, "login_name": "", "full_name": "", "email": format!("{login}@noreply.localhost"),
        "is_admin": false, "active": true, "restricted": false, "visibility": "public"})
}

pub fn repo(st: &State, r: &Repo, base: &str) -> Value {
    let (owner, name) = r.full_name.split_once('/').unwrap_or_default();
    let owner_id = st.users.iter().find(|u| u.login == owner).map_or(0, |u| u.id);
    let default_branch = super::super::repo::git(&r.bare, &["symbolic-ref", "--short", "HEAD"]).trim().to_string();
    json!({"id": r.id, "name": name, "full_name": r.full_name, "owner": {"id": owner_id, "login": owner},
        "fork": r.fork_of.is_some(), "private": r.private, "internal": false, "archived": r.archived,
        "topics": r.topics, "language": "", "default_branch": default_branch, "empty": false, "mirror": false,
        "html_url": format!("{base}/{}", r.full_name), "clone_url": format!("{base}/{}.git", r.full_name),
        "url": format!("{base}/api/v1/repos/{}", r.full_name),
        "parent": r.fork_of.and_then(|id| st.repo_by_id(id)).map(|p| json!({"id": p.id, "full_name": p.full_name}))})
}

/// The head commit of a PR now: its branch's while it is open, the one it had when it ended.
pub fn head_sha(st: &State, p: &Pull) -> String {
    if let Some(sha) = &p.head_sha_then {
        return sha.clone();
    }
    p.head_repo.and_then(|id| st.repo_by_id(id)).and_then(|r| branch_sha(&r.bare, &p.head_ref)).unwrap_or_default()
}

fn branch_info(st: &State, repo: Option<&Repo>, branch: &str, sha: String, base: &str) -> Value {
    let label = repo.map_or(branch.to_string(), |r| format!("{}:{branch}", r.full_name.split('/').next().unwrap()));
    json!({"label": label, "ref": branch, "sha": sha, "repo_id": repo.map_or(0, |r| r.id),
        "repo": repo.map(|r| self::repo(st, r, base))})
}

pub fn pull(st: &State, p: &Pull, base: &str) -> Value {
    let target = st.repo_by_id(p.repo).expect("a PR's repository");
    let head_repo = p.head_repo.and_then(|id| st.repo_by_id(id));
    let base_sha = branch_sha(&target.bare, &p.base_ref).unwrap_or_default();
    let labels: Vec<Value> = target
        .labels
        .iter()
        .filter(|(id, _)| p.labels.contains(id))
        .map(|(id, name)| json!({"id": id, "name": name, "color": "ee0701"}))
        .collect();
    let html = format!("{base}/{}/pulls/{}", target.full_name, p.number);
    let upper = p.title.to_ascii_uppercase();
    let draft = upper.starts_with("WIP:") || upper.starts_with("[WIP]");
    json!({"id": p.repo * 1000 + p.number, "number": p.number, "title": p.title, "body": p.body,
        "state": if p.open { "open" } else { "closed" }, "merged": p.merged, "draft": draft,
        "mergeable": p.mergeable, "user": user(st, p.author), "labels": labels,
        "assignees": p.assignees.iter().map(|a| json!({"login": a})).collect::<Vec<_>>(),
        "requested_reviewers": p.reviewers.iter().map(|a| json!({"login": a})).collect::<Vec<_>>(),
        "html_url": html, "url": html, "diff_url": format!("{html}.diff"), "patch_url": format!("{html}.patch"),
        "created_at": p.created_at, "updated_at": p.created_at,
        "head": branch_info(st, head_repo, &p.head_ref, head_sha(st, p), base),
        "base": branch_info(st, Some(target), &p.base_ref, base_sha, base)})
}

pub fn comment(st: &State, c: &Comment, base: &str) -> Value {
    let full = &st.repo_by_id(c.repo).expect("a comment's repository").full_name;
    json!({"id": c.id, "body": c.body, "user": user(st, c.author), "created_at": c.created_at,
        "updated_at": c.created_at, "html_url": format!("{base}/{full}/pulls/{}#issuecomment-{}", c.number, c.id),
        "issue_url": format!("{base}/{full}/issues/{}", c.number), "pull_request_url": format!("{base}/{full}/pulls/{}", c.number)})
}

pub fn review(st: &State, r: &Review) -> Value {
    json!({"id": r.id, "user": user(st, r.user), "state": r.state, "body": r.body, "official": r.official,
        "stale": false, "dismissed": false, "submitted_at": r.submitted_at, "commit_id": ""})
}

pub fn branch(r: &Repo, name: &str, sha: &str) -> Value {
    let prot = r.protections.iter().find(|(b, _, _)| b == name);
    json!({"name": name, "commit": {"id": sha, "message": ""}, "protected": prot.is_some(),
        "required_approvals": prot.map_or(0, |p| p.1), "enable_status_check": prot.is_some_and(|p| !p.2.is_empty()),
        "status_check_contexts": prot.map(|p| p.2.clone()).unwrap_or_default(),
        "user_can_push": true, "user_can_merge": true})
}

/// Forgejo's combined state: failure or error wins, then pending, then success; none: "".
pub fn combined(st: &State, repo: u64, sha: &str) -> Value {
    let statuses: Vec<Value> = st
        .statuses
        .iter()
        .filter(|s| s.repo == repo && s.sha == sha)
        .map(|s| json!({"context": s.context, "status": s.state, "description": "", "target_url": ""}))
        .collect();
    let has = |x: &str| statuses.iter().any(|s| s["status"] == x);
    let state = if statuses.is_empty() {
        ""
    } else if has("error") || has("failure") {
        "failure"
    } else if has("pending") {
        "pending"
    } else {
        "success"
    };
    json!({"state": state, "sha": sha, "total_count": statuses.len(), "statuses": statuses})
}
