//! The stand-in's answers, as GitHub gives them: pull requests, checks, statuses, reviews,
//! rules, comments, refs, merges and the merge queue, each with the rate-limit headers.

use super::{LOGIN, Limit, MockPr, MockRepo, Seen, State, TOKEN};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as With;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

type Shared = Arc<State>;

pub fn routes() -> Router<Shared> {
    Router::new().fallback(handle)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

const LIMIT: usize = 5000;

/// An answer with GitHub's rate-limit headers (`used` from the requests so far).
pub fn answer(status: u16, body: Value, used: usize, resource: &str) -> Response {
    let mut r = (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    let h = r.headers_mut();
    let reset = now() + 3600 - now() % 3600;
    let mut set = |k: &'static str, v: String| {
        h.insert(k, HeaderValue::from_str(&v).unwrap());
    };
    set("x-ratelimit-limit", LIMIT.to_string());
    set("x-ratelimit-remaining", LIMIT.saturating_sub(used).to_string());
    set("x-ratelimit-used", used.to_string());
    set("x-ratelimit-reset", reset.to_string());
    set("x-ratelimit-resource", resource.to_string());
    r
}

fn message(status: u16, m: &str, used: usize) -> Response {
    answer(
        status,
        json!({"message": m, "documentation_url": "https://docs.github.com/rest", "status": status.to_string()}),
        used,
        "core",
    )
}

/// The rate limit to answer with for a request that arrived at `arrived` (unix seconds, the
/// instant recorded in `seen`, so a test comparing the two never sees a request straddle a reset).
fn limited(s: &State, n: usize, arrived: u64) -> Option<Response> {
    let limit = *s.limit.lock().unwrap();
    let mut until = s.limited_until.lock().unwrap();
    if let Some(u) = *until {
        if arrived < u {
            return Some(primary(s, u, n));
        }
        *until = None;
        *s.limit.lock().unwrap() = None;
        return None;
    }
    match limit {
        Some(Limit::Primary { at, secs }) if n >= at => {
            let u = arrived + secs;
            *until = Some(u);
            Some(primary(s, u, n))
        }
        Some(Limit::Secondary { at, secs }) if n >= at => {
            *s.limit.lock().unwrap() = None;
            s.limited.lock().unwrap().push((secs, "secondary".into()));
            let mut r = message(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                n,
            );
            r.headers_mut().insert("retry-after", HeaderValue::from_str(&secs.to_string()).unwrap());
            Some(r)
        }
        _ => None,
    }
}

fn primary(s: &State, until: u64, n: usize) -> Response {
    s.limited.lock().unwrap().push((until, "primary".into()));
    let mut r = message(403, "API rate limit exceeded for installation.", n);
    let h = r.headers_mut();
    h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
    h.insert("x-ratelimit-reset", HeaderValue::from_str(&until.to_string()).unwrap());
    r
}

async fn handle(With(s): With<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorized = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"));
    // Arrival and the rate-limit decision happen under one lock, at one instant: the order and
    // times in `seen` are exactly the ones the limit was judged by.
    let (n, limit) = {
        let mut seen = s.seen.lock().unwrap();
        seen.push(Seen {
            method: method.to_string(),
            path: format!("{path}{}", uri.query().map(|q| format!("?{q}")).unwrap_or_default()),
            body: body.clone(),
            at: SystemTime::now(),
        });
        let (n, arrived) = (seen.len(), seen[seen.len() - 1].at_unix());
        (n, if authorized { limited(&s, n, arrived) } else { None })
    };
    if !authorized {
        s.refused.lock().unwrap().push(format!("{method} {path} without the token"));
        return message(401, "Bad credentials", n);
    }
    if let Some(r) = limit {
        return r;
    }
    if method == Method::POST && path == "/graphql" {
        return super::graphql::answer_graphql(&s, &body, n);
    }
    if method == Method::GET && path == "/user" {
        if s.installation.lock().unwrap().is_some() {
            // An installation token (an App's, as `GITHUB_TOKEN` is) may not read `/user`.
            return message(403, "Resource not accessible by integration", n);
        }
        return answer(200, json!({"login": LOGIN, "id": 1001, "type": "User", "site_admin": false}), n, "core");
    }
    let segs: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned())
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let ["repos", owner, name, rest @ ..] = segs.as_slice() else {
        s.refused.lock().unwrap().push(format!("{method} {path}: not an endpoint hone uses"));
        return message(404, "Not Found", n);
    };
    let full = format!("{owner}/{name}");
    if let ("GET", ["pulls", pr]) = (method.as_str(), rest) {
        let held = s.hold.lock().unwrap().clone() == Some(format!("{}#{pr}", full.to_lowercase()));
        if held {
            s.held.notify_one();
            std::future::pending::<()>().await;
        }
    }
    let mut repos = s.repos.lock().unwrap();
    let repo = repos.entry(full.to_lowercase()).or_default();
    let (status, out) = repo_route(repo, &full, method.as_str(), rest, &body, uri.query().unwrap_or(""));
    if let ("GET", ["pulls", pr]) = (method.as_str(), rest) {
        let mut moving = s.move_after_read.lock().unwrap();
        if moving.as_deref() == Some(&format!("{}#{pr}", full.to_lowercase())) {
            *moving = None;
            if let Some(b) = pr.parse().ok().and_then(|n: u64| repo.prs.get(&n)).map(|p| p.head_ref.clone()) {
                repo.push(&b, &"f".repeat(40));
            }
        }
    }
    if status == 599 {
        drop(repos);
        s.refused.lock().unwrap().push(format!("{method} {path}: not an endpoint hone uses"));
        return message(404, "Not Found", n);
    }
    answer(status, out, n, "core")
}

