//! Stand-ins for the review feedback GitHub and GitLab give on a pull or merge request, answering
//! in the shape of the real APIs, for hone's feedback readers (`src/forge/feedback.rs`,
//! `src/forge/gitlab/feedback.rs`):
//!
//! - GitHub: `GET /repos/acme/app/pulls/N/reviews` (oldest first, as GitHub lists them) and
//!   `GET …/pulls/N/comments` (`sort`, `direction`), `per_page` (at most 100) and `page`, objects
//!   with `user.login`, `user.type`, `author_association`, `state`, `submitted_at`/`created_at`,
//!   `path`; `Authorization: Bearer GH_TOKEN` or 401 `Bad credentials`; an unknown PR is 404.
//! - GitLab (`/api/v4`): `GET /projects/acme%2Fapp/merge_requests/N/notes` (`sort`, `per_page`,
//!   `page`), notes with `system`, `internal`, `author.id`, `type` and a `DiffNote`'s `position`;
//!   `GET /projects/acme%2Fapp/members/all/:user_id` (`access_level`, 404 for a non-member);
//!   `PRIVATE-TOKEN: GL_TOKEN` or 401; `GET /user` is `GL_SELF`.
//!
//! It records every request. It uses nothing of the test harness, so that hone's unit tests can
//! include it too.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub const GH_TOKEN: &str = "ghs_feedback_standin_0123456789";
/// The login `GH_TOKEN` belongs to (`GET /user`).
pub const GH_SELF: &str = "hone-bot";
pub const GL_TOKEN: &str = "glpat-feedback-standin-0123";
/// The user id `GL_TOKEN` belongs to.
pub const GL_SELF: u64 = 1;
/// The GitLab project the stand-in serves, as its path segment.
pub const GL_PROJECT: &str = "acme%2Fapp";

/// A review or a review comment on GitHub (a comment has a `path`).
#[derive(Clone, Debug)]
pub struct GhItem {
    pub login: String,
    /// `User` or `Bot`.
    pub kind: String,
    /// OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, NONE, …
    pub association: String,
    /// A review's state (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING).
    pub state: String,
    pub body: String,
    pub path: Option<String>,
    /// RFC 3339.
    pub at: String,
}

/// A note on a GitLab merge request.
#[derive(Clone, Debug)]
pub struct GlNote {
    pub author: u64,
    pub body: String,
    pub system: bool,
    pub internal: bool,
    /// A diff note's `position.new_path`.
    pub path: Option<String>,
    pub at: String,
}

#[derive(Default)]
pub struct Inner {
    /// PR number → its reviews and its review comments (in the order they were made).
    pub reviews: BTreeMap<u64, Vec<GhItem>>,
    pub comments: BTreeMap<u64, Vec<GhItem>>,
    /// Merge request iid → its notes (in the order they were made).
    pub notes: BTreeMap<u64, Vec<GlNote>>,
    /// User id → access level on the project (absent: not a member).
    pub members: HashMap<u64, u64>,
    /// Every request: `METHOD path?query`.
    pub requests: Vec<String>,
    /// Answer every page of reviews with the first (a server that ignores `page`).
    pub ignores_page: bool,
}

impl Inner {
    /// PR `n`'s reviews and review comments, when it has any (else it is unknown: 404).
    fn pr(&self, n: u64) -> Option<(Vec<GhItem>, Vec<GhItem>)> {
        let (r, c) = (self.reviews.get(&n), self.comments.get(&n));
        (r.is_some() || c.is_some()).then(|| (r.cloned().unwrap_or_default(), c.cloned().unwrap_or_default()))
    }
}

#[derive(Clone)]
pub struct MockFeedback {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl MockFeedback {
    /// Start on 127.0.0.1: GitHub's API at `url`, GitLab's at `url/api/v4`.
    pub async fn start() -> MockFeedback {
        let state = Arc::new(Mutex::new(Inner::default()));
        let app = axum::Router::new()
            .route("/user", get(gh_user))
            .route("/repos/acme/app/pulls/{n}/reviews", get(gh_reviews))
            .route("/repos/acme/app/pulls/{n}/comments", get(gh_comments))
            .route("/api/v4/user", get(gl_user))
            .route("/api/v4/projects/{p}/merge_requests/{n}/notes", get(gl_notes))
            .route("/api/v4/projects/{p}/members/all/{u}", get(gl_member))
            .fallback(|uri: Uri| async move { (StatusCode::NOT_FOUND, format!("no route {uri}")) })
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        MockFeedback { url, state }
    }

