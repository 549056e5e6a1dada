//! The stand-in's answers, as GitHub gives them: pull requests, checks, statuses, reviews,
//! rules, comments, refs, merges and the merge queue, each with the rate-limit headers.

use super::{Limit, MockPr, MockRepo, Seen, State, TOKEN};
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
fn answer(status: u16, body: Value, used: usize, resource: &str) -> Response {
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
        return graphql(&s, &body, n);
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
            if let Some(p) = pr.parse().ok().and_then(|n: u64| repo.prs.get_mut(&n)) {
                p.head_sha = "f".repeat(40);
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

/// GitHub's JSON for a PR of `full`.
fn pr_json(full: &str, p: &MockPr) -> Value {
    let head_repo = p.head_repo.clone().unwrap_or_else(|| full.to_string());
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
        "head": {"ref": p.head_ref, "sha": p.head_sha, "repo": {"full_name": head_repo}},
        "base": {"ref": p.base_ref, "sha": "b".repeat(40), "repo": {"full_name": full}},
    })
}

fn repo_route(r: &mut MockRepo, full: &str, m: &str, rest: &[&str], body: &Value, query: &str) -> (u16, Value) {
    let num = |s: &str| s.parse::<u64>().ok();
    match (m, rest) {
        ("GET", ["pulls"]) => {
            let head = query.split('&').find_map(|kv| kv.strip_prefix("head=")).unwrap_or("");
            let head = percent_encoding::percent_decode_str(head).decode_utf8_lossy().into_owned();
            let list: Vec<Value> = r
                .prs
                .values()
                .filter(|p| p.state == "open" && format!("{}:{}", full.split('/').next().unwrap(), p.head_ref) == head)
                .map(|p| pr_json(full, p))
                .collect();
            (200, json!(list))
        }
        ("POST", ["pulls"]) => {
            let n = r.prs.keys().max().copied().unwrap_or(0) + 1;
            let mut p = MockPr::open(n, body["head"].as_str().unwrap_or(""));
            p.base_ref = body["base"].as_str().unwrap_or("main").into();
            p.created_at = super::now_rfc3339();
            r.branches.insert(p.head_ref.clone());
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
                if let Some(st) = body["state"].as_str() {
                    p.state = st.into();
                }
                (200, pr_json(full, p))
            }
            None => (404, msg("Not Found")),
        },
        ("GET", ["pulls", n, "reviews"]) => match num(n).and_then(|n| r.prs.get(&n)) {
            Some(p) => (
                200,
                json!(p.reviews.iter().map(|(u, s)| json!({"user": {"login": u}, "state": s})).collect::<Vec<_>>()),
            ),
            None => (404, msg("Not Found")),
        },
        ("PUT", ["pulls", n, "merge"]) => match num(n) {
            Some(n) => merge(r, n, body),
            None => (404, msg("Not Found")),
        },
        ("POST", ["issues", n, "comments"]) => match num(n).and_then(|n| r.prs.get_mut(&n)) {
            Some(p) => {
                p.comments.push(body["body"].as_str().unwrap_or("").into());
                (201, json!({"id": p.comments.len(), "body": body["body"]}))
            }
            None => (404, msg("Not Found")),
        },
        ("GET", ["commits", sha, "check-runs"]) => {
            let p = r.prs.values().find(|p| p.head_sha == *sha);
            let runs: Vec<Value> = p.map_or(vec![], |p| {
                p.check_runs.iter().map(|(s, c)| json!({"name": "ci", "status": s, "conclusion": c})).collect()
            });
            (200, json!({"total_count": runs.len(), "check_runs": runs}))
        }
        ("GET", ["commits", sha, "status"]) => {
            let p = r.prs.values().find(|p| p.head_sha == *sha);
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
            (200, json!(rules))
        }
        ("DELETE", ["git", "refs", "heads", branch @ ..]) => {
            if r.branches.remove(&branch.join("/")) {
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
    let (queue, required) = (r.merge_queue, r.required_reviews);
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
    let approvals = p.reviews.iter().filter(|(_, s)| s == "APPROVED").count() as u64;
    if required > 0 && approvals < required {
        return (405, msg("At least 1 approving review is required by reviewers with write access."));
    }
    if body["merge_method"].as_str().is_some_and(|m| !["merge", "squash", "rebase"].contains(&m)) {
        return (422, msg("Validation Failed"));
    }
    (p.state, p.merged) = ("closed".into(), true);
    (200, json!({"sha": "c".repeat(40), "merged": true, "message": "Pull Request successfully merged"}))
}

/// GraphQL: `enqueuePullRequest` only.
fn graphql(s: &State, body: &Value, n: usize) -> Response {
    let q = body["query"].as_str().unwrap_or("");
    let (id, expected) = (body["variables"]["id"].as_str().unwrap_or(""), body["variables"]["sha"].as_str());
    if !q.contains("enqueuePullRequest") {
        s.refused.lock().unwrap().push(format!("GraphQL query hone does not make: {q}"));
        return answer(200, json!({"errors": [{"message": "unknown"}]}), n, "graphql");
    }
    let mut repos = s.repos.lock().unwrap();
    let found = repos.values_mut().find_map(|r| {
        let queue = r.merge_queue;
        r.prs.values_mut().find(|p| format!("PR_node{}", p.number) == id).map(|p| (queue, p))
    });
    let err = |m: &str| {
        answer(
            200,
            json!({"data": {"enqueuePullRequest": null}, "errors": [{"type": "UNPROCESSABLE", "message": m}]}),
            n,
            "graphql",
        )
    };
    match found {
        None => err(&format!("Could not resolve to a node with the global id of '{id}'")),
        Some((false, _)) => err("Pull request is not in a merge queue enabled branch"),
        Some((true, p)) if expected.is_some_and(|e| e != p.head_sha) => {
            err("Expected head oid does not match the pull request's head")
        }
        Some((true, p)) => {
            p.queued = true;
            answer(
                200,
                json!({"data": {"enqueuePullRequest": {"mergeQueueEntry": {"state": "QUEUED", "position": 1}}}}),
                n,
                "graphql",
            )
        }
    }
}
