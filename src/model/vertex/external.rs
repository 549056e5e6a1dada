//! Workload identity federation (`external_account`, what `google-github-actions/auth` writes):
//! a subject token from a file or a URL (GitHub's OIDC token), exchanged at Google's STS for an
//! access token, then, when the file names a service account to impersonate, exchanged again at
//! IAM's `generateAccessToken` for that account's token. Every token on the way is registered
//! with the redactor before it is used.

use super::credfile::{ExternalAccount, Format, Subject};
use super::token::{self, Context, SCOPE};
use crate::model::ModelError;
use crate::model::auth::{Expiring, Source};
use crate::redact::Redactor;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

const KIND: &str = "external_account";

/// The exchange of one `external_account` file.
pub struct ExternalGrant {
    http: reqwest::Client,
    account: ExternalAccount,
    subject: Subject,
    redactor: Redactor,
    origin: String,
}

impl ExternalGrant {
    pub fn new(
        http: reqwest::Client,
        account: ExternalAccount,
        subject: Subject,
        redactor: Redactor,
        origin: String,
    ) -> Self {
        ExternalGrant { http, account, subject, redactor, origin }
    }

    fn ctx(&self, check: &'static str) -> Context {
        Context { kind: KIND, origin: self.origin.clone(), check }
    }

    /// The subject token, as its source gives it now.
    async fn subject_token(&self) -> Result<String, ModelError> {
        let (raw, format, ctx, place) = match &self.subject {
            Subject::File { path, format } => {
                let ctx = self.ctx("that the subject token file exists and is current");
                let place = path.display().to_string();
                let bytes = super::adc::read_small(path)
                    .map_err(|e| ctx.refused(&format!("the subject token file {place}"), e))?;
                (String::from_utf8_lossy(&bytes).into_owned(), format, ctx, place)
            }
            Subject::Url { url, headers, format } => {
                let ctx = self.ctx(
                    "that the subject token URL answers (in GitHub Actions the job needs `permissions: id-token: write`)",
                );
                let mut rb = self.http.get(url);
                for (k, v) in headers {
                    rb = rb.header(k, v);
                }
                (token::send_text(&ctx, url, rb).await?, format, ctx, url.clone())
            }
        };
        let value = match format {
            Format::Text => Some(raw.trim().to_string()),
            Format::Json(field) => serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| v.get(field).and_then(Value::as_str).map(|s| s.trim().to_string())),
        };
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return Err(ctx.refused(&place, "it gave no subject token in the format the credentials file names"));
        };
        self.redactor.add(&value);
        Ok(value)
    }

    /// STS: the subject token for a federated access token.
    async fn sts(&self, subject: &str, now: SystemTime) -> Result<Expiring<String>, ModelError> {
        let ctx = self.ctx(
            "that the workload identity pool provider in `audience` exists and accepts this token (its issuer, audience and attribute condition), and that `subject_token_type` is right",
        );
        let a = &self.account;
        let options = a.workforce_pool_user_project.as_ref().map(|p| json!({"userProject": p}).to_string());
        let mut form = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("audience", a.audience.as_str()),
            ("scope", SCOPE),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
            ("subject_token", subject),
            ("subject_token_type", a.subject_token_type.as_str()),
        ];
        if let Some(o) = &options {
            form.push(("options", o));
        }
        let rb = token::post_form(&self.http, &a.token_url, &form);
        let v = token::send(&ctx, &a.token_url, rb).await?;
        token::access_token(&ctx, &a.token_url, &v, "access_token", now)
    }

    /// IAM: the federated token for the impersonated service account's own token.
    async fn impersonate(&self, url: &str, federated: &str, now: SystemTime) -> Result<Expiring<String>, ModelError> {
        let ctx = self.ctx(
            "that the pool's principal may impersonate the service account (roles/iam.workloadIdentityUser on it) and that the account exists",
        );
        let lifetime = self.account.service_account_impersonation.as_ref().and_then(|i| i.token_lifetime_seconds);
        let lifetime = lifetime.unwrap_or(3600).clamp(600, 43_200);
        let body = json!({"scope": [SCOPE], "lifetime": format!("{lifetime}s")});
        let rb = self.http.post(url).bearer_auth(federated).json(&body);
        let v = token::send(&ctx, url, rb).await?;
        let mut t = token::access_token(&ctx, url, &v, "accessToken", now)?;
        t.expires_at = Some(expire_time(&v).unwrap_or(now + Duration::from_secs(lifetime)));
        Ok(t)
    }

    async fn exchange(&self) -> Result<Expiring<String>, ModelError> {
        let now = SystemTime::now();
        let subject = self.subject_token().await?;
        let federated = self.sts(&subject, now).await?;
        let Some(url) = &self.account.service_account_impersonation_url else {
            return Ok(federated);
        };
        self.redactor.add(&federated.value);
        self.impersonate(url, &federated.value, now).await
    }
}

/// IAM's `expireTime` (RFC 3339).
fn expire_time(v: &Value) -> Option<SystemTime> {
    let s = v.get("expireTime")?.as_str()?;
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(SystemTime::from(t))
}

impl Source<String> for ExternalGrant {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
        Box::pin(self.exchange())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iam_expire_time_is_read() {
        let t = expire_time(&json!({"accessToken": "x", "expireTime": "2030-01-02T03:04:05Z"})).unwrap();
        let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_893_553_445);
        assert!(expire_time(&json!({"expireTime": "tomorrow"})).is_none());
    }
}
