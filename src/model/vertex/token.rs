//! What every Google token request shares: the URL rule (https, or http to this machine), one
//! bounded request, and the answer read as an access token with its lifetime. A refusal (4xx) is
//! a permanent `Auth` error naming the credentials and what to check; an endpoint that is down
//! or busy (5xx, 429, no connection) is retryable, like any model request.

use crate::model::auth::{Expiring, refused};
use crate::model::{ModelError, ModelErrorKind, http};
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// The scope every token is asked for: Vertex AI accepts `cloud-platform`.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// A token request (and the subject token of workload identity federation) gets this long.
const LIMIT: Duration = Duration::from_secs(60);

/// A token endpoint's answer is a few hundred bytes; more than this is not one.
const MAX_ANSWER: usize = 1 << 20;

/// A POST of `pairs` as a form (`application/x-www-form-urlencoded`) to `url`.
pub fn post_form(http: &reqwest::Client, url: &str, pairs: &[(&str, &str)]) -> reqwest::RequestBuilder {
    http.post(url).form(pairs)
}

pub use crate::model::http::https_or_loopback;

/// Which credentials a token request is for, in its errors: their type, where they came from,
/// and what to check when the endpoint refuses them.
#[derive(Clone, Debug)]
pub struct Context {
    pub kind: &'static str,
    pub origin: String,
    pub check: &'static str,
}

impl Context {
    fn name(&self) -> String {
        format!("Google `{}` credentials ({})", self.kind, self.origin)
    }

    /// The permanent error for an endpoint that refused these credentials.
    pub fn refused(&self, url: &str, detail: impl std::fmt::Display) -> ModelError {
        refused(&self.name(), format!("{url} refused them ({detail}); check {}", self.check))
    }

    fn retryable(&self, kind: ModelErrorKind, detail: String, retry_after: Option<Duration>) -> ModelError {
        ModelError::Retryable { kind, message: format!("{}: {detail}", self.name()), retry_after }
    }
}

/// Send one token request to `url` and read its JSON answer.
pub async fn send(ctx: &Context, url: &str, rb: reqwest::RequestBuilder) -> Result<Value, ModelError> {
    let text = send_text(ctx, url, rb).await?;
    serde_json::from_str(&text).map_err(|_| ctx.refused(url, "its answer was not JSON"))
}

/// Send one request to `url` and read its answer as text (at most 1 MiB).
pub async fn send_text(ctx: &Context, url: &str, rb: reqwest::RequestBuilder) -> Result<String, ModelError> {
    let resp = match tokio::time::timeout(LIMIT, rb.timeout(LIMIT).send()).await {
        Err(_) => {
            let why = format!("{url} did not answer within {}s", LIMIT.as_secs());
            return Err(ctx.retryable(ModelErrorKind::Timeout, why, None));
        }
        Ok(Err(e)) => {
            let kind = http::transport_error(&e).kind();
            return Err(ctx.retryable(kind, format!("cannot reach {url}: {e}"), None));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if status.is_redirection() {
        return Err(ctx.refused(url, format!("HTTP {}: a redirect, which hone does not follow", status.as_u16())));
    }
    let retry_after = http::retry_after(resp.headers());
    // Read only as far as the cap: a flood is not held in memory first.
    let (body, broke) = http::body_prefix(resp, MAX_ANSWER).await;
    if let Some(e) = broke {
        return Err(ctx.retryable(ModelErrorKind::StreamCut, format!("the answer of {url} broke: {e}"), None));
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    if status.as_u16() == 429 || status.is_server_error() {
        let kind = if status.as_u16() == 429 { ModelErrorKind::RateLimited } else { ModelErrorKind::ServerError };
        let why = format!("{url} answered HTTP {}: {}", status.as_u16(), detail(&text));
        return Err(ctx.retryable(kind, why, retry_after));
    }
    if !status.is_success() {
        return Err(ctx.refused(url, format!("HTTP {}: {}", status.as_u16(), detail(&text))));
    }
    Ok(text)
}

/// What a refusal says: OAuth's `error` and `error_description`, or Google's `error.message`,
/// or the start of the body.
pub fn detail(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let s = |v: &Value| v.as_str().map(str::to_string);
    let said = match v.get("error") {
        Some(Value::String(code)) => {
            Some(v.get("error_description").and_then(s).map_or_else(|| code.clone(), |d| format!("{code}: {d}")))
        }
        Some(e @ Value::Object(_)) => e.get("message").and_then(s).map(|m| match e.get("status").and_then(s) {
            Some(st) => format!("{st}: {m}"),
            None => m,
        }),
        _ => None,
    };
    let said = said.unwrap_or_else(|| text.trim().to_string());
    let said: String = said.chars().take(300).collect();
    if said.is_empty() { "no reason given".into() } else { said }
}

/// The access token in `v[field]` (`access_token`, or `accessToken` from IAM), living
/// `expires_in` seconds from `now` (an hour when the answer does not say).
pub fn access_token(
    ctx: &Context,
    url: &str,
    v: &Value,
    field: &str,
    now: SystemTime,
) -> Result<Expiring<String>, ModelError> {
    let Some(token) = v.get(field).and_then(Value::as_str).filter(|t| !t.trim().is_empty()) else {
        return Err(ctx.refused(url, format!("its answer had no `{field}`")));
    };
    let secs = match v.get("expires_in") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    let life = Duration::from_secs(secs.unwrap_or(3600).min(24 * 3600));
    Ok(Expiring { value: token.to_string(), expires_at: Some(now + life) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_https_or_loopback() {
        for ok in
            ["https://oauth2.googleapis.com/token", "http://127.0.0.1:8080/t", "http://[::1]:1/t", "http://localhost/t"]
        {
            assert!(https_or_loopback(ok), "{ok}");
        }
        for bad in
            ["http://oauth2.googleapis.com/token", "http://10.0.0.1/t", "ftp://x/y", "file:///etc/passwd", "nonsense"]
        {
            assert!(!https_or_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn refusals_say_what_the_endpoint_said() {
        assert_eq!(
            detail(r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#),
            "invalid_grant: Invalid JWT Signature."
        );
        assert_eq!(
            detail(r#"{"error":{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}}"#),
            "PERMISSION_DENIED: Permission denied"
        );
        assert_eq!(detail(""), "no reason given");
        assert_eq!(detail(&"x".repeat(1000)).len(), 300);
    }

    #[test]
    fn tokens_and_their_lifetime() {
        let ctx = Context { kind: "service_account", origin: "f.json".into(), check: "the key" };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let t = access_token(&ctx, "u", &json!({"access_token": "ya29.x", "expires_in": 1799}), "access_token", now)
            .unwrap();
        assert_eq!((t.value.as_str(), t.expires_at), ("ya29.x", Some(now + Duration::from_secs(1799))));
        let t = access_token(&ctx, "u", &json!({"access_token": "ya29.x"}), "access_token", now).unwrap();
        assert_eq!(t.expires_at, Some(now + Duration::from_secs(3600)));
        let Err(e) = access_token(&ctx, "u", &json!({"token_type": "Bearer"}), "access_token", now) else {
            panic!("no token in the answer")
        };
        assert_eq!((e.class(), e.kind()), ("permanent", ModelErrorKind::Auth));
        assert!(e.to_string().contains("`service_account`") && e.to_string().contains("f.json"), "{e}");
    }
}
