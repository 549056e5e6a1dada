//! A small Forgejo (and Gitea) REST client, `{server}/api/v1`: one repository, its token in
//! `Authorization: token …`, mutating requests paced like GitHub's and GitLab's
//! (`forge::pace`), `Retry-After` honoured, redirects never followed, every request bounded in
//! time and bytes and given up at the run's deadline or cancellation, and a refusal (401, 403)
//! turned into an error that names the scope it needs. Paths are made by hone from the repository
//! it was given; no URL from an answer is ever requested.

pub mod autofix;
pub mod campaign;
pub mod checks;
pub mod feedback;
pub mod init;
pub mod issue;
pub mod listing;
pub mod place;
pub mod pr;
pub mod query;

use super::credential::Token;
use super::place::Place;
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
/// The scopes hone's token needs, for hints.
pub const SCOPES: &str =
    "`write:repository` (PRs, branches, merging), `write:issue` (comments, labels) and `read:user`";

pub struct Forgejo {
    http: reqwest::Client,
    api: String,
    /// `owner/repo`.
    pub repo: String,
    token: Token,
    pub retries: AtomicU32,
    queue: std::sync::Arc<Mutex<Option<Instant>>>,
    /// The run's wall-time budget and cancellation: no request or wait goes past them.
    bound: Bound,
}

/// Forgejo's answer to one request.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Forgejo's message (`message`, and `errors` when it lists them), bounded, without control
    /// characters.
    pub fn message(&self) -> String {
        let b = &self.body;
        let mut text = b["message"].as_str().unwrap_or_default().to_string();
        if let Some(errors) = b["errors"].as_array().filter(|e| !e.is_empty()) {
            let list: Vec<&str> = errors.iter().filter_map(Value::as_str).collect();
            text = format!("{text} ({})", list.join("; "));
        }
        let text: String = text.chars().filter(|c| !c.is_control()).take(500).collect();
        format!("HTTP {}: {}", self.status, text.trim()).trim().to_string()
    }
}

/// Whether `r` is a Forgejo repository path `owner/name`: two segments of ASCII letters, digits,
/// `.`, `_` and `-`, neither `.` nor `..`.
pub fn is_repo_path(r: &str) -> bool {
    let parts: Vec<&str> = r.split('/').collect();
    parts.len() == 2 && parts.iter().all(|s| is_name(s))
}

