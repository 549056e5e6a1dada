//! The stand-in's answers to the operations hone uses, decided as Forgejo decides them (sources:
//! Forgejo's `routers/api/v1/repo/pull.go`, `issue_comment.go`, `branch.go`, `status.go`): one
//! open PR per head and base (409), only a comment's author edits it (403), only writers change
//! a PR or a branch (403), a merge at another head than `head_commit_id` is 409, a WIP, not
//! mergeable, unapproved or unchecked PR is 405.

use super::entities;
use super::state::{Comment, Pull, State, branch_sha};
use serde_json::{Value, json};
use std::collections::HashMap;

pub type Answer = (u16, Value);

fn msg(status: u16, m: &str) -> Answer {
    (status, json!({"message": m, "url": "https://forgejo.org/api/swagger"}))
}

/// One request of operation `id`, by user `me`, with path parameters `p`, query `q` and body `b`.
pub fn handle(
    st: &mut State,
    base: &str,
    id: &str,
    me: u64,
    p: &HashMap<String, String>,
    q: &HashMap<String, String>,
    b: &Value,
) -> Answer {
    let (page, limit) = (num(q, "page").unwrap_or(1).max(1), num(q, "limit").unwrap_or(30).clamp(1, 50));
    let paged = |all: Vec<Value>| -> Value {
        all.into_iter().skip(((page - 1) * limit) as usize).take(limit as usize).collect()
    };
    match id {
        "userGetCurrent" => (200, entities::user(st, me)),
        "orgListRepos" => {
            let org = &p["org"];
            let all: Vec<Value> = st
                .repos
                .iter()
                .filter(|r| r.full_name.split('/').next().is_some_and(|o| o.eq_ignore_ascii_case(org)))
                .map(|r| entities::repo(st, r, base))
                .collect();
            if all.is_empty() { msg(404, "GetOrgByName") } else { (200, paged(all)) }
        }
        _ => {
            let full = format!("{}/{}", p["owner"], p["repo"]);
            let Some(repo) = st.repo(&full).map(|r| r.id) else { return msg(404, "GetRepositoryByName") };
            repo_op(st, base, id, (me, repo), p, q, b, paged)
        }
    }
}

fn num(q: &HashMap<String, String>, k: &str) -> Option<u64> {
    q.get(k).and_then(|v| v.parse().ok())
}

