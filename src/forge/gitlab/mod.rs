//! A small GitLab REST (v4) client: one project, its token in the header GitLab reads for its
//! kind (`PRIVATE-TOKEN` for access tokens, `JOB-TOKEN` for `CI_JOB_TOKEN`), mutating requests
//! paced like GitHub's, `Retry-After` and `RateLimit-*` honoured, redirects never followed, every
//! request bounded, and a refusal (401, 403) turned into an error that names the scope or the
//! token kind it needs.

pub mod autofix;
pub mod campaign;
pub mod checks;
pub mod feedback;
pub mod init;
pub mod issue;
pub mod listing;
pub mod pr;
pub mod query;
pub mod review;

use super::credential::Token;
use super::place::{CI_JOB_TOKEN, Place};
use crate::bound::Bound;
use crate::error::{Code, HoneError, Result};
use reqwest::Method;
use serde_json::Value;
use std::sync::atomic::AtomicU32;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// The longest one request (with its body) may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(60);
/// The most of an answer hone reads.
const BODY_MAX: usize = 4 << 20;

pub struct GitLab {
    http: reqwest::Client,
    api: String,
    /// `group/sub/project`.
    pub project: String,
    token: Token,
    pub retries: AtomicU32,
    queue: std::sync::Arc<Mutex<Option<Instant>>>,
    /// The run's wall-time budget and cancellation: no request or wait goes past them.
    bound: Bound,
}

/// GitLab's answer to one request.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// GitLab's message, in any of the shapes it uses (`message` as text, list or map of
    /// field errors; `error` and `error_description`), bounded.
    pub fn message(&self) -> String {
        let b = &self.body;
        let text = match (&b["message"], &b["error"]) {
            (Value::String(s), _) => s.clone(),
            (Value::Array(a), _) => a.iter().map(|m| m.as_str().unwrap_or_default()).collect::<Vec<_>>().join("; "),
            (Value::Object(m), _) => m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join("; "),
            (_, Value::String(e)) => format!("{e} {}", b["error_description"].as_str().unwrap_or_default()),
            _ => String::new(),
        };
        let text: String = text.chars().take(500).collect();
        format!("HTTP {}: {}", self.status, text.trim()).trim().to_string()
    }
}

impl GitLab {
    /// The client for the place's project with its token. Errors when the place has no project
    /// path, token or plain API URL.
    pub fn new(place: &Place, queue: std::sync::Arc<Mutex<Option<Instant>>>, bound: &Bound) -> Result<GitLab> {
        let project = place.repo.clone().filter(|p| is_project_path(p)).ok_or_else(|| {
            HoneError::new(Code::Forge, "cannot tell the GitLab project (its `group/project` path)")
                .hint("run in GitLab CI (CI_PROJECT_PATH), or point the remote at the project's GitLab URL")
        })?;
        let mut gl = GitLab::server(place, queue, bound)?;
        gl.project = project;
        Ok(gl)
    }

    /// A client for requests about no one project (listing a group): `project_path` is not for it.
    pub fn server(place: &Place, queue: std::sync::Arc<Mutex<Option<Instant>>>, bound: &Bound) -> Result<GitLab> {
        let token = place.token.clone().ok_or_else(|| {
            HoneError::new(Code::Forge, "no GitLab token")
                .hint("set GITLAB_TOKEN to a project access token with the `api` scope")
        })?;
        let api = place.api()?;
        if !crate::model::http::https_or_loopback(api) {
            return Err(HoneError::new(
                Code::Forge,
                format!("the GitLab API `{api}` is not HTTPS: the token is not sent there"),
            )
            .hint("set CI_API_V4_URL, CI_SERVER_URL or `forge.url` to the server's https:// address"));
        }
        let http = crate::net::builder(api)?
            .build()
            .map_err(|e| HoneError::new(Code::Forge, format!("cannot build the GitLab client: {e}")))?;
        let project = String::new();
        Ok(GitLab {
            http,
            api: api.to_string(),
            project,
            token,
            retries: AtomicU32::new(0),
            queue,
            bound: bound.clone(),
        })
    }

    /// Whether the token is GitLab CI's job token, which cannot use most of the API.
    pub fn job_token(&self) -> bool {
        self.token.var == CI_JOB_TOKEN
    }

    /// `/projects/{id}` + `rest`, the project's path encoded as one segment.
    pub fn project_path(&self, rest: &str) -> String {
        format!("/projects/{}{rest}", super::github::encode(&self.project))
    }

    pub async fn get(&self, path: &str) -> Result<Answer> {
        self.call(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::POST, path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::PUT, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> Result<Answer> {
        self.call(Method::DELETE, path, None).await
    }

    /// `call_once`, given up at the run's deadline or on cancellation.
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer> {
        let what = || format!("GitLab request {method} {path}");
        super::pace::bounded(&self.bound, what, self.call_once(method.clone(), path, body)).await
    }

    async fn call_once(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer> {
        let url = format!("{}{path}", self.api);
        let what = format!("GitLab {method} {path}");
        super::pace::paced(&self.queue, method != Method::GET, &self.retries, &what, async || {
            let header = if self.job_token() { "JOB-TOKEN" } else { "PRIVATE-TOKEN" };
            let mut rb = self.http.request(method.clone(), &url).header(header, self.token.secret());
            if let Some(b) = body {
                rb = rb.json(b);
            }
            let resp = match tokio::time::timeout(REQUEST_LIMIT, rb.timeout(REQUEST_LIMIT).send()).await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => return Err(self.failed(&method, path, &e)),
                Err(_) => {
                    let took = format!("GitLab request {method} {path} took over {}s", REQUEST_LIMIT.as_secs());
                    return Err(HoneError::new(Code::Io, took));
                }
            };
            let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
            let (bytes, _) = crate::model::http::body_prefix(resp, BODY_MAX).await;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let wait = rate_limit_wait(status, &headers, now);
            Ok(super::pace::Sent {
                answer: Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) },
                wait,
            })
        })
        .await
        .and_then(|answer| self.judge(answer, &method, path))
    }

