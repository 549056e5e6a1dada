//! A small GitHub REST client on reqwest (`crate::net`'s client: the environment's proxy and CA
//! bundle, no redirect followed, so that neither the token nor a PR body rides one elsewhere):
//! it paces mutating requests (one at a time, at least 1 s apart), honours `Retry-After` and
//! `x-ratelimit-reset`, backs off on secondary rate limits, and counts its retries. Every request
//! has a time limit and reads at most `MAX_BODY` of the answer. `GITHUB_API_URL` (GitHub
//! Enterprise Server) is the base.

pub mod api;
pub mod app;
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

use crate::error::{Code, HoneError, Result};
use http::Method;
use serde_json::Value;
use std::sync::atomic::AtomicU32;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// The longest one request may take, its answer read whole.
const REQUEST_LIMIT: Duration = Duration::from_secs(60);
/// The most of an answer hone reads (a list of pull requests with their bodies is far less).
const MAX_BODY: usize = 8 * 1024 * 1024;

pub struct GitHub {
    http: reqwest::Client,
    base: String,
    /// `Authorization`'s value, marked sensitive (never logged by reqwest or hyper).
    auth: http::HeaderValue,
    pub owner: String,
    pub repo: String,
    pub retries: AtomicU32,
    /// The queue for mutating requests shared by every run of the process (a fleet runs many
    /// repositories at once): it serializes them and remembers when the last one went out.
    queue: std::sync::Arc<Mutex<Option<Instant>>>,
}

pub struct Resp {
    pub status: u16,
    pub body: Value,
}

impl Resp {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
    pub fn message(&self) -> String {
        if (300..400).contains(&self.status) {
            return format!(
                "HTTP {}: the GitHub API answered with a redirect, which hone does not follow (the token and the request would go with it); set GITHUB_API_URL to the API's own address",
                self.status
            );
        }
        let m = self.body.get("message").and_then(Value::as_str).unwrap_or("");
        let errs = self.body.get("errors").map(Value::to_string).unwrap_or_default();
        format!("HTTP {}: {m} {errs}", self.status).trim().to_string()
    }
}

/// How long a rate-limited response asks us to wait, if it is one.
pub fn rate_limit_wait(status: u16, headers: &http::HeaderMap, body: &str, now_unix: u64) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    let secondary = body.to_lowercase().contains("secondary rate limit");
    let exhausted = get("x-ratelimit-remaining") == Some("0");
    if !(status == 429 || (status == 403 && (secondary || exhausted || get("retry-after").is_some()))) {
        return None;
    }
    if let Some(s) = get("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(s));
    }
    if let Some(reset) = get("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(reset.saturating_sub(now_unix).max(1)));
    }
    // GitHub's advice for secondary limits without headers: wait at least a minute.
    Some(Duration::from_secs(60))
}

impl GitHub {
    pub fn new(
        api_base: &str,
        token: &str,
        owner: &str,
        repo: &str,
        queue: std::sync::Arc<Mutex<Option<Instant>>>,
    ) -> Result<GitHub> {
        if !is_name(owner) || !is_name(repo) {
            return Err(HoneError::new(
                Code::Forge,
                format!("`{owner}/{repo}` is not a valid GitHub repository: an owner and a repository name are letters, digits, `.`, `_` and `-` (not `.` or `..`)"),
            )
            .hint("set GITHUB_REPOSITORY=owner/repo, or point the remote at the repository's GitHub URL"));
        }
        let mut gh = GitHub::account(api_base, token, queue)?;
        (gh.owner, gh.repo) = (owner.into(), repo.into());
        Ok(gh)
    }

