//! The App's requests to GitHub's API (`GITHUB_API_URL`): the installation for a repository,
//! an installation token for one repository, the App's name, and its bot user's id. Each has a
//! time limit within the run's deadline and obeys its cancellation; an answer is read no further
//! than 64 KiB, and what it says is checked before hone uses it (a token of token characters
//! only, a name GitHub would give).

use super::errors::{Step, refused};
use super::permissions::Permissions;
use crate::error::{Code, HoneError, Result};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// The longest one request may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);
/// The most of an answer read.
const MAX_BODY: usize = 64 * 1024;

/// An installation token, and when GitHub says it expires.
#[derive(Clone)]
pub struct Minted {
    pub token: String,
    pub expires_at: SystemTime,
}

/// The API at `base` (no trailing `/`), for one caller's deadline and cancellation.
pub struct Api<'a> {
    pub http: &'a reqwest::Client,
    pub base: &'a str,
    pub app_id: &'a str,
    pub bound: &'a crate::bound::Bound,
}

impl Api<'_> {
    /// `GET /repos/{owner}/{repo}/installation`: the id of the App's installation there.
    pub async fn installation(&self, jwt: &str, owner: &str, repo: &str) -> Result<u64> {
        let step = Step::Installation { owner, repo };
        let path = format!("/repos/{}/{}/installation", encode(owner), encode(repo));
        let body = self.ok(step, self.call(Method::GET, &path, jwt, None).await?)?;
        body["id"].as_u64().ok_or_else(|| self.malformed(step, "no installation `id`"))
    }

    /// `POST /app/installations/{id}/access_tokens`: a token for `repo` alone, with `permissions`.
    pub async fn mint(&self, jwt: &str, installation: u64, owner: &str, repo: &str, p: &Permissions) -> Result<Minted> {
        let step = Step::Mint { owner, repo, permissions: p };
        let path = format!("/app/installations/{installation}/access_tokens");
        let ask = json!({"repositories": [repo], "permissions": p.json()});
        let body = self.ok(step, self.call(Method::POST, &path, jwt, Some(&ask)).await?)?;
        let token =
            body["token"].as_str().filter(|t| is_token(t)).ok_or_else(|| self.malformed(step, "no usable `token`"))?;
        let expires_at = body["expires_at"]
            .as_str()
            .and_then(|s| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok())
            .map(|t| SystemTime::UNIX_EPOCH + Duration::from_secs(t.unix_timestamp().max(0) as u64))
            .ok_or_else(|| self.malformed(step, "no RFC 3339 `expires_at`"))?;
        Ok(Minted { token: token.to_string(), expires_at })
    }

    /// `GET /app`: the App's slug (its bot user is `{slug}[bot]`).
    pub async fn slug(&self, jwt: &str) -> Result<String> {
        let body = self.ok(Step::App, self.call(Method::GET, "/app", jwt, None).await?)?;
        let slug = body["slug"].as_str().filter(|s| super::super::is_name(s));
        slug.map(str::to_string).ok_or_else(|| self.malformed(Step::App, "no usable `slug`"))
    }

    /// `GET /users/{login}`: the id of the App's bot user.
    pub async fn user_id(&self, token: &str, login: &str) -> Result<u64> {
        let step = Step::Bot { login };
        let body = self.ok(step, self.call(Method::GET, &format!("/users/{}", encode(login)), token, None).await?)?;
        body["id"].as_u64().ok_or_else(|| self.malformed(step, "no user `id`"))
    }

    /// The answer's body when its status is a success; else the refusal, said for `step`.
    fn ok(&self, step: Step<'_>, a: Answer) -> Result<Value> {
        if (200..300).contains(&a.status) { Ok(a.body) } else { Err(refused(self.app_id, step, a.status, &a.body)) }
    }

    fn malformed(&self, step: Step<'_>, what: &str) -> HoneError {
        super::errors::malformed(self.app_id, step, what)
    }

    /// One request with `bearer`: its status and JSON body (`null` when it is not JSON).
    async fn call(&self, method: Method, path: &str, bearer: &str, body: Option<&Value>) -> Result<Answer> {
        let limit = self.bound.deadline.saturating_duration_since(Instant::now()).min(REQUEST_LIMIT);
        if limit.is_zero() {
            return Err(HoneError::new(Code::Budget, "the run's wall time ran out before GitHub gave the App's token"));
        }
        let mut rb = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(bearer)
            .header(reqwest::header::ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .timeout(limit);
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let exchange = async {
            let resp = rb.send().await.map_err(|e| self.unreachable(&method, path, &e.to_string()))?;
            let status = resp.status().as_u16();
            let (bytes, _) = crate::model::http::body_prefix(resp, MAX_BODY).await;
            Ok(Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
        };
        tokio::select! {
            () = self.bound.cancel.cancelled() => {
                Err(HoneError::new(Code::Cancelled, "cancelled while GitHub was asked for the App's token"))
            }
            r = tokio::time::timeout(limit, exchange) => {
                r.unwrap_or_else(|_| Err(self.unreachable(&method, path, &format!("no answer within {}s", limit.as_secs()))))
            }
        }
    }

    fn unreachable(&self, method: &Method, path: &str, why: &str) -> HoneError {
        // reqwest's errors name the URL, never a header: neither the JWT nor a token is in `why`.
        HoneError::new(Code::Forge, format!("GitHub App {}: {method} {}{path} failed: {why}", self.app_id, self.base))
            .hint("check GITHUB_API_URL and the network; hone tries again on its next run")
    }
}

/// GitHub's answer to one request: its status and JSON body (`null` when it is not JSON).
struct Answer {
    status: u16,
    body: Value,
}

/// Whether GitHub's answer is a token hone may hand to git and put in a header: 1 to 512
/// letters, digits, `_`, `-` and `.` (GitHub's are `ghs_` and base62).
pub fn is_token(t: &str) -> bool {
    (1..=512).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A name as one path segment (`[bot]` included).
fn encode(s: &str) -> String {
    super::super::encode(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_token_characters_reach_git_and_headers() {
        assert!(is_token("ghs_16C7e42F292c6912E7710c838347Ae178B4a"));
        for bad in ["", "a b", "tok\nhost=evil.example", "tok\r\n", "t\u{e9}", &"a".repeat(513), "x;y"] {
            assert!(!is_token(bad), "{bad:?}");
        }
        assert_eq!(encode("hone-bot[bot]"), "hone-bot%5Bbot%5D");
    }
}
