//! Google credentials files, parsed: `service_account` (a key), `authorized_user` (gcloud's
//! refresh token) and `external_account` (workload identity federation: a subject token from a
//! file or a URL, exchanged at STS, optionally for a service account's token). Pure: the bytes
//! in, typed credentials or a `CredFileError` naming what is wrong out. Every URL a token
//! request goes to must be https (http only to this machine); a credential source that runs a
//! program is refused.

pub use super::credfile_error::CredFileError;
use super::token::https_or_loopback;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// (No `Debug`: it holds the private key.)
#[derive(Deserialize)]
pub struct ServiceAccount {
    pub client_email: String,
    pub private_key: String,
    #[serde(default)]
    pub private_key_id: Option<String>,
    #[serde(default = "google_token_uri")]
    pub token_uri: String,
    #[serde(default)]
    pub project_id: Option<String>,
}

/// (No `Debug`: it holds the refresh token and the client secret.)
#[derive(Deserialize)]
pub struct AuthorizedUser {
    pub client_id: String,
    pub client_secret: String,
    pub refresh_token: String,
    #[serde(default = "google_token_uri")]
    pub token_uri: String,
    #[serde(default)]
    pub quota_project_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ExternalAccount {
    pub audience: String,
    pub subject_token_type: String,
    pub token_url: String,
    #[serde(default)]
    pub service_account_impersonation_url: Option<String>,
    #[serde(default)]
    pub service_account_impersonation: Option<Impersonation>,
    pub credential_source: Value,
    #[serde(default)]
    pub quota_project_id: Option<String>,
    /// Workforce pools: the project billed for the exchange (STS's `options.userProject`).
    #[serde(default)]
    pub workforce_pool_user_project: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Impersonation {
    #[serde(default)]
    pub token_lifetime_seconds: Option<u64>,
}

/// Where an external account's subject token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A file, read again for each exchange (it may be rotated).
    File { path: PathBuf, format: Format },
    /// A URL fetched with these headers (GitHub's OIDC token endpoint).
    Url { url: String, headers: BTreeMap<String, String>, format: Format },
}

/// The subject token as the source gives it: the whole text, or one field of a JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    Text,
    Json(String),
}

/// A credentials file, by its `type`.
/// (Its `Debug` names only its kind: it holds secrets.)
pub enum Credentials {
    ServiceAccount(ServiceAccount),
    AuthorizedUser(AuthorizedUser),
    External(ExternalAccount, Subject),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({})", self.kind())
    }
}

impl Credentials {
    /// The `type` as the file says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Credentials::ServiceAccount(_) => "service_account",
            Credentials::AuthorizedUser(_) => "authorized_user",
            Credentials::External(..) => "external_account",
        }
    }

    /// The project the file names, for when neither the spec nor the environment does.
    pub fn project(&self) -> Option<&str> {
        match self {
            Credentials::ServiceAccount(s) => s.project_id.as_deref(),
            Credentials::AuthorizedUser(u) => u.quota_project_id.as_deref(),
            Credentials::External(e, _) => e.quota_project_id.as_deref(),
        }
        .filter(|p| !p.trim().is_empty())
    }
}

fn google_token_uri() -> String {
    GOOGLE_TOKEN_URI.into()
}

/// Parse a credentials file's bytes.
pub fn parse(bytes: &[u8]) -> Result<Credentials, CredFileError> {
    let v: Value = serde_json::from_slice(bytes).map_err(CredFileError::NotJson)?;
    let kind = v.get("type").and_then(Value::as_str).ok_or(CredFileError::NoType)?;
    let typed = |kind: &'static str| move |why| CredFileError::Unusable { kind, why };
    let creds = match kind {
        "service_account" => {
            Credentials::ServiceAccount(serde_json::from_value(v.clone()).map_err(typed("service_account"))?)
        }
        "authorized_user" => {
            Credentials::AuthorizedUser(serde_json::from_value(v.clone()).map_err(typed("authorized_user"))?)
        }
        "external_account" => {
            let e: ExternalAccount = serde_json::from_value(v.clone()).map_err(typed("external_account"))?;
            let subject = subject(&e.credential_source)?;
            Credentials::External(e, subject)
        }
        other => return Err(CredFileError::UnknownType(other.into())),
    };
    check_urls(&creds)?;
    Ok(creds)
}