    /// A client for requests about no one repository (listing an organisation, a search):
    /// `repo_path` is not for it.
    pub fn account(api_base: &str, token: &str, queue: std::sync::Arc<Mutex<Option<Instant>>>) -> Result<GitHub> {
        let base = api_base.trim_end_matches('/').to_string();
        // The token goes over https, or in clear only to this machine (a stand-in, a local gateway).
        if !crate::model::http::https_or_loopback(&base) {
            return Err(HoneError::new(
                Code::Spec,
                format!("bad GitHub API URL `{base}`: hone sends the token only over https"),
            )
            .hint(
                "set GITHUB_API_URL to the API's https:// address (on GitHub Enterprise Server, https://HOST/api/v3)",
            ));
        }
        let mut auth = http::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            HoneError::new(Code::Forge, "the GitHub token is not a valid header value")
                .hint("check the token variable for stray characters")
        })?;
        auth.set_sensitive(true);
        let http = crate::net::builder(&base)?
            .timeout(REQUEST_LIMIT)
            .build()
            .map_err(|e| HoneError::new(Code::Io, format!("cannot set up the GitHub client: {e}")))?;
        Ok(GitHub { http, base, auth, owner: String::new(), repo: String::new(), retries: AtomicU32::new(0), queue })
    }

    /// `/repos/{owner}/{repo}` + `rest` (owner and repo are GitHub names, encoded all the same).
    pub fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}/{}{rest}", encode(&self.owner), encode(&self.repo))
    }

    pub async fn get(&self, path: &str) -> Result<Resp> {
        self.call(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Result<Resp> {
        self.call(Method::POST, path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: &Value) -> Result<Resp> {
        self.call(Method::PATCH, path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: &Value) -> Result<Resp> {
        self.call(Method::PUT, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> Result<Resp> {
        self.call(Method::DELETE, path, None).await
    }

    /// The same client (connections, token, API, mutation queue) for another repository.
    pub fn with_repo(&self, owner: &str, repo: &str) -> Result<GitHub> {
        if !is_name(owner) || !is_name(repo) {
            return Err(HoneError::new(
                Code::Forge,
                format!(
                    "`{owner}/{repo}` is not a valid GitHub repository: an owner and a repository name are letters, digits, `.`, `_` and `-` (not `.` or `..`)"
                ),
            ));
        }
        Ok(GitHub {
            http: self.http.clone(),
            base: self.base.clone(),
            auth: self.auth.clone(),
            owner: owner.into(),
            repo: repo.into(),
            retries: AtomicU32::new(0),
            queue: self.queue.clone(),
        })
    }

    /// POST a GraphQL document to the API's GraphQL endpoint: `{api}/graphql`, or on GitHub
    /// Enterprise Server (`https://HOST/api/v3`) `https://HOST/api/graphql`. Same server, same token.
    pub async fn graphql(&self, query: &str, variables: &Value) -> Result<Resp> {
        let root = self.base.strip_suffix("/v3").unwrap_or(&self.base);
        let url = format!("{root}/graphql");
        let body = serde_json::json!({"query": query, "variables": variables});
        self.send(Method::POST, &url, "/graphql", Some(&body)).await
    }

    /// A GraphQL query that changes nothing: sent at once, not paced as mutations are.
    pub async fn graphql_query(&self, query: &str, variables: &Value) -> Result<Resp> {
        let root = self.base.strip_suffix("/v3").unwrap_or(&self.base);
        let url = format!("{root}/graphql");
        let body = serde_json::json!({"query": query, "variables": variables});
        self.send_as(Method::POST, &url, "/graphql", Some(&body), false).await
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Resp> {
        let url = format!("{}{path}", self.base);
        self.send(method, &url, path, body).await
    }

    async fn send(&self, method: Method, url: &str, path: &str, body: Option<&Value>) -> Result<Resp> {
        let mutating = method != Method::GET;
        self.send_as(method, url, path, body, mutating).await
    }

    /// A request, in the queue of mutating requests (one at a time, paced) when `mutating`.
    async fn send_as(
        &self,
        method: Method,
        url: &str,
        path: &str,
        body: Option<&Value>,
        mutating: bool,
    ) -> Result<Resp> {
        let what = format!("GitHub {method} {path}");
        super::pace::paced(&self.queue, mutating, &self.retries, &what, async || {
            let (status, headers, text) = match tokio::time::timeout(REQUEST_LIMIT, self.once(&method, url, body)).await
            {
                Ok(r) => r.map_err(|e| self.failed(&method, path, &e))?,
                Err(_) => {
                    return Err(HoneError::new(
                        Code::Io,
                        format!(
                            "GitHub request {method} {path} got no whole answer within {}s",
                            REQUEST_LIMIT.as_secs()
                        ),
                    )
                    .hint("check the network, the proxy (HTTPS_PROXY) and GITHUB_API_URL"));
                }
            };
            let text = text.ok_or_else(|| {
                HoneError::new(
                    Code::Forge,
                    format!("GitHub's answer to {method} {path} is larger than {} MiB", MAX_BODY >> 20),
                )
            })?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let wait = rate_limit_wait(status, &headers, &text, now);
            let answer = Resp { status, body: serde_json::from_str(&text).unwrap_or(Value::Null) };
            Ok(super::pace::Sent { answer, wait })
        })
        .await
    }

    /// One request: its status, headers and body (`None` when longer than `MAX_BODY`).
    async fn once(
        &self,
        method: &Method,
        url: &str,
        body: Option<&Value>,
    ) -> std::result::Result<(u16, http::HeaderMap, Option<String>), reqwest::Error> {
        let mut rb = self
            .http
            .request(method.clone(), url)
            .header(http::header::AUTHORIZATION, self.auth.clone())
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = rb.send().await?;
        let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
        let (bytes, broke) = crate::model::http::body_prefix(resp, MAX_BODY + 1).await;
        if let Some(e) = broke {
            return Err(e);
        }
        let text = (bytes.len() <= MAX_BODY).then(|| String::from_utf8_lossy(&bytes).into_owned());
        Ok((status, headers, text))
    }

    /// The error for a request that got no answer: a refused certificate says what to do.
    fn failed(&self, method: &Method, path: &str, e: &reqwest::Error) -> HoneError {
        if let Some(why) = crate::net::untrusted_certificate(e) {
            return HoneError::new(
                Code::Forge,
                crate::net::untrusted_message(&format!("the GitHub API at {}", self.base), &why),
            );
        }
        // reqwest's errors name the URL, never a header: the token cannot appear here.
        HoneError::new(Code::Io, format!("GitHub request {method} {path} failed: {e}"))
            .hint("check the network, the proxy (HTTPS_PROXY, NO_PROXY) and GITHUB_API_URL")
    }
}

/// Whether `s` is an owner or repository name GitHub gives: ASCII letters, digits, `.`, `_` and
/// `-`, at most 100, and not `.` or `..`. Anything else could be more path or query in an API URL.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `s` as one path segment or query value: everything but unreserved characters is encoded.
pub fn encode(s: &str) -> String {
    const SET: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    percent_encoding::utf8_percent_encode(s, SET).to_string()
}

/// `owner/repo` from `GITHUB_REPOSITORY`, or from a GitHub remote URL. Not checked here:
/// `GitHub::new` refuses a name GitHub would not give (`is_name`).
pub fn owner_repo(env_repo: Option<&str>, remote_url: Option<&str>) -> Option<(String, String)> {
    if let Some((o, r)) = env_repo.and_then(|s| s.split_once('/')) {
        return Some((o.to_string(), r.to_string()));
    }
    let shown = super::credential::without_userinfo(remote_url?);
    let url = shown.trim_end_matches('/').trim_end_matches(".git");
    let tail = url.rsplit_once(':').map(|(_, t)| t).filter(|_| url.starts_with("git@")).unwrap_or(url);
    let parts: Vec<&str> = tail.rsplit('/').take(2).collect();
    match parts.as_slice() {
        [repo, owner] if !owner.is_empty() && !repo.is_empty() => Some((owner.to_string(), repo.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_answers() {
        let mut h = http::HeaderMap::new();
        assert_eq!(rate_limit_wait(403, &h, "Resource not accessible", 0), None);
        assert_eq!(
            rate_limit_wait(403, &h, "You have exceeded a secondary rate limit", 0),
            Some(Duration::from_secs(60))
        );
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(rate_limit_wait(403, &h, "", 0), Some(Duration::from_secs(3)));
        let mut h = http::HeaderMap::new();
        h.insert("x-ratelimit-remaining", "0".parse().unwrap());
        h.insert("x-ratelimit-reset", "1010".parse().unwrap());
        assert_eq!(rate_limit_wait(403, &h, "", 1000), Some(Duration::from_secs(10)));
        assert_eq!(rate_limit_wait(429, &http::HeaderMap::new(), "", 0), Some(Duration::from_secs(60)));
        assert_eq!(rate_limit_wait(422, &h, "", 0), None);
    }

    #[test]
    fn owner_and_repo_from_env_or_remote() {
        assert_eq!(owner_repo(Some("acme/app"), None), Some(("acme".into(), "app".into())));
        for url in [
            "https://github.com/acme/app.git",
            "https://github.com/acme/app",
            "git@github.com:acme/app.git",
            "ssh://git@github.example.com/acme/app.git",
            "https://x-access-token:pw@github.com/acme/app.git",
        ] {
            assert_eq!(owner_repo(None, Some(url)), Some(("acme".into(), "app".into())), "{url}");
        }
        assert_eq!(owner_repo(None, None), None);
        assert_eq!(owner_repo(None, Some("https://user:pw@host/app")), Some(("host".into(), "app".into())));
    }

    #[test]
    fn only_github_names_reach_an_api_url() {
        for ok in ["acme", "app.js", "my_repo-2", "-x", ".github"] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "app?x=1", "app#f", "a/b", "a b", "a%2e", "\u{e9}", &"a".repeat(101)] {
            assert!(!is_name(bad), "{bad}");
        }
        let q = std::sync::Arc::new(Mutex::new(None));
        for (owner, repo) in [("acme", "app?x=1"), ("acme", ".."), ("ac/me", "app")] {
            let e = GitHub::new("https://api.github.com", "t", owner, repo, q.clone()).err().unwrap();
            assert!(e.message.contains("not a valid GitHub repository"), "{}", e.message);
        }
        assert_eq!(encode("acme:hone/a&state=closed#x"), "acme%3Ahone%2Fa%26state%3Dclosed%23x");
        assert_eq!(encode("app.js_x-y~"), "app.js_x-y~");
    }
}
