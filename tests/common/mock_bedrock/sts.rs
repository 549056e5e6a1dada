//! The STS stand-in's `AssumeRoleWithWebIdentity`: an unsigned form POST naming the role it
//! trusts and carrying the token the test wrote to the token file. It answers as STS does, in
//! XML: temporary credentials (an `ASIA…` key, a secret and a session token) that the Converse
//! stand-in then accepts, or an `ErrorResponse`.

use super::Shared;
use super::aws_auth::Key;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// Whom STS lets in: the role, and the token it must be given.
#[derive(Clone, Debug)]
pub struct Trust {
    pub role_arn: String,
    pub token: String,
}

fn decode(v: &str) -> String {
    percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned()
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let xml = format!(
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>"
    );
    (status, [("content-type", "text/xml")], xml).into_response()
}

fn random(prefix: &str, len: usize) -> String {
    let mut s = prefix.to_string();
    while s.len() < len {
        s.push_str(&uuid::Uuid::new_v4().simple().to_string().to_uppercase());
    }
    s.truncate(len);
    s
}

/// Answer one STS request (`POST /`).
pub fn handle(s: &Shared, headers: &HeaderMap, body: &[u8]) -> Response {
    *s.sts_calls.lock().unwrap() += 1;
    let form: Vec<(String, String)> = String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or_default();
    let refuse = |status, code: &str, message: &str| {
        s.refused.lock().unwrap().push(format!("STS {code}: {message}"));
        error(status, code, message)
    };
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !content_type.starts_with("application/x-www-form-urlencoded") || headers.contains_key("authorization") {
        return refuse(StatusCode::BAD_REQUEST, "InvalidRequest", "AssumeRoleWithWebIdentity is an unsigned form POST");
    }
    if get("Action") != "AssumeRoleWithWebIdentity" || get("Version") != "2011-06-15" {
        return refuse(StatusCode::BAD_REQUEST, "InvalidAction", "Could not find operation for version");
    }
    let session = get("RoleSessionName");
    let session_ok = (2..=64).contains(&session.len())
        && session.bytes().all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b));
    if !session_ok {
        return refuse(
            StatusCode::BAD_REQUEST,
            "ValidationError",
            "1 validation error detected: Value at 'roleSessionName' failed to satisfy constraint",
        );
    }
    let Some(trust) = s.trust.lock().unwrap().clone() else {
        return refuse(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "Not authorized to perform sts:AssumeRoleWithWebIdentity",
        );
    };
    if get("RoleArn") != trust.role_arn {
        return refuse(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "Not authorized to perform sts:AssumeRoleWithWebIdentity",
        );
    }
    if get("WebIdentityToken") != trust.token {
        return refuse(
            StatusCode::BAD_REQUEST,
            "InvalidIdentityToken",
            "Couldn't retrieve verification key from your identity provider",
        );
    }
    let key = Key { id: random("ASIA", 20), secret: random("", 40), token: Some(random("FwoGZXIvYXdzE", 120)) };
    s.keys.lock().unwrap().push(key.clone());
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let expires = expires.format(&time::format_description::well_known::Rfc3339).unwrap();
    let xml = format!(
        r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser><Arn>{role}/{session}</Arn><AssumedRoleId>AROA:{session}</AssumedRoleId></AssumedRoleUser>
    <Provider>token.actions.githubusercontent.com</Provider>
    <Credentials>
      <AccessKeyId>{id}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{expires}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>repo:octo/repo:ref:refs/heads/main</SubjectFromWebIdentityToken>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>r-2</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#,
        role = trust.role_arn,
        id = key.id,
        secret = key.secret,
        token = key.token.unwrap_or_default(),
    );
    (StatusCode::OK, [("content-type", "text/xml")], xml).into_response()
}
