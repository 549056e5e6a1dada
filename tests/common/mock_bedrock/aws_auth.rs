//! What AWS checks of a request's authentication, checked with AWS's own signer (`aws-sigv4`),
//! never hone's: the `Authorization` header's form, a known access key (and the session token
//! issued with a temporary one), the credential scope (date, region, service), an
//! `x-amz-date` within 5 minutes of the stand-in's clock, the body's hash, and the signature
//! recomputed over the request as received with the known secret. A Bedrock API key is
//! checked as a bearer token. Each refusal is what AWS answers: HTTP 403 with its error type.

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use axum::http::HeaderMap;
use sha2::Digest;
use std::time::{Duration, SystemTime};

/// An access key the stand-in knows, with the session token issued with it (temporary keys).
#[derive(Clone, Debug)]
pub struct Key {
    pub id: String,
    pub secret: String,
    pub token: Option<String>,
}

/// Why a request is refused: the error type AWS names and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub error_type: &'static str,
    pub message: String,
}

fn refuse(error_type: &'static str, message: impl Into<String>) -> Refusal {
    Refusal { status: 403, error_type, message: message.into() }
}

pub const MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

/// What the checks need besides the request.
pub struct Expect<'a> {
    pub keys: &'a [Key],
    pub bearer: Option<&'a str>,
    pub region: &'a str,
    pub service: &'a str,
    /// The stand-in's clock.
    pub now: SystemTime,
}

/// The request as received: method, path (raw, with any query), headers, body.
pub fn check(e: &Expect<'_>, method: &str, path: &str, headers: &HeaderMap, body: &[u8]) -> Result<(), Refusal> {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let Some(auth) = header("authorization") else {
        return Err(refuse("MissingAuthenticationTokenException", "Missing Authentication Token"));
    };
    if let Some(token) = auth.strip_prefix("Bearer ") {
        return match e.bearer {
            Some(b) if b == token => Ok(()),
            _ => {
                Err(refuse("UnrecognizedClientException", "Invalid API Key format: Must start with pre-defined prefix"))
            }
        };
    }
    let parts = parse_authorization(auth)
        .ok_or_else(|| refuse("IncompleteSignatureException", format!("Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters, and the algorithm AWS4-HMAC-SHA256: {auth}")))?;
    let key = e.keys.iter().find(|k| k.id == parts.key_id).ok_or_else(|| {
        refuse("UnrecognizedClientException", "The security token included in the request is invalid.")
    })?;
    if key.token.as_deref() != header("x-amz-security-token") {
        return Err(refuse("UnrecognizedClientException", "The security token included in the request is invalid."));
    }
    let signed: Vec<&str> = parts.signed_headers.split(';').collect();
    for required in ["host", "x-amz-date"].into_iter().chain(key.token.as_ref().map(|_| "x-amz-security-token")) {
        if !signed.contains(&required) {
            return Err(refuse("IncompleteSignatureException", format!("'{required}' must be a signed header")));
        }
    }
    let amz_date = header("x-amz-date").ok_or_else(|| refuse("IncompleteSignatureException", "missing x-amz-date"))?;
    let when = parse_amz_date(amz_date)
        .ok_or_else(|| refuse("IncompleteSignatureException", format!("bad x-amz-date {amz_date}")))?;
    check_scope(e, &parts.scope, amz_date)?;
    check_clock(e.now, when, amz_date)?;
    if let Some(h) = header("x-amz-content-sha256")
        && h != hex(&sha2::Sha256::digest(body))
    {
        return Err(Refusal {
            status: 400,
            error_type: "InvalidSignatureException",
            message: "The provided 'x-amz-content-sha256' header does not match what was computed.".into(),
        });
    }
    let expected = aws_signature(e, key, when, (method, path, headers, body), &signed)?;
    if expected != auth {
        return Err(refuse("InvalidSignatureException", MISMATCH));
    }
    Ok(())
}

struct Parts {
    key_id: String,
    scope: String,
    signed_headers: String,
}

fn parse_authorization(auth: &str) -> Option<Parts> {
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(", ") {
        let (k, v) = part.split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => return None,
        }
    }
    signature?;
    let (key_id, scope) = credential?.split_once('/')?;
    Some(Parts { key_id: key_id.into(), scope: scope.into(), signed_headers: signed?.into() })
}

fn check_scope(e: &Expect<'_>, scope: &str, amz_date: &str) -> Result<(), Refusal> {
    let s: Vec<&str> = scope.split('/').collect();
    let bad = |why: String| refuse("InvalidSignatureException", why);
    if s.len() != 4 || s[3] != "aws4_request" {
        return Err(bad(format!("Credential should be scoped to a valid region, not '{scope}'.")));
    }
    if s[0] != &amz_date[..8.min(amz_date.len())] {
        return Err(bad(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{}'",
            s[0], amz_date
        )));
    }
    if s[1] != e.region {
        return Err(bad(format!("Credential should be scoped to a valid region, not '{}'.", s[1])));
    }
    if s[2] != e.service {
        return Err(bad(format!("Credential should be scoped to correct service: '{}'.", e.service)));
    }
    Ok(())
}

fn check_clock(now: SystemTime, when: SystemTime, amz_date: &str) -> Result<(), Refusal> {
    let five = Duration::from_secs(300);
    let fmt = |t: SystemTime| {
        let t = time::OffsetDateTime::from(t);
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    };
    if when + five < now {
        let msg =
            format!("Signature expired: {amz_date} is now earlier than {} ({} - 5 min.)", fmt(now - five), fmt(now));
        return Err(refuse("InvalidSignatureException", msg));
    }
    if when > now + five {
        let msg = format!(
            "Signature not yet current: {amz_date} is still later than {} ({} + 5 min.)",
            fmt(now + five),
            fmt(now)
        );
        return Err(refuse("InvalidSignatureException", msg));
    }
    Ok(())
}

fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let f = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(s, f).ok().map(|t| t.assume_utc().into())
}

/// The `Authorization` AWS's signer makes for the request as received, signing the headers
/// the client listed, with the known secret.
fn aws_signature(
    e: &Expect<'_>,
    key: &Key,
    when: SystemTime,
    (method, path, headers, body): (&str, &str, &HeaderMap, &[u8]),
    signed: &[&str],
) -> Result<String, Refusal> {
    let broken = |what: String| refuse("InvalidSignatureException", what);
    // The token, when signed, is one of the received headers: the identity carries none.
    let identity = aws_credential_types::Credentials::new(&key.id, &key.secret, None, None, "stand-in").into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(e.region)
        .name(e.service)
        .time(when)
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| broken(err.to_string()))?
        .into();
    let mut list: Vec<(&str, &str)> = Vec::new();
    for name in signed {
        for v in headers.get_all(*name) {
            list.push((name, v.to_str().map_err(|_| broken(format!("header {name} is not text")))?));
        }
    }
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default();
    let uri = format!("http://{host}{path}");
    let req = SignableRequest::new(method, uri, list.into_iter(), SignableBody::Bytes(body))
        .map_err(|err| broken(err.to_string()))?;
    let (instructions, _) = sign(req, &params).map_err(|err| broken(err.to_string()))?.into_parts();
    let auth = instructions.headers().find(|(k, _)| *k == "authorization").map(|(_, v)| v.to_string());
    auth.ok_or_else(|| broken("no signature".into()))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
