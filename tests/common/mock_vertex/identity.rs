//! The identity stand-ins: the OAuth token endpoint (a service account's JWT, verified with
//! RustCrypto's RSA; gcloud's refresh token), STS and IAM for workload identity federation, a
//! GitHub-like OIDC token URL, and the metadata server.

use super::{AUDIENCE, EMAIL, State};
use axum::Router;
use axum::extract::{Form, Path, Query, State as With};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs8::DecodePrivateKey;
use rsa::signature::Verifier;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

type Shared = Arc<State>;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/token", post(token))
        .route("/sts/v1/token", post(sts))
        .route("/iam/v1/projects/-/serviceAccounts/{action}", post(impersonate))
        .route("/oidc", get(oidc))
        .route("/computeMetadata/v1/instance/service-accounts/default/token", get(metadata))
}

/// The public half of a PKCS#8 PEM private key, read without hone's code.
pub fn public_key(pem: &str) -> rsa::PublicKey {
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = STANDARD.decode(b64).unwrap();
    rsa::PrivateKey::from_pkcs8_der(&der).unwrap().to_public_key()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (status, axum::Json(json!({"error": error, "error_description": description}))).into_response()
}

fn granted(token: &str, life: u64) -> Response {
    axum::Json(json!({"access_token": token, "expires_in": life, "token_type": "Bearer"})).into_response()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Google's token endpoint: a service account's JWT (RFC 7523) or a refresh token.
async fn token(With(s): With<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    match f.get("grant_type").map(String::as_str) {
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            match verify(&s, f.get("assertion").map(String::as_str).unwrap_or("")) {
                Ok(()) => {
                    let (t, life) = s.issue("sa");
                    s.log("token: service account granted".into());
                    granted(&t, life)
                }
                Err(why) => {
                    s.log(format!("token: service account refused: {why}"));
                    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", &why)
                }
            }
        }
        Some("refresh_token") => {
            let ok = f.get("refresh_token") == Some(&s.refresh_token)
                && f.get("client_secret") == Some(&s.client_secret)
                && f.get("client_id").is_some_and(|c| !c.is_empty());
            if !ok {
                s.log("token: refresh token refused".into());
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Bad Request");
            }
            let (t, life) = s.issue("user");
            s.log("token: refresh token granted".into());
            granted(&t, life)
        }
        other => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", &format!("{other:?}")),
    }
}

/// What Google checks of an assertion: an RS256 signature by the service account's key, then its
/// claims (issuer, audience, scope, a lifetime of at most an hour that has begun and not ended).
fn verify(s: &State, assertion: &str) -> Result<(), String> {
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe".into());
    };
    let decode = |p: &str| -> Result<Value, String> {
        let bytes = URL_SAFE_NO_PAD.decode(p).map_err(|e| format!("Invalid JWT: bad base64url: {e}"))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("Invalid JWT: not JSON: {e}"))
    };
    let h = decode(header)?;
    if h["alg"] != "RS256" {
        return Err(format!("Invalid JWT: alg {} is not RS256", h["alg"]));
    }
    let sig = URL_SAFE_NO_PAD.decode(signature).map_err(|_| "Invalid JWT Signature.".to_string())?;
    let sig = rsa::pkcs1v15::Signature::try_from(sig.as_slice()).map_err(|_| "Invalid JWT Signature.".to_string())?;
    let key = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(s.public_key.clone());
    key.verify(format!("{header}.{claims}").as_bytes(), &sig).map_err(|_| "Invalid JWT Signature.".to_string())?;
    let c = decode(claims)?;
    let (iat, exp) = (c["iat"].as_u64().unwrap_or(0), c["exp"].as_u64().unwrap_or(0));
    let aud = format!("{}/token", s.url);
    let problems = [
        (c["iss"] != EMAIL, format!("iss {} is not the service account", c["iss"])),
        (c["aud"] != aud.as_str(), format!("aud {} is not {aud}", c["aud"])),
        (
            !c["scope"].as_str().unwrap_or("").split(' ').any(|x| x == SCOPE),
            format!("scope {} lacks cloud-platform", c["scope"]),
        ),
        (exp <= now(), "Invalid JWT: the token has expired".into()),
        (iat > now() + 5, "Invalid JWT: iat is in the future".into()),
        (exp < iat || exp - iat > 3600, "Invalid JWT: a lifetime of more than an hour".into()),
    ];
    match problems.into_iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

/// STS: a subject token the OIDC stand-in served, for the pool in `AUDIENCE`.
async fn sts(With(s): With<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    let get = |k: &str| f.get(k).map(String::as_str).unwrap_or("");
    let problems = [
        (get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange", "grant_type"),
        (get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token", "requested_token_type"),
        (get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt", "subject_token_type"),
        (get("audience") != AUDIENCE, "audience"),
        (!get("scope").split(' ').any(|x| x == SCOPE), "scope"),
        (get("subject_token") != s.subject_token, "subject_token"),
    ];
    if let Some((_, field)) = problems.iter().find(|(bad, _)| *bad) {
        s.log(format!("sts: refused ({field})"));
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &format!("Invalid value for \"{field}\"."));
    }
    let t = super::secret("ya29.sts");
    s.federated.lock().unwrap().push(t.clone());
    s.log("sts: exchanged".into());
    axum::Json(json!({"access_token": t, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer", "expires_in": 3600}))
    .into_response()
}

fn bearer(h: &HeaderMap) -> String {
    h.get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string()
}

/// IAM's `generateAccessToken` for the service account, with a federated token.
async fn impersonate(With(s): With<Shared>, Path(action): Path<String>, h: HeaderMap, body: String) -> Response {
    let federated = s.federated.lock().unwrap().contains(&bearer(&h));
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let scoped = body["scope"].as_array().is_some_and(|a| a.iter().any(|x| x == SCOPE));
    if action != format!("{EMAIL}:generateAccessToken") || !federated || !scoped {
        s.log(format!("iam: refused (federated token: {federated}, scope: {scoped}, {action})"));
        let e = json!({"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied", "status": "PERMISSION_DENIED"}});
        return (StatusCode::FORBIDDEN, axum::Json(e)).into_response();
    }
    let (t, life) = s.issue("iam");
    let expire = time::OffsetDateTime::now_utc() + time::Duration::seconds(life as i64);
    let expire = expire.format(&time::format_description::well_known::Rfc3339).unwrap();
    s.log("iam: impersonated".into());
    axum::Json(json!({"accessToken": t, "expireTime": expire})).into_response()
}

/// GitHub's OIDC token URL: the request token in, the subject token out.
async fn oidc(With(s): With<Shared>, h: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if bearer(&h) != s.request_token || !q.contains_key("audience") {
        s.log("oidc: refused".into());
        return (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    }
    s.log("oidc: served".into());
    axum::Json(json!({"count": 1, "value": s.subject_token})).into_response()
}

/// The metadata server: `Metadata-Flavor: Google`, or 403 as the real one answers.
async fn metadata(With(s): With<Shared>, h: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if h.get("metadata-flavor").and_then(|v| v.to_str().ok()) != Some("Google") {
        s.log("metadata: refused (no Metadata-Flavor)".into());
        return (StatusCode::FORBIDDEN, "Missing required header \"Metadata-Flavor\"").into_response();
    }
    if !q.get("scopes").is_some_and(|sc| sc.split(',').any(|x| x == SCOPE)) {
        s.log("metadata: no cloud-platform scope asked".into());
    }
    let (t, life) = s.issue("gce");
    s.log("metadata: granted".into());
    granted(&t, life)
}