fn msg(m: &str) -> Value {
    json!({"message": m, "documentation_url": "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"})
}

/// A user as GitHub's answers embed it.
fn user(login: &str) -> Value {
    let kind = if login.ends_with("[bot]") { "Bot" } else { "User" };
    json!({"login": login, "id": login.len() as u64 * 1000 + 7, "type": kind, "site_admin": false})
}

/// A repository as a PR's `head.repo` and `base.repo` give it.
fn repo_json(full: &str) -> Value {
    let (owner, name) = full.split_once('/').unwrap_or((full, full));
    json!({"id": full.len() as u64 * 100 + 3, "name": name, "full_name": full, "owner": user(owner),
        "private": true, "fork": false, "html_url": format!("https://github.example/{full}")})
}

/// GitHub's JSON for a PR of `full`.
fn pr_json(full: &str, p: &MockPr) -> Value {
    let head_repo = p.head_repo.clone().unwrap_or_else(|| full.to_string());
    let head_owner = head_repo.split('/').next().unwrap_or("").to_string();
    let base_owner = full.split('/').next().unwrap_or("");
    json!({
        "url": format!("https://api.github.example/repos/{full}/pulls/{}", p.number),
        "html_url": format!("https://github.example/{full}/pull/{}", p.number),
        "node_id": format!("PR_node{}", p.number),
        "number": p.number,
        "state": p.state,
        "draft": p.draft,
        "merged": p.merged,
        "merged_at": if p.merged { json!("2026-01-02T00:00:00Z") } else { Value::Null },
        "mergeable": p.mergeable,
        "mergeable_state": p.mergeable_state,
        "created_at": p.created_at,
        "user": user(&p.author),
        "author_association": "MEMBER",
        "head": {"label": format!("{head_owner}:{}", p.head_ref), "ref": p.head_ref, "sha": p.head_sha,
            "user": user(&head_owner), "repo": repo_json(&head_repo)},
        "base": {"label": format!("{base_owner}:{}", p.base_ref), "ref": p.base_ref, "sha": "b".repeat(40),
            "user": user(base_owner), "repo": repo_json(full)},
    })
}

/// Whether a review's `author_association` is one of a user with write access (the stand-in's
/// model of it: an owner, a member of the organisation, a collaborator).
pub fn writer(association: &str) -> bool {
    matches!(association, "OWNER" | "MEMBER" | "COLLABORATOR")
}

/// The latest approving or change-requesting review of each writer: (approvals, changes requested).
pub fn writers_verdict(p: &MockPr) -> (u64, bool) {
    let mut latest = std::collections::BTreeMap::new();
    for (who, state, assoc) in &p.reviews {
        if writer(assoc) && matches!(state.as_str(), "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED") {
            latest.insert(who.as_str(), state.as_str());
        }
    }
    (latest.values().filter(|s| **s == "APPROVED").count() as u64, latest.values().any(|s| *s == "CHANGES_REQUESTED"))
}