/// Every URL a token request goes to: https, or http to this machine.
fn check_urls(c: &Credentials) -> Result<(), CredFileError> {
    let urls: Vec<(&str, &str)> = match c {
        Credentials::ServiceAccount(s) => vec![("token_uri", &s.token_uri)],
        Credentials::AuthorizedUser(u) => vec![("token_uri", &u.token_uri)],
        Credentials::External(e, subject) => {
            let mut v = vec![("token_url", e.token_url.as_str())];
            if let Some(u) = &e.service_account_impersonation_url {
                v.push(("service_account_impersonation_url", u));
            }
            if let Subject::Url { url, .. } = subject {
                v.push(("credential_source.url", url));
            }
            v
        }
    };
    for (key, url) in urls {
        if !https_or_loopback(url) {
            return Err(CredFileError::NotHttps { key, url: url.into() });
        }
    }
    Ok(())
}

/// The external account's `credential_source`: a file or a URL; never a program.
fn subject(src: &Value) -> Result<Subject, CredFileError> {
    let s = |k: &str| src.get(k).and_then(Value::as_str).map(str::to_string);
    if src.get("executable").is_some() {
        return Err(CredFileError::Executable);
    }
    if src.get("environment_id").is_some() {
        return Err(CredFileError::EnvironmentId);
    }
    let format = format(src.get("format"))?;
    if let Some(path) = s("file") {
        return Ok(Subject::File { path: PathBuf::from(path), format });
    }
    if let Some(url) = s("url") {
        let mut headers = BTreeMap::new();
        if let Some(h) = src.get("headers") {
            let map = h.as_object().ok_or(CredFileError::HeadersNotMap)?;
            for (k, v) in map {
                let v = v.as_str().ok_or_else(|| CredFileError::HeaderNotText(k.clone()))?;
                let valid = reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_ok()
                    && reqwest::header::HeaderValue::from_str(v).is_ok();
                if !valid {
                    return Err(CredFileError::BadHeader(k.clone()));
                }
                headers.insert(k.clone(), v.to_string());
            }
        }
        return Ok(Subject::Url { url, headers, format });
    }
    Err(CredFileError::NoSource)
}