    /// GitLab's answer as it stands, or the error it is: a redirect (never followed), a refusal.
    fn judge(&self, answer: Answer, method: &Method, path: &str) -> Result<Answer> {
        let status = answer.status;
        if (300..400).contains(&status) {
            return Err(HoneError::new(
                Code::Forge,
                format!("GitLab answered {method} {path} with a redirect (HTTP {status}), which hone does not follow"),
            )
            .hint("set CI_API_V4_URL, CI_SERVER_URL or `forge.url` to the server's own address"));
        }
        match refusal(&answer, &self.token, &format!("{method} {path}")) {
            Some(e) => Err(e),
            None => Ok(answer),
        }
    }

    /// The error for a request that got no answer: a refused certificate says what to do.
    fn failed(&self, method: &Method, path: &str, e: &reqwest::Error) -> HoneError {
        if let Some(why) = crate::net::untrusted_certificate(e) {
            return HoneError::new(
                Code::Forge,
                crate::net::untrusted_message(&format!("the GitLab API at {}", self.api), &why),
            );
        }
        HoneError::new(Code::Io, format!("GitLab request {method} {path} failed: {e}"))
            .hint("check the network, the proxy (HTTPS_PROXY) and the GitLab server's address")
    }
}

/// Whether `p` is a GitLab project path: segments of ASCII letters, digits, `.`, `_`, `-` and
/// `+`, none `.` or `..`, at least two.
pub fn is_project_path(p: &str) -> bool {
    let parts: Vec<&str> = p.split('/').collect();
    parts.len() >= 2
        && p.len() <= 1000
        && parts.iter().all(|s| {
            !s.is_empty()
                && *s != "."
                && *s != ".."
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
        })
}

/// How long a rate-limited answer asks to wait: 429 with `Retry-After` (seconds), else until
/// `RateLimit-Reset` (a Unix time), else a minute.
pub fn rate_limit_wait(status: u16, headers: &reqwest::header::HeaderMap, now_unix: u64) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if status != 429 {
        return None;
    }
    if let Some(s) = get("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(s));
    }
    if let Some(reset) = get("ratelimit-reset").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(reset.saturating_sub(now_unix).max(1)));
    }
    Some(Duration::from_secs(60))
}

/// The error for a request GitLab refused for the token (401, 403), naming what it lacks:
/// the job token's limits, a scope (`insufficient_scope`), or a role.
pub fn refusal(a: &Answer, token: &Token, what: &str) -> Option<HoneError> {
    let var = &token.var;
    let job = var == CI_JOB_TOKEN;
    let (message, hint) = match a.status {
        401 | 403 if job => (
            format!("GitLab refused {what} with {CI_JOB_TOKEN} ({})", a.message()),
            "the job token cannot create or edit merge requests or notes: put a project access token with the `api` scope (role Developer or above) in GITLAB_TOKEN, as a masked, protected CI/CD variable".to_string(),
        ),
        401 => (
            format!("GitLab did not accept the token in `{var}` for {what} ({})", a.message()),
            format!("the token is unknown, expired or revoked: make a new one and set `{var}`"),
        ),
        403 if a.body["error"].as_str() == Some("insufficient_scope") => {
            // GitLab lists the scopes that would do, any one of them.
            let scopes: Vec<String> =
                a.body["scope"].as_str().unwrap_or("api").split_whitespace().map(|s| format!("`{s}`")).collect();
            let needed = match scopes.as_slice() {
                [one] => format!("the {one} scope"),
                many => format!("a scope ({})", many.join(" or ")),
            };
            (
                format!("the token in `{var}` lacks {needed} that {what} needs"),
                "give the token the `api` scope (hone needs `api` to open merge requests and `write_repository` to push)".to_string(),
            )
        }
        403 => (
            format!("GitLab forbade {what} for the token in `{var}` ({})", a.message()),
            "the token's user needs the Developer role or above on the project (a project access token's role is set when it is made)".to_string(),
        ),
        _ => return None,
    };
    Some(HoneError::new(Code::Forge, message).hint(hint))
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

/// The user the token acts as (its id): hone's own notes and reviews are the ones it wrote.
pub async fn whoami(gl: &GitLab) -> Result<u64> {
    let me = gl.get("/user").await?;
    me.body["id"].as_u64().filter(|_| me.ok()).ok_or_else(|| {
        HoneError::new(Code::Forge, format!("GitLab would not say who the token's user is: {}", me.message()))
            .hint("give the token a scope that reads its user (`api` or `read_user`); a CI job token cannot")
    })
}