fn repo_route(r: &mut MockRepo, full: &str, m: &str, rest: &[&str], body: &Value, query: &str) -> (u16, Value) {
    let num = |s: &str| s.parse::<u64>().ok();
    match (m, rest) {
        ("GET", ["pulls"]) => {
            let head = query.split('&').find_map(|kv| kv.strip_prefix("head=")).unwrap_or("");
            let head = percent_encoding::percent_decode_str(head).decode_utf8_lossy().into_owned();
            // GitHub's `state`: open (the default), closed or all.
            let state = query.split('&').find_map(|kv| kv.strip_prefix("state=")).unwrap_or("open");
            let mut list: Vec<&MockPr> = r
                .prs
                .values()
                .filter(|p| state == "all" || p.state == state)
                .filter(|p| format!("{}:{}", full.split('/').next().unwrap(), p.head_ref) == head)
                .collect();
            list.sort_by(|a, b| b.created_at.cmp(&a.created_at));
            (200, page_of(json!(list.iter().map(|p| pr_json(full, p)).collect::<Vec<_>>()), query))
        }
        ("POST", ["pulls"]) => {
            // GitHub keeps one open PR per head and base.
            let (head, base) = (body["head"].as_str().unwrap_or(""), body["base"].as_str().unwrap_or("main"));
            if r.prs.values().any(|p| p.state == "open" && p.head_ref == head && p.base_ref == base) {
                let owner = full.split('/').next().unwrap_or("");
                let why = format!("A pull request already exists for {owner}:{head}.");
                let errors = json!([{"resource": "PullRequest", "code": "custom", "message": why}]);
                return (422, json!({"message": "Validation Failed", "errors": errors}));
            }
            let n = r.prs.keys().max().copied().unwrap_or(0) + 1;
            let mut p = MockPr::open(n, body["head"].as_str().unwrap_or(""));
            p.base_ref = body["base"].as_str().unwrap_or("main").into();
            p.created_at = super::now_rfc3339();
            p.author = LOGIN.into();
            r.branches.entry(p.head_ref.clone()).or_insert_with(|| p.head_sha.clone());
            let out = pr_json(full, &p);
            r.prs.insert(n, p);
            (201, out)
        }
        ("GET", ["pulls", n]) => match num(n).and_then(|n| r.prs.get(&n)) {
            Some(p) => (200, pr_json(full, p)),
            None => (404, msg("Not Found")),
        },
        ("PATCH", ["pulls", n]) => match num(n).and_then(|n| r.prs.get_mut(&n)) {
            Some(p) => {
                match body["state"].as_str() {
                    Some(st @ ("open" | "closed")) => p.state = st.into(),
                    Some(_) => return (422, msg("Validation Failed")),
                    None => {}
                }
                (200, pr_json(full, p))
            }
            None => (404, msg("Not Found")),
        },
        ("GET", ["pulls", n, "reviews"]) => match num(n).and_then(|n| r.prs.get(&n)) {
            Some(p) => (200, page_of(reviews_json(p), query)),
            None => (404, msg("Not Found")),
        },
        ("PUT", ["pulls", n, "merge"]) => match num(n) {
            Some(n) => merge(r, n, body),
            None => (404, msg("Not Found")),
        },
        ("GET", ["issues", n]) => match num(n).and_then(|n| r.issues.get(&n).map(|i| (n, i))) {
            Some((n, (title, body))) => (200, json!({"number": n, "title": title, "body": body, "state": "closed"})),
            None => (404, msg("Not Found")),
        },
        ("POST", ["issues", n, "comments"]) => match num(n).and_then(|n| r.prs.get_mut(&n)) {
            Some(_) if !body["body"].is_string() => (422, msg("Validation Failed: body is missing")),
            Some(p) => {
                p.comments.push(body["body"].as_str().unwrap_or("").into());
                (201, json!({"id": p.comments.len(), "body": body["body"]}))
            }
            None => (404, msg("Not Found")),
        },
        ("GET", ["commits", sha, "check-runs"]) => {
            let p = r.prs.values().find(|p| p.head_sha == *sha || p.past_heads.iter().any(|h| h == sha));
            let runs: Vec<Value> = p.map_or(vec![], |p| {
                p.check_runs.iter().map(|(s, c)| json!({"name": "ci", "status": s, "conclusion": c})).collect()
            });
            (200, json!({"total_count": runs.len(), "check_runs": runs}))
        }
        ("GET", ["commits", sha, "status"]) => {
            let p = r.prs.values().find(|p| p.head_sha == *sha || p.past_heads.iter().any(|h| h == sha));
            let st: Vec<Value> =
                p.map_or(vec![], |p| p.statuses.iter().map(|s| json!({"context": "ext", "state": s})).collect());
            (200, json!({"state": "pending", "total_count": st.len(), "statuses": st}))
        }
        ("GET", ["rules", "branches", _branch]) => {
            let mut rules = vec![];
            if r.merge_queue {
                rules.push(json!({"type": "merge_queue", "parameters": {"merge_method": "MERGE"}}));
            }
            if r.required_reviews > 0 {
                rules.push(json!({"type": "pull_request", "parameters": {"required_approving_review_count": r.required_reviews}}));
            }
            if !r.required_checks.is_empty() {
                let checks: Vec<Value> = r.required_checks.iter().map(|c| json!({"context": c})).collect();
                rules.push(json!({"type": "required_status_checks", "parameters": {
                    "strict_required_status_checks_policy": false, "required_status_checks": checks}}));
            }
            (200, json!(rules))
        }
        ("GET", ["git", "ref", "heads", branch @ ..]) => match r.branches.get(&branch.join("/")) {
            Some(sha) => {
                let name = format!("refs/heads/{}", branch.join("/"));
                (200, json!({"ref": name, "node_id": "REF_x", "object": {"type": "commit", "sha": sha}}))
            }
            None => (404, msg("Not Found")),
        },
        ("DELETE", ["git", "refs", "heads", branch @ ..]) => {
            if r.branches.remove(&branch.join("/")).is_some() {
                (204, Value::Null)
            } else {
                (422, msg("Reference does not exist"))
            }
        }
        _ => (599, Value::Null),
    }
}