/// Whether `s` is a Forgejo user, organisation or repository name.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Forgejo {
    /// The client for the place's repository with its token. Errors when the place has no
    /// `owner/repo`, token or plain API URL.
    pub fn new(place: &Place, queue: std::sync::Arc<Mutex<Option<Instant>>>, bound: &Bound) -> Result<Forgejo> {
        let repo = place.repo.clone().filter(|r| is_repo_path(r)).ok_or_else(|| {
            HoneError::new(Code::Forge, "cannot tell the Forgejo repository (its `owner/name`)")
                .hint("run under Forgejo Actions (GITHUB_REPOSITORY), or point the remote at the repository's URL on the Forgejo server")
        })?;
        let mut fj = Forgejo::server(place, queue, bound)?;
        fj.repo = repo;
        Ok(fj)
    }

    /// A client for requests about no one repository (the token's user, an organisation's list).
    pub fn server(place: &Place, queue: std::sync::Arc<Mutex<Option<Instant>>>, bound: &Bound) -> Result<Forgejo> {
        let token = place.token.clone().ok_or_else(|| {
            HoneError::new(Code::Forge, "no Forgejo token")
                .hint(format!("set FORGEJO_TOKEN to an access token with the scopes {SCOPES}"))
        })?;
        let api = place.api()?;
        if !crate::model::http::https_or_loopback(api) {
            return Err(HoneError::new(
                Code::Forge,
                format!("the Forgejo API `{api}` is not HTTPS: the token is not sent there"),
            )
            .hint("set `forge.url` (or GITHUB_SERVER_URL under Forgejo Actions) to the server's https:// address"));
        }
        let http = crate::net::builder(api)?
            .build()
            .map_err(|e| HoneError::new(Code::Forge, format!("cannot build the Forgejo client: {e}")))?;
        let (api, repo) = (api.trim_end_matches('/').to_string(), String::new());
        Ok(Forgejo { http, api, repo, token, retries: AtomicU32::new(0), queue, bound: bound.clone() })
    }

    /// `/repos/{owner}/{repo}` + `rest`, each name encoded.
    pub fn repo_path(&self, rest: &str) -> String {
        let (owner, name) = self.repo.split_once('/').unwrap_or((&self.repo, ""));
        format!("/repos/{}/{}{rest}", encode(owner), encode(name))
    }

    pub async fn get(&self, path: &str) -> Result<Answer> {
        self.call(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::POST, path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::PATCH, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> Result<Answer> {
        self.call(Method::DELETE, path, None).await
    }

    /// `call_once`, given up at the run's deadline or on cancellation.
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer> {
        let what = || format!("Forgejo request {method} {path}");
        super::pace::bounded(&self.bound, what, self.call_once(method.clone(), path, body)).await
    }

    async fn call_once(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer> {
        let url = format!("{}{path}", self.api);
        let what = format!("Forgejo {method} {path}");
        super::pace::paced(&self.queue, method != Method::GET, &self.retries, &what, async || {
            let auth = format!("token {}", self.token.secret());
            let mut rb = self.http.request(method.clone(), &url).header("authorization", auth);
            if let Some(b) = body {
                rb = rb.json(b);
            }
            let resp = match tokio::time::timeout(REQUEST_LIMIT, rb.timeout(REQUEST_LIMIT).send()).await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => return Err(self.failed(&method, path, &e)),
                Err(_) => {
                    let took = format!("Forgejo request {method} {path} took over {}s", REQUEST_LIMIT.as_secs());
                    return Err(HoneError::new(Code::Io, took));
                }
            };
            let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
            let (bytes, _) = crate::model::http::body_prefix(resp, BODY_MAX).await;
            let wait = rate_limit_wait(status, &headers);
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Ok(super::pace::Sent { answer: Answer { status, body }, wait })
        })
        .await
        .and_then(|answer| self.judge(answer, &method, path))
    }

    /// Forgejo's answer as it stands, or the error it is: a redirect (never followed), a refusal.
    fn judge(&self, answer: Answer, method: &Method, path: &str) -> Result<Answer> {
        let status = answer.status;
        if (300..400).contains(&status) {
            return Err(HoneError::new(
                Code::Forge,
                format!("Forgejo answered {method} {path} with a redirect (HTTP {status}), which hone does not follow"),
            )
            .hint("set `forge.url` to the server's own address"));
        }
        match refusal(&answer, &self.token.var, &format!("{method} {path}")) {
            Some(e) => Err(e),
            None => Ok(answer),
        }
    }

    /// The error for a request that got no answer: a refused certificate says what to do.
    fn failed(&self, method: &Method, path: &str, e: &reqwest::Error) -> HoneError {
        if let Some(why) = crate::net::untrusted_certificate(e) {
            let at = format!("the Forgejo API at {}", self.api);
            return HoneError::new(Code::Forge, crate::net::untrusted_message(&at, &why));
        }
        HoneError::new(Code::Io, format!("Forgejo request {method} {path} failed: {e}"))
            .hint("check the network, the proxy (HTTPS_PROXY) and the Forgejo server's address")
    }
}

/// One path segment, percent-encoded.
pub fn encode(s: &str) -> String {
    super::github::encode(s)
}

/// How long a rate-limited answer (429) asks to wait: `Retry-After` seconds, else a minute.
pub fn rate_limit_wait(status: u16, headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if status != 429 {
        return None;
    }
    let after = headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    Some(Duration::from_secs(after.unwrap_or(60)))
}

/// The error for a request Forgejo refused for the token (401, or 403 for a missing scope),
/// naming what it lacks. Another 403 (no permission on the repository) is the caller's to read.
pub fn refusal(a: &Answer, var: &str, what: &str) -> Option<HoneError> {
    let text = a.body["message"].as_str().unwrap_or_default();
    let (message, hint) = match a.status {
        401 => (
            format!("Forgejo did not accept the token in `{var}` for {what} ({})", a.message()),
            format!("the token is unknown, expired or revoked: make a new one and set `{var}`"),
        ),
        403 if text.contains("required scope") => (
            format!("the token in `{var}` lacks a scope that {what} needs ({})", a.message()),
            format!("give the token the scopes {SCOPES}"),
        ),
        _ => return None,
    };
    Some(HoneError::new(Code::Forge, message).hint(hint))
}

/// The token's user (`GET /user`): its id and login. hone's own comments are the ones it wrote.
pub async fn whoami(fj: &Forgejo) -> Result<(u64, String)> {
    let me = fj.get("/user").await?;
    match (me.body["id"].as_u64(), me.body["login"].as_str()) {
        (Some(id), Some(login)) if me.ok() && !login.is_empty() => Ok((id, login.to_string())),
        _ => {
            Err(HoneError::new(Code::Forge, format!("Forgejo would not say who the token's user is: {}", me.message()))
                .hint("give the token the `read:user` scope"))
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
