//! The stand-in's answers: the PR, its files, its reviews and their comments, with GitHub's
//! refusals.

use super::diff::{pr_files, right_ranges};
use super::{Comment, Inner, LOGIN, MAX_BODY, REPO, Review, Seen, State, TOKEN};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as With;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

type Shared = Arc<State>;

pub fn routes() -> Router<Shared> {
    Router::new().fallback(handle)
}

fn answer(status: u16, body: Value) -> Response {
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

/// A refusal, recorded.
fn refuse(s: &mut Inner, status: u16, body: Value) -> Response {
    s.refused.push((status, body.to_string()));
    answer(status, body)
}

fn unprocessable(s: &mut Inner, error: &str) -> Response {
    refuse(s, 422, json!({"message": "Unprocessable Entity", "errors": [error], "status": "422"}))
}

async fn handle(With(st): With<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or("").to_string();
    let mut s = st.inner.lock().unwrap();
    s.seen.push(Seen { method: method.to_string(), path: path.clone(), query: query.clone(), body: body.clone() });
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if auth != format!("Bearer {TOKEN}") {
        return refuse(&mut s, 401, json!({"message": "Bad credentials"}));
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["user"] => return answer(200, json!({"login": LOGIN, "type": "Bot"})),
        ["trap", ..] => {
            s.followed_link.push(format!("{path}?{query}"));
            return answer(200, json!([]));
        }
        ["repos", owner, repo, rest @ ..] if format!("{owner}/{repo}") == REPO => rest.to_vec(),
        _ => return refuse(&mut s, 404, json!({"message": "Not Found"})),
    };
    let n = |i: usize| rest.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    match (method.as_str(), rest.as_slice()) {
        ("GET", ["pulls", _]) => pr(&st, &mut s, n(1)),
        ("GET", ["pulls", _, "files"]) => files(&st, &mut s, n(1), &query),
        ("GET", ["pulls", _, "reviews"]) => {
            let list: Vec<Value> = s.reviews.iter().filter(|r| r.pr == n(1)).map(review_json).collect();
            answer(200, Value::Array(page(&list, &query)))
        }
        ("POST", ["pulls", _, "reviews"]) => create(&st, &mut s, n(1), &body),
        ("PUT", ["pulls", _, "reviews", _]) => update(&mut s, n(1), n(3), &body),
        ("GET", ["pulls", _, "reviews", _, "comments"]) => {
            let (pr, id) = (n(1), n(3));
            if !s.reviews.iter().any(|r| r.pr == pr && r.id == id) {
                return refuse(&mut s, 404, json!({"message": "Not Found"}));
            }
            let list: Vec<Value> = s.comments.iter().filter(|c| c.review_id == id).map(comment_json).collect();
            answer(200, Value::Array(page(&list, &query)))
        }
        ("DELETE", ["pulls", "comments", _]) => delete_comment(&mut s, n(2)),
        _ => refuse(&mut s, 404, json!({"message": "Not Found"})),
    }
}

/// One page of `items`: `per_page` (default 30, at most 100) and `page` (from 1) as GitHub reads them.
fn page(items: &[Value], query: &str) -> Vec<Value> {
    let get = |k: &str| {
        query.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).and_then(|v| v.parse::<usize>().ok())
    };
    let per = get("per_page").unwrap_or(30).clamp(1, 100);
    let page = get("page").unwrap_or(1).max(1);
    items.iter().skip((page - 1) * per).take(per).cloned().collect()
}

/// The PR as GitHub answers it; its `base.sha` is the base branch's commit in the origin.
fn pr(st: &State, s: &mut Inner, number: u64) -> Response {
    let Some(p) = s.prs.get(&number) else { return refuse(s, 404, json!({"message": "Not Found"})) };
    let base_sha = git2::Repository::open_bare(&st.origin)
        .and_then(|r| r.refname_to_id(&format!("refs/heads/{}", p.base_ref)))
        .map(|o| o.to_string())
        .ok();
    answer(
        200,
        json!({"number": p.number, "state": p.state, "html_url": format!("https://github.example/{REPO}/pull/{}", p.number),
               "head": {"ref": p.head_ref, "sha": p.head_sha, "repo": {"full_name": p.head_repo}},
               "base": {"ref": p.base_ref, "sha": base_sha, "repo": {"full_name": REPO}}}),
    )
}