#[allow(clippy::too_many_arguments)]
fn repo_op(
    st: &mut State,
    base: &str,
    id: &str,
    (me, repo): (u64, u64),
    p: &HashMap<String, String>,
    q: &HashMap<String, String>,
    b: &Value,
    paged: impl Fn(Vec<Value>) -> Value,
) -> Answer {
    let index = p.get("index").and_then(|i| i.parse::<u64>().ok()).unwrap_or(0);
    let writer = st.may_write(st.repo_by_id(repo).unwrap(), me);
    match id {
        "repoListPullRequests" => {
            let state = q.get("state").map_or("open", String::as_str);
            let all = st
                .pulls
                .iter()
                .filter(|x| x.repo == repo && (state == "all" || (state == "open") == x.open))
                .map(|x| entities::pull(st, x, base))
                .collect();
            (200, paged(all))
        }
        "repoCreatePullRequest" => super::pulls::create(st, base, (me, repo), b, writer),
        // A PR is an issue too, as Forgejo answers.
        "issueGetIssue" => match (st.issues.iter().find(|i| i.0 == repo && i.1 == index), st.pull(repo, index)) {
            (Some((_, n, title, body)), _) => {
                (200, json!({"number": n, "title": title, "body": body, "state": "open"}))
            }
            (None, Some(x)) => (200, json!({"number": x.number, "title": x.title, "body": x.body, "pull_request": {}})),
            (None, None) => msg(404, "GetIssueByIndex"),
        },
        "repoGetPullRequest" => match st.pull(repo, index) {
            Some(x) => (200, entities::pull(st, x, base)),
            None => msg(404, "GetPullRequestByIndex"),
        },
        "repoEditPullRequest" => super::pulls::edit(st, base, (me, repo, index), b, writer),
        "repoMergePullRequest" => super::pulls::merge(st, (me, repo, index), b, writer),
        "repoCreatePullReviewRequests" => {
            let Some(x) = st.pull(repo, index) else { return msg(404, "GetPullRequestByIndex") };
            if !writer && x.author != me {
                return msg(403, "Must be repo writer or the PR's poster");
            }
            let names: Vec<String> = strings(&b["reviewers"]);
            if let Some(n) = names.iter().find(|n| !st.users.iter().any(|u| &u.login == *n)) {
                return msg(422, &format!("user does not exist [uid: 0, name: {n}]"));
            }
            let teams = strings(&b["team_reviewers"]);
            let x = st.pull_mut(repo, index).unwrap();
            x.reviewers.extend(names);
            x.team_reviewers.extend(teams);
            (201, json!([]))
        }
        "repoListPullReviews" => {
            let all = st
                .reviews
                .iter()
                .filter(|r| r.repo == repo && r.number == index)
                .map(|r| entities::review(st, r))
                .collect();
            (200, paged(all))
        }
        "issueListLabels" => {
            let r = st.repo_by_id(repo).unwrap();
            (200, paged(r.labels.iter().map(|(id, name)| json!({"id": id, "name": name, "color": "ee0701"})).collect()))
        }
        "issueAddLabel" => {
            if !writer {
                return msg(403, "not a writer");
            }
            let ids: Vec<u64> = b["labels"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
            let known: Vec<u64> = st.repo_by_id(repo).unwrap().labels.iter().map(|l| l.0).collect();
            if ids.iter().any(|i| !known.contains(i)) {
                return msg(422, "label does not exist");
            }
            let Some(x) = st.pull_mut(repo, index) else { return msg(404, "GetIssueByIndex") };
            for i in ids {
                if !x.labels.contains(&i) {
                    x.labels.push(i);
                }
            }
            (200, json!([]))
        }
        "issueGetComments" => {
            if st.pull(repo, index).is_none() {
                return msg(404, "GetIssueByIndex");
            }
            let all = st
                .comments
                .iter()
                .filter(|c| c.repo == repo && c.number == index)
                .map(|c| entities::comment(st, c, base))
                .collect();
            (200, Value::Array(all))
        }
        "issueCreateComment" => {
            if st.pull(repo, index).is_none() {
                return msg(404, "GetIssueByIndex");
            }
            let (id, created_at) = (st.next_id(), st.now());
            let body = b["body"].as_str().unwrap_or_default().to_string();
            st.comments.push(Comment { id, repo, number: index, author: me, body, created_at });
            (201, entities::comment(st, st.comments.last().unwrap(), base))
        }
        "issueEditComment" => {
            let cid = p["id"].parse::<u64>().unwrap_or(0);
            let Some(c) = st.comments.iter_mut().find(|c| c.id == cid && c.repo == repo) else {
                return msg(404, "GetCommentByID");
            };
            if c.author != me {
                return msg(403, "user is not the comment's poster");
            }
            c.body = b["body"].as_str().unwrap_or_default().to_string();
            let c = st.comments.iter().find(|c| c.id == cid).unwrap();
            (200, entities::comment(st, c, base))
        }
        "repoGetBranch" | "repoDeleteBranch" => super::pulls::branch(st, id, (me, repo), &p["branch"], writer),
        "repoGetCombinedStatusByRef" => {
            let r = st.repo_by_id(repo).unwrap();
            let sha = branch_sha(&r.bare, &p["ref"]).unwrap_or_else(|| p["ref"].to_ascii_lowercase());
            (200, entities::combined(st, repo, &sha))
        }
        "repoGetRepoPermissions" => {
            let Some(user) = st.users.iter().find(|u| u.login == p["collaborator"]).map(|u| u.id) else {
                return msg(404, "user does not exist");
            };
            let r = st.repo_by_id(repo).unwrap();
            let permission = if st.may_write(r, user) { "write" } else { "read" };
            (200, json!({"permission": permission, "role_name": permission, "user": entities::user(st, user)}))
        }
        other => msg(500, &format!("the stand-in does not implement {other}")),
    }
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// A new PR's record.
pub fn new_pull(
    st: &mut State,
    (repo, head_repo, author): (u64, u64, u64),
    head: &str,
    base: &str,
    title: &str,
) -> Pull {
    let created_at = st.now();
    Pull {
        number: st.next_number(repo),
        repo,
        head_repo: Some(head_repo),
        head_ref: head.to_string(),
        head_sha_then: None,
        base_ref: base.to_string(),
        title: title.to_string(),
        body: String::new(),
        open: true,
        merged: false,
        merge_style: None,
        author,
        labels: vec![],
        assignees: vec![],
        reviewers: vec![],
        team_reviewers: vec![],
        mergeable: true,
        created_at,
    }
}
