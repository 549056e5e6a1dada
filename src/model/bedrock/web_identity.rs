//! Temporary AWS credentials for a web identity (the OIDC token CI writes to a file, as GitHub
//! Actions' and EKS's service-account tokens are): STS `AssumeRoleWithWebIdentity`, an unsigned
//! form POST, answered in XML. The token file is read again for every fetch (it is rotated),
//! and the token and the credentials are registered with the redactor before anything else.

use super::sigv4::Credentials;
use crate::model::ModelError;
use crate::model::auth::{Expiring, Source, refused};
use crate::protocol::ModelErrorKind;
use crate::redact::Redactor;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// A token file larger than this is not a token.
pub const MAX_TOKEN: u64 = 64 << 10;
/// STS answers in well under this.
const STS_TIMEOUT: Duration = Duration::from_secs(60);

/// The role to assume with the token in `token_file`, at the STS endpoint `url`.
pub struct WebIdentity {
    pub http: reqwest::Client,
    pub url: String,
    pub role_arn: String,
    pub session_name: String,
    pub token_file: PathBuf,
    pub redactor: Redactor,
}

impl Source<Credentials> for WebIdentity {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<Credentials>, ModelError>> {
        Box::pin(self.assume())
    }
}

impl WebIdentity {
    async fn assume(&self) -> Result<Expiring<Credentials>, ModelError> {
        let token = self.token().await?;
        self.redactor.add(token.trim());
        let form = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", self.role_arn.as_str()),
            ("RoleSessionName", self.session_name.as_str()),
            ("WebIdentityToken", token.trim()),
        ];
        let rb = self.http.post(&self.url).form(&form);
        let resp = crate::model::http::send(rb, STS_TIMEOUT, false).await?;
        let status = resp.status().as_u16();
        // STS's answer is a few KiB: read no further than the cap.
        let (body, broke) = crate::model::http::body_prefix(resp, crate::model::http::BODY_TEXT_MAX).await;
        if let Some(e) = broke {
            return Err(crate::model::http::transport_error(&e));
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        parse_answer(status, &text, &self.role_arn)
    }

    async fn token(&self) -> Result<String, ModelError> {
        let file = self.token_file.display();
        let path = self.token_file.clone();
        let read = tokio::task::spawn_blocking(move || crate::safe_fs::read_small(&path, MAX_TOKEN)).await;
        let bytes = match read {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(refused("the web identity token file", format!("{file}: {e}"))),
            Err(e) => return Err(refused("the web identity token file", format!("{file}: {e}"))),
        };
        let token = String::from_utf8_lossy(&bytes).into_owned();
        if token.trim().is_empty() {
            return Err(refused("the web identity token file", format!("{file} is empty")));
        }
        Ok(token)
    }
}

/// STS's answer: the credentials and their expiry, or the error it gave.
pub fn parse_answer(status: u16, xml: &str, role: &str) -> Result<Expiring<Credentials>, ModelError> {
    let doc = roxmltree::Document::parse(xml).ok();
    let text = |name: &str| {
        doc.as_ref()?
            .descendants()
            .find(|n| n.tag_name().name() == name)
            .and_then(|n| n.text())
            .map(|t| t.trim().to_string())
    };
    if !(200..300).contains(&status) {
        let code = text("Code").unwrap_or_default();
        let message = text("Message").unwrap_or_else(|| xml.chars().take(300).collect());
        let detail = format!("HTTP {status} {code}: {message}");
        let retry = status == 429
            || status >= 500
            || matches!(
                code.as_str(),
                "Throttling" | "ThrottlingException" | "RequestLimitExceeded" | "IDPCommunicationError"
            );
        return Err(if retry {
            ModelError::retryable(ModelErrorKind::Auth, format!("STS AssumeRoleWithWebIdentity: {detail}"))
        } else {
            refused(&format!("STS refused to assume {role} with the web identity token"), detail)
        });
    }
    let (Some(id), Some(secret), Some(token)) = (text("AccessKeyId"), text("SecretAccessKey"), text("SessionToken"))
    else {
        return Err(ModelError::retryable(ModelErrorKind::Auth, "STS answered without credentials"));
    };
    let expires_at = text("Expiration").and_then(|e| {
        time::OffsetDateTime::parse(&e, &time::format_description::well_known::Rfc3339).ok().map(SystemTime::from)
    });
    Ok(Expiring {
        value: Credentials { access_key_id: id, secret_access_key: secret, session_token: Some(token) },
        // No expiry given: assume STS's shortest session, an hour from now.
        expires_at: Some(expires_at.unwrap_or_else(|| SystemTime::now() + Duration::from_secs(3600))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ANSWER: &str = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>repo:o/r:ref:refs/heads/main</SubjectFromWebIdentityToken>
    <Credentials>
      <SessionToken>FQoGZXIvYXdzEXAMPLETOKEN</SessionToken>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <Expiration>2030-10-24T23:00:23Z</Expiration>
      <AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>"#;

    #[test]
    fn credentials_and_expiry_from_the_answer() {
        let c = parse_answer(200, ANSWER, "r").unwrap();
        assert_eq!(c.value.access_key_id, "ASIAIOSFODNN7EXAMPLE");
        assert_eq!(c.value.secret_access_key, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
        assert_eq!(c.value.session_token.as_deref(), Some("FQoGZXIvYXdzEXAMPLETOKEN"));
        let want = time::macros::datetime!(2030-10-24 23:00:23 UTC);
        assert_eq!(c.expires_at, Some(SystemTime::from(want)));
    }

    #[test]
    fn sts_errors_by_class() {
        let err = |code: &str| {
            format!(
                "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>no way</Message></Error></ErrorResponse>"
            )
        };
        let e = parse_answer(400, &err("InvalidIdentityToken"), "arn:aws:iam::1:role/ci").err().unwrap();
        assert_eq!((e.class(), e.kind()), ("permanent", ModelErrorKind::Auth));
        assert!(
            e.to_string().contains("arn:aws:iam::1:role/ci") && e.to_string().contains("InvalidIdentityToken: no way"),
            "{e}"
        );
        assert_eq!(parse_answer(403, &err("AccessDenied"), "r").err().unwrap().class(), "permanent");
        assert_eq!(parse_answer(400, &err("Throttling"), "r").err().unwrap().class(), "retryable");
        assert_eq!(parse_answer(503, "<html/>", "r").err().unwrap().class(), "retryable");
        assert_eq!(parse_answer(200, "<x/>", "r").err().unwrap().kind(), ModelErrorKind::Auth);
    }

    proptest! {
        /// Whatever STS (or something in its place) answers, no panic.
        #[test]
        fn any_answer_never_panics(status in 100u16..600, body in "\\PC{0,300}", cut in 0usize..900) {
            let _ = parse_answer(status, &body, "r");
            let prefix: String = ANSWER.chars().take(cut).collect();
            let _ = parse_answer(status, &prefix, "r");
        }
    }

    #[tokio::test]
    async fn a_missing_or_empty_token_file_is_an_auth_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let w = |f: &str| WebIdentity {
            http: reqwest::Client::new(),
            url: "http://127.0.0.1:9/".into(),
            role_arn: "r".into(),
            session_name: "s".into(),
            token_file: dir.path().join(f),
            redactor: Redactor::default(),
        };
        let e = w("missing").fetch().await.err().unwrap();
        assert_eq!(e.kind(), ModelErrorKind::Auth);
        assert!(e.to_string().contains("missing"), "{e}");
        std::fs::write(dir.path().join("empty"), "\n").unwrap();
        assert!(w("empty").fetch().await.err().unwrap().to_string().contains("is empty"));
    }
}
