//! Creating, editing and merging pull requests, and branches, as Forgejo does.

use super::api::{Answer, new_pull, strings};
use super::entities;
use super::state::{State, branch_sha};
use serde_json::{Value, json};

fn msg(status: u16, m: &str) -> Answer {
    (status, json!({"message": m, "url": "https://forgejo.org/api/swagger"}))
}

/// `POST /repos/{o}/{r}/pulls`: head `branch` or `owner:branch` (a fork of the repository).
pub fn create(st: &mut State, base_url: &str, (me, repo): (u64, u64), b: &Value, writer: bool) -> Answer {
    let (Some(head), Some(base), Some(title)) = (b["head"].as_str(), b["base"].as_str(), b["title"].as_str()) else {
        return msg(422, "[Head]: Required; [Base]: Required; [Title]: Required");
    };
    let target = st.repo_by_id(repo).unwrap();
    let (head_repo, head_ref) = match head.split_once(':') {
        Some((owner, branch)) => {
            let name = target.full_name.split('/').nth(1).unwrap_or_default();
            match st.repo(&format!("{owner}/{name}")) {
                Some(r) => (r.id, branch.to_string()),
                None => return msg(404, "GetRepositoryByOwnerAndName"),
            }
        }
        None => (repo, head.to_string()),
    };
    let head_bare = st.repo_by_id(head_repo).unwrap().bare.clone();
    if branch_sha(&head_bare, &head_ref).is_none() || branch_sha(&target.bare, base).is_none() {
        return msg(404, "GetBranch");
    }
    if head_repo == repo && !writer {
        return msg(403, "user should have permission to write to the target branch");
    }
    let dup = st.pulls.iter().find(|p| {
        p.open && p.repo == repo && p.head_repo == Some(head_repo) && p.head_ref == head_ref && p.base_ref == base
    });
    if let Some(p) = dup {
        return msg(
            409,
            &format!(
                "pull request already exists for these targets [id: {}, issue_id: {}, head_repo_id: {head_repo}, base_repo_id: {repo}, head_branch: {head_ref}, base_branch: {base}]",
                p.number, p.number
            ),
        );
    }
    let labels: Vec<u64> = b["labels"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
    if labels.iter().any(|l| !target.labels.iter().any(|(id, _)| id == l)) {
        return msg(422, "label does not exist");
    }
    let assignees = strings(&b["assignees"]);
    if let Some(a) = assignees.iter().find(|a| !st.users.iter().any(|u| &u.login == *a)) {
        return msg(422, &format!("user does not exist [name: {a}]"));
    }
    let mut p = new_pull(st, (repo, head_repo, me), &head_ref, base, title);
    p.body = b["body"].as_str().unwrap_or_default().to_string();
    (p.labels, p.assignees) = (labels, assignees);
    st.pulls.push(p);
    (201, entities::pull(st, st.pulls.last().unwrap(), base_url))
}

/// `PATCH /repos/{o}/{r}/pulls/{index}`: its poster or a writer; `state` closes or reopens.
pub fn edit(st: &mut State, base_url: &str, (me, repo, index): (u64, u64, u64), b: &Value, writer: bool) -> Answer {
    let Some(p) = st.pull(repo, index) else { return msg(404, "GetPullRequestByIndex") };
    if !writer && p.author != me {
        return msg(403, "Must be repo writer or the PR's poster");
    }
    let sha = entities::head_sha(st, p);
    let p = st.pull_mut(repo, index).unwrap();
    if let Some(t) = b["title"].as_str() {
        p.title = t.to_string();
    }
    if let Some(t) = b["body"].as_str() {
        p.body = t.to_string();
    }
    if b["labels"].is_array() {
        p.labels = b["labels"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
    }
    match b["state"].as_str() {
        Some("closed") if p.open && !p.merged => (p.open, p.head_sha_then) = (false, Some(sha)),
        Some("open") if !p.open && !p.merged => (p.open, p.head_sha_then) = (true, None),
        _ => {}
    }
    let p = st.pull(repo, index).unwrap();
    (201, entities::pull(st, p, base_url))
}

/// `POST /repos/{o}/{r}/pulls/{index}/merge`.
pub fn merge(st: &mut State, (me, repo, index): (u64, u64, u64), b: &Value, writer: bool) -> Answer {
    let Some(p) = st.pull(repo, index) else { return msg(404, "GetPullRequestByIndex") };
    if !writer {
        return msg(405, "User not allowed to merge PR");
    }
    if p.merged || !p.open {
        return msg(405, "The PR is already merged or closed");
    }
    let upper = p.title.to_ascii_uppercase();
    if upper.starts_with("WIP:") || upper.starts_with("[WIP]") {
        return msg(405, "The PR is a work in progress");
    }
    let sha = entities::head_sha(st, p);
    if let Some(want) = b["head_commit_id"].as_str().filter(|s| !s.is_empty())
        && want != sha
    {
        return msg(409, "head out of date");
    }
    if !p.mergeable {
        return msg(405, "Please try again later");
    }
    let target = st.repo_by_id(repo).unwrap();
    if let Some((_, approvals, contexts)) = target.protections.iter().find(|(b, _, _)| *b == p.base_ref) {
        let approved = st
            .reviews
            .iter()
            .filter(|r| r.repo == repo && r.number == index && r.official && r.state == "APPROVED")
            .count() as u64;
        let combined = entities::combined(st, repo, &sha);
        let ok = |c: &String| {
            combined["statuses"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["context"] == c.as_str() && s["status"] == "success")
        };
        if approved < *approvals || !contexts.iter().all(ok) {
            return msg(405, "Not all required status checks successful, or not enough approvals");
        }
    }
    let _ = me;
    let p = st.pull_mut(repo, index).unwrap();
    (p.merged, p.open, p.head_sha_then, p.merge_style) = (true, false, Some(sha), b["Do"].as_str().map(str::to_string));
    (200, Value::Null)
}

/// `GET` or `DELETE /repos/{o}/{r}/branches/{branch}`: the default branch and protected ones are
/// never deleted (403); a branch an open PR's head is on is deleted as Forgejo allows.
pub fn branch(st: &mut State, id: &str, (_me, repo): (u64, u64), name: &str, writer: bool) -> Answer {
    let r = st.repo_by_id(repo).unwrap();
    let Some(sha) = branch_sha(&r.bare, name) else { return msg(404, "branch does not exist") };
    if id == "repoGetBranch" {
        return (200, entities::branch(r, name, &sha));
    }
    let default = super::super::repo::git(&r.bare, &["symbolic-ref", "--short", "HEAD"]);
    if !writer || default.trim() == name || r.protections.iter().any(|(b, _, _)| b == name) {
        return msg(403, "can not delete default or protected branch");
    }
    super::super::repo::git(&r.bare, &["update-ref", "-d", &format!("refs/heads/{name}")]);
    (204, Value::Null)
}