    pub fn gitlab_api(&self) -> String {
        format!("{}/api/v4", self.url)
    }
    pub fn review(&self, pr: u64, item: GhItem) {
        self.state.lock().unwrap().reviews.entry(pr).or_default().push(item);
    }
    pub fn comment(&self, pr: u64, item: GhItem) {
        self.state.lock().unwrap().comments.entry(pr).or_default().push(item);
    }
    pub fn note(&self, iid: u64, note: GlNote) {
        self.state.lock().unwrap().notes.entry(iid).or_default().push(note);
    }
    pub fn member(&self, user: u64, access_level: u64) {
        self.state.lock().unwrap().members.insert(user, access_level);
    }
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

type St = State<Arc<Mutex<Inner>>>;

fn record(s: &St, uri: &Uri) {
    s.lock().unwrap().requests.push(format!("GET {uri}"));
}

fn status(code: StatusCode, body: Value) -> Response {
    (code, axum::Json(body)).into_response()
}

fn github_auth(h: &HeaderMap) -> Option<Response> {
    let ok = h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {GH_TOKEN}"));
    (!ok).then(|| {
        let doc = "https://docs.github.com/rest";
        status(StatusCode::UNAUTHORIZED, json!({"message": "Bad credentials", "documentation_url": doc}))
    })
}

fn gitlab_auth(h: &HeaderMap) -> Option<Response> {
    let ok = h.get("private-token").and_then(|v| v.to_str().ok()) == Some(GL_TOKEN);
    (!ok).then(|| status(StatusCode::UNAUTHORIZED, json!({"message": "401 Unauthorized"})))
}

/// One page of `items`: `per_page` (GitHub's and GitLab's default 20, at most 100), `page` from 1.
fn page(items: Vec<Value>, q: &HashMap<String, String>) -> Vec<Value> {
    let per = q.get("per_page").and_then(|v| v.parse::<usize>().ok()).unwrap_or(20).clamp(1, 100);
    let page = q.get("page").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1).max(1);
    items.into_iter().skip((page - 1) * per).take(per).collect()
}

fn gh_user_json(login: &str, kind: &str, id: usize) -> Value {
    json!({"login": login, "id": id, "node_id": "U_x", "type": kind, "site_admin": false,
           "html_url": format!("https://github.com/{login}")})
}

async fn gh_user(s: St, uri: Uri, h: HeaderMap) -> Response {
    record(&s, &uri);
    github_auth(&h).unwrap_or_else(|| axum::Json(gh_user_json(GH_SELF, "User", 1)).into_response())
}

/// What GitHub checks before it lists a PR's reviews or review comments: the token, then the PR
/// (404 when there is none); the PR's (reviews, review comments).
fn pr_lists(s: &St, uri: &Uri, h: &HeaderMap, n: u64) -> Result<(Vec<GhItem>, Vec<GhItem>), Box<Response>> {
    record(s, uri);
    if let Some(refused) = github_auth(h) {
        return Err(Box::new(refused));
    }
    s.lock().unwrap().pr(n).ok_or_else(|| Box::new(status(StatusCode::NOT_FOUND, json!({"message": "Not Found"}))))
}

async fn gh_reviews(
    s: St,
    uri: Uri,
    h: HeaderMap,
    Path(n): Path<u64>,
    Query(mut q): Query<HashMap<String, String>>,
) -> Response {
    let list = match pr_lists(&s, &uri, &h, n) {
        Ok((reviews, _)) => reviews,
        Err(refused) => return *refused,
    };
    let items = list.iter().enumerate().map(|(i, r)| {
        let submitted = if r.state == "PENDING" { Value::Null } else { json!(r.at) };
        json!({"id": 1000 + i, "node_id": "PRR_x", "user": gh_user_json(&r.login, &r.kind, 100 + i),
               "body": r.body, "state": r.state, "author_association": r.association,
               "html_url": format!("https://github.com/acme/app/pull/{n}#pullrequestreview-{}", 1000 + i),
               "pull_request_url": format!("https://api.github.com/repos/acme/app/pulls/{n}"),
               "submitted_at": submitted, "commit_id": "a".repeat(40)})
    });
    if s.lock().unwrap().ignores_page {
        q.remove("page");
    }
    axum::Json(page(items.collect(), &q)).into_response()
}

async fn gh_comments(
    s: St,
    uri: Uri,
    h: HeaderMap,
    Path(n): Path<u64>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let list = match pr_lists(&s, &uri, &h, n) {
        Ok((_, comments)) => comments,
        Err(refused) => return *refused,
    };
    let mut items: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": 2000 + i, "pull_request_review_id": 1000, "user": gh_user_json(&c.login, &c.kind, 100 + i),
               "body": c.body, "path": c.path, "line": 3, "side": "RIGHT", "commit_id": "a".repeat(40),
               "author_association": c.association, "created_at": c.at, "updated_at": c.at,
               "html_url": format!("https://github.com/acme/app/pull/{n}#discussion_r{}", 2000 + i)})
        })
        .collect();
    // GitHub sorts by `created` (or `updated`), ascending unless `direction=desc`.
    if q.get("direction").map(String::as_str) == Some("desc") {
        items.reverse();
    }
    axum::Json(page(items, &q)).into_response()
}