/// `PUT /pulls/{n}/merge` as GitHub refuses it.
fn merge(r: &mut MockRepo, n: u64, body: &Value) -> (u16, Value) {
    let (queue, required, checks) = (r.merge_queue, r.required_reviews, r.required_checks.clone());
    let Some(p) = r.prs.get_mut(&n) else { return (404, msg("Not Found")) };
    if p.state != "open" {
        return (405, msg("Pull Request is not mergeable"));
    }
    if body["sha"].as_str().is_some_and(|s| s != p.head_sha) {
        return (409, msg("Head branch was modified. Review and try the merge again."));
    }
    if queue {
        return (405, msg("Changes must be made through the merge queue"));
    }
    if p.draft {
        return (405, msg("Pull Request is still a draft"));
    }
    if p.mergeable != Some(true) {
        return (405, msg("Pull Request is not mergeable"));
    }
    if p.check_runs.iter().any(|(s, c)| s != "completed" || c.as_deref() != Some("success")) {
        return (405, msg("Required status check \"ci\" is failing."));
    }
    let reported = |c: &str| (c == "ci" && !p.check_runs.is_empty()) || (c == "ext" && !p.statuses.is_empty());
    if let Some(c) = checks.iter().find(|c| !reported(c)) {
        return (405, msg(&format!("Required status check \"{c}\" is expected.")));
    }
    let (approvals, changes) = writers_verdict(p);
    if required > 0 && (approvals < required || changes) {
        return (405, msg("At least 1 approving review is required by reviewers with write access."));
    }
    if body["merge_method"].as_str().is_some_and(|m| !["merge", "squash", "rebase"].contains(&m)) {
        return (422, msg("Validation Failed"));
    }
    (p.state, p.merged) = ("closed".into(), true);
    (200, json!({"sha": "c".repeat(40), "merged": true, "message": "Pull Request successfully merged"}))
}

/// One page of a list, as GitHub pages it: `per_page` (at most 100, default 30) from `page`
/// (default 1).
fn page_of(list: Value, query: &str) -> Value {
    let arg = |k: &str| query.split('&').find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<usize>().ok());
    let per = arg("per_page").unwrap_or(30).clamp(1, 100);
    let page = arg("page").unwrap_or(1).max(1);
    let all = list.as_array().cloned().unwrap_or_default();
    json!(all.into_iter().skip((page - 1) * per).take(per).collect::<Vec<_>>())
}

/// A PR's reviews as GitHub lists them, each with its reviewer's `author_association`.
fn reviews_json(p: &MockPr) -> Value {
    let list: Vec<Value> = p
        .reviews
        .iter()
        .enumerate()
        .map(|(i, (u, s, a))| {
            json!({"id": 80 + i, "user": user(u), "body": "", "state": s, "author_association": a,
                "commit_id": p.head_sha, "submitted_at": "2026-01-01T00:00:00Z"})
        })
        .collect();
    json!(list)
}