fn format(f: Option<&Value>) -> Result<Format, CredFileError> {
    let Some(f) = f else {
        return Ok(Format::Text);
    };
    match f.get("type").and_then(Value::as_str).unwrap_or("text") {
        "text" => Ok(Format::Text),
        "json" => f
            .get("subject_token_field_name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(|n| Format::Json(n.to_string()))
            .ok_or(CredFileError::NoTokenField),
        other => Err(CredFileError::UnknownFormat(other.into())),
    }
}

/// The secrets in `c`, for the redactor: the private key (whole, and each of its lines), the
/// refresh token and client secret, the subject token URL's header values.
pub fn secrets(c: &Credentials) -> Vec<String> {
    let mut out = Vec::new();
    match c {
        Credentials::ServiceAccount(s) => {
            out.push(s.private_key.clone());
            out.extend(s.private_key.lines().map(str::trim).filter(|l| !l.starts_with("-----")).map(str::to_string));
        }
        Credentials::AuthorizedUser(u) => out.extend([u.client_secret.clone(), u.refresh_token.clone()]),
        Credentials::External(_, Subject::Url { headers, .. }) => {
            for v in headers.values() {
                out.push(v.clone());
                if let Some((_, token)) = v.split_once(' ') {
                    out.push(token.trim().to_string());
                }
            }
        }
        Credentials::External(..) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(v: Value) -> Result<Credentials, String> {
        parse(v.to_string().as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn service_account_with_google_defaults() {
        let c = parsed(json!({"type": "service_account", "project_id": "p1", "private_key_id": "k1",
            "private_key": "-----BEGIN PRIVATE KEY-----\nAAAABBBBCCCC\n-----END PRIVATE KEY-----\n",
            "client_email": "sa@p1.iam.gserviceaccount.com"}))
        .unwrap();
        assert_eq!((c.kind(), c.project()), ("service_account", Some("p1")));
        let Credentials::ServiceAccount(s) = &c else { panic!() };
        assert_eq!(s.token_uri, GOOGLE_TOKEN_URI);
        assert!(secrets(&c).contains(&"AAAABBBBCCCC".to_string()), "each line of the key is a secret");
    }

    #[test]
    fn authorized_user_and_its_quota_project() {
        let c = parsed(json!({"type": "authorized_user", "client_id": "id", "client_secret": "shh-secret",
            "refresh_token": "1//refresh", "quota_project_id": "q"}))
        .unwrap();
        assert_eq!((c.kind(), c.project()), ("authorized_user", Some("q")));
        assert_eq!(secrets(&c), ["shh-secret", "1//refresh"]);
    }

    #[test]
    fn external_account_from_github_oidc() {
        // What google-github-actions/auth writes for workload identity federation.
        let c = parsed(json!({"type": "external_account",
            "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/providers/gh",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": "https://sts.googleapis.com/v1/token",
            "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken",
            "credential_source": {"url": "https://pipelines.actions.githubusercontent.com/x?audience=y",
                "headers": {"Authorization": "Bearer gh-request-token"},
                "format": {"type": "json", "subject_token_field_name": "value"}}}))
        .unwrap();
        let Credentials::External(_, Subject::Url { headers, format, .. }) = &c else { panic!("{c:?}") };
        assert_eq!(format, &Format::Json("value".into()));
        assert_eq!(headers["Authorization"], "Bearer gh-request-token");
        assert!(secrets(&c).contains(&"gh-request-token".to_string()));
        let f = parsed(json!({"type": "external_account", "audience": "a", "subject_token_type": "t",
            "token_url": "https://sts.googleapis.com/v1/token", "credential_source": {"file": "/var/run/token"}}))
        .unwrap();
        let Credentials::External(_, s) = f else { panic!() };
        assert_eq!(s, Subject::File { path: "/var/run/token".into(), format: Format::Text });
    }

    #[test]
    fn refused_files_say_why() {
        let base = json!({"type": "external_account", "audience": "a", "subject_token_type": "t",
            "token_url": "https://sts.googleapis.com/v1/token"});
        let with = |src: Value| {
            let mut v = base.clone();
            v["credential_source"] = src;
            parsed(v).unwrap_err()
        };
        assert!(with(json!({"executable": {"command": "/bin/sh -c evil"}})).contains("never runs a program"));
        assert!(with(json!({"environment_id": "aws1"})).contains("does not read"));
        assert!(with(json!({"file": "f", "format": {"type": "json"}})).contains("subject_token_field_name"));
        assert!(with(json!({})).contains("neither"));
        assert!(with(json!({"url": "http://example.com/token"})).contains("not an https URL"));
        let mut v = base.clone();
        v["token_url"] = json!("http://sts.example.com/v1/token");
        v["credential_source"] = json!({"file": "f"});
        assert!(parsed(v).unwrap_err().contains("`token_url`"));
        assert!(parse(b"{not json").unwrap_err().to_string().contains("not JSON"));
        assert!(parsed(json!({"client_email": "x"})).unwrap_err().contains("no `type`"));
        assert!(parsed(json!({"type": "gdch_service_account"})).unwrap_err().contains("does not read"));
        let e = parsed(json!({"type": "service_account", "client_email": "x"})).unwrap_err();
        assert!(e.contains("missing field `private_key`"), "{e}");
        let e = parsed(json!({"type": "service_account", "client_email": "x", "private_key": "k",
            "token_uri": "http://evil.example/token"}))
        .unwrap_err();
        assert!(e.contains("`token_uri`"), "{e}");
    }
}