fn files(st: &State, s: &mut Inner, number: u64, query: &str) -> Response {
    let Some(p) = s.prs.get(&number).cloned() else { return refuse(s, 404, json!({"message": "Not Found"})) };
    let mut list: Vec<Value> = pr_files(&st.origin, &p.base_ref, &p.head_sha).iter().map(|f| f.json()).collect();
    list.extend(s.extra_files.iter().cloned());
    let mut r = answer(200, Value::Array(page(&list, query)));
    let trap = format!("<{}/trap/files?page=2>; rel=\"next\"", st.url);
    r.headers_mut().insert("link", HeaderValue::from_str(&trap).unwrap());
    r
}

fn review_json(r: &Review) -> Value {
    json!({"id": r.id, "user": {"login": r.user}, "body": r.body, "commit_id": r.commit_id, "state": "COMMENTED",
           "html_url": format!("https://github.example/{REPO}/pull/{}#pullrequestreview-{}", r.pr, r.id)})
}

fn comment_json(c: &Comment) -> Value {
    json!({"id": c.id, "pull_request_review_id": c.review_id, "user": {"login": c.user}, "path": c.path,
           "line": c.line, "start_line": c.start_line, "side": "RIGHT", "body": c.body})
}

/// `POST …/pulls/N/reviews`: every comment checked against the PR's diff; all or nothing.
fn create(st: &State, s: &mut Inner, number: u64, body: &Value) -> Response {
    let Some(p) = s.prs.get(&number).cloned() else { return refuse(s, 404, json!({"message": "Not Found"})) };
    let commit = body["commit_id"].as_str().unwrap_or("");
    if commit != p.head_sha {
        return unprocessable(s, &format!("No commit found for SHA: {commit}"));
    }
    let text = body["body"].as_str().unwrap_or("");
    if text.chars().count() > MAX_BODY {
        return refuse(
            s,
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "PullRequestReview",
            "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}]}),
        );
    }
    let files = pr_files(&st.origin, &p.base_ref, &p.head_sha);
    let mut comments = Vec::new();
    for c in body["comments"].as_array().cloned().unwrap_or_default() {
        let path = c["path"].as_str().unwrap_or("");
        let Some(file) = files.iter().find(|f| f.filename == path) else {
            return unprocessable(s, "Path could not be resolved");
        };
        let line = c["line"].as_u64().unwrap_or(0);
        let start = c["start_line"].as_u64().unwrap_or(line);
        let right = |k: &str| c[k].is_null() || c[k] == "RIGHT";
        let ranges = file.patch.as_deref().map(right_ranges).unwrap_or_default();
        let inside = ranges.iter().any(|&(a, b)| a <= start && start <= line && line <= b);
        if !right("side") || !right("start_side") || !inside {
            return unprocessable(s, "Line could not be resolved");
        }
        let text = c["body"].as_str().unwrap_or("").to_string();
        if text.chars().count() > MAX_BODY {
            return unprocessable(s, "body is too long (maximum is 65536 characters)");
        }
        let start_line = c["start_line"].as_u64();
        comments.push((path.to_string(), line, start_line, text));
    }
    s.next_id += 1;
    let review = Review {
        id: s.next_id,
        pr: number,
        user: LOGIN.into(),
        body: text.into(),
        commit_id: commit.into(),
        event: body["event"].as_str().unwrap_or("PENDING").into(),
    };
    for (path, line, start_line, text) in comments {
        s.next_id += 1;
        let c = Comment { id: s.next_id, review_id: review.id, user: LOGIN.into(), path, line, start_line, body: text };
        s.comments.push(c);
    }
    let json = review_json(&review);
    s.reviews.push(review);
    answer(200, json)
}

/// `PUT …/pulls/N/reviews/ID`: only the review's author may change its body.
fn update(s: &mut Inner, number: u64, id: u64, body: &Value) -> Response {
    let Some(i) = s.reviews.iter().position(|r| r.pr == number && r.id == id) else {
        return refuse(s, 404, json!({"message": "Not Found"}));
    };
    if s.reviews[i].user != LOGIN {
        return refuse(s, 403, json!({"message": "You can only update your own reviews"}));
    }
    let Some(text) = body["body"].as_str() else { return unprocessable(s, "body is missing") };
    if text.chars().count() > MAX_BODY {
        return unprocessable(s, "body is too long (maximum is 65536 characters)");
    }
    s.reviews[i].body = text.to_string();
    answer(200, review_json(&s.reviews[i]))
}

/// `DELETE …/pulls/comments/ID`: only the comment's author may delete it.
fn delete_comment(s: &mut Inner, id: u64) -> Response {
    let Some(i) = s.comments.iter().position(|c| c.id == id) else {
        return refuse(s, 404, json!({"message": "Not Found"}));
    };
    if s.comments[i].user != LOGIN {
        return refuse(s, 403, json!({"message": "You can only delete your own comments"}));
    }
    s.comments.remove(i);
    StatusCode::NO_CONTENT.into_response()
}