async fn gl_user(s: St, uri: Uri, h: HeaderMap) -> Response {
    record(&s, &uri);
    gitlab_auth(&h).unwrap_or_else(|| axum::Json(json!({"id": GL_SELF, "username": "project_7_bot"})).into_response())
}

async fn gl_notes(
    s: St,
    uri: Uri,
    h: HeaderMap,
    Path((p, n)): Path<(String, u64)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    record(&s, &uri);
    if let Some(refused) = gitlab_auth(&h) {
        return refused;
    }
    let list = s.lock().unwrap().notes.get(&n).cloned();
    let (true, Some(list)) = (p == "acme/app", list) else {
        return status(StatusCode::NOT_FOUND, json!({"message": "404 Not found"}));
    };
    let mut items: Vec<Value> = list.iter().enumerate().map(|(i, note)| gl_note_json(note, 3000 + i, n)).collect();
    // GitLab lists notes newest first unless `sort=asc`.
    if q.get("sort").map(String::as_str) != Some("asc") {
        items.reverse();
    }
    axum::Json(page(items, &q)).into_response()
}

fn gl_note_json(note: &GlNote, id: usize, iid: u64) -> Value {
    let position = note.path.as_ref().map(|p| {
        json!({"base_sha": "b".repeat(40), "start_sha": "b".repeat(40), "head_sha": "a".repeat(40),
               "old_path": p, "new_path": p, "position_type": "text", "old_line": null, "new_line": 3})
    });
    let kind = if note.path.is_some() { json!("DiffNote") } else { Value::Null };
    let author = json!({"id": note.author, "username": format!("user{}", note.author), "name": "U",
                        "state": "active", "web_url": format!("https://gitlab.example.com/user{}", note.author)});
    let mut v = json!({"id": id, "type": kind, "body": note.body, "attachment": null, "author": author,
                       "created_at": note.at, "updated_at": note.at, "system": note.system,
                       "noteable_id": 77, "noteable_type": "MergeRequest", "noteable_iid": iid,
                       "resolvable": note.path.is_some(), "confidential": note.internal, "internal": note.internal});
    if let Some(p) = position {
        v["position"] = p;
    }
    v
}

async fn gl_member(s: St, uri: Uri, h: HeaderMap, Path((p, u)): Path<(String, u64)>) -> Response {
    record(&s, &uri);
    if let Some(refused) = gitlab_auth(&h) {
        return refused;
    }
    let level = s.lock().unwrap().members.get(&u).copied();
    match (p == "acme/app", level) {
        (true, Some(level)) => axum::Json(json!({"id": u, "username": format!("user{u}"), "name": "U",
                                                  "state": "active", "access_level": level, "expires_at": null}))
        .into_response(),
        _ => status(StatusCode::NOT_FOUND, json!({"message": "404 Not found"})),
    }
}
