//! Which credentials authenticate Bedrock requests, and the region, found in the order CI sets
//! them up:
//! 1. a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK` (or the variable `model.api_key_env`
//!    names): `Authorization: Bearer`, no signature;
//! 2. `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`);
//! 3. a web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` (and
//!    `AWS_ROLE_SESSION_NAME`), exchanged at STS for temporary keys, fetched again before they
//!    expire;
//! 4. the profile (`AWS_PROFILE`, else `default`) of the shared files: its static keys, or its
//!    `role_arn` with `web_identity_token_file`.
//!
//! Not supported, and said so: `credential_process` (hone never runs a program named in
//! configuration), SSO, `source_profile` role chains, and container or instance credentials
//! (ECS, EKS Pod Identity, EC2's metadata service).
//!
//! The region: `model.region`, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's.

use super::profile::Profile;
use super::sigv4::Credentials;
use super::web_identity::WebIdentity;
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::model::auth::Refreshing;
use crate::redact::Redactor;
use crate::spec::ModelSpec;
use std::path::PathBuf;
use std::sync::Arc;

/// How requests are authenticated.
pub enum Signer {
    /// A Bedrock API key, sent as a bearer token.
    Bearer(String),
    /// Fixed keys, signed with SigV4.
    Static(Credentials),
    /// Temporary keys from STS, signed with SigV4.
    Refreshing(Arc<Refreshing<Credentials>>),
}

impl Signer {
    /// Where the credentials come from, for the log (never a value).
    pub fn describe(&self) -> &'static str {
        match self {
            Signer::Bearer(_) => "a Bedrock API key",
            Signer::Static(_) => "AWS access keys",
            Signer::Refreshing(_) => "a web identity (STS)",
        }
    }
}

/// What to set, when nothing is.
pub const WHAT_TO_SET: &str = "export AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key); or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary keys); or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (an OIDC token exchanged at STS, as in GitHub Actions or EKS); or AWS_PROFILE naming a profile with keys or with role_arn and web_identity_token_file in ~/.aws/credentials or ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE)";

fn spec_error(message: impl Into<String>, hint: impl Into<String>) -> HoneError {
    HoneError::new(Code::Spec, message).hint(hint)
}

/// The region requests go to, checked.
pub fn region(m: &ModelSpec, env: &RunEnv, profile: &Profile) -> Result<String, HoneError> {
    let (region, from) = if let Some(r) = &m.region {
        (r.clone(), "`model.region`".to_string())
    } else if let Some((var, r)) =
        ["AWS_REGION", "AWS_DEFAULT_REGION"].iter().find_map(|v| env.var(v).map(|r| (*v, r.trim().to_string())))
    {
        (r, format!("`{var}`"))
    } else if let Some(r) = profile.get("region") {
        (r.to_string(), format!("the `region` of AWS profile `{}`", profile.name))
    } else {
        return Err(spec_error(
            "no AWS region for `provider: bedrock`",
            "set `model.region` in the spec (like us-east-1), or export AWS_REGION",
        ));
    };
    if !crate::spec::cloud::is_region(&region) {
        return Err(spec_error(
            format!("{from} is `{region}`, which is not an AWS region"),
            "use a region name like us-east-1 or eu-west-3",
        ));
    }
    Ok(region)
}

/// What the chain needs besides the environment: the profile, and how to reach STS.
pub struct Context<'a> {
    pub env: &'a RunEnv,
    pub profile: &'a Profile,
    pub redactor: &'a Redactor,
    /// The STS client and endpoint, made only when a web identity is used.
    pub sts: &'a dyn Fn() -> Result<(reqwest::Client, String), HoneError>,
}

/// The credentials of the chain (see the module's order); none is an intake error naming what
/// to set.
pub fn signer(m: &ModelSpec, cx: &Context<'_>) -> Result<Signer, HoneError> {
    let env = cx.env;
    if !m.api_key_env.is_empty()
        && let Some(key) = env.var(&m.api_key_env)
    {
        // As sent: a CI secret often ends in a newline.
        cx.redactor.add(key.trim());
        return Ok(Signer::Bearer(key.trim().to_string()));
    }
    if let Some(keys) = env_keys(env, cx.redactor)? {
        return Ok(Signer::Static(keys));
    }
    if let Some(file) = env.var("AWS_WEB_IDENTITY_TOKEN_FILE") {
        let role = env.var("AWS_ROLE_ARN").ok_or_else(|| {
            spec_error(
                "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
                "export AWS_ROLE_ARN with the role to assume",
            )
        })?;
        let session = env.var("AWS_ROLE_SESSION_NAME");
        return web_identity(cx, file, role, session, "AWS_WEB_IDENTITY_TOKEN_FILE");
    }
    from_profile(cx)
}

/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, both or neither.
fn env_keys(env: &RunEnv, redactor: &Redactor) -> Result<Option<Credentials>, HoneError> {
    match (env.var("AWS_ACCESS_KEY_ID"), env.var("AWS_SECRET_ACCESS_KEY")) {
        (None, None) => Ok(None),
        (Some(_), None) | (None, Some(_)) => Err(spec_error(
            "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set",
            "export both (and AWS_SESSION_TOKEN for temporary keys), or neither",
        )),
        (Some(id), Some(secret)) => {
            let keys = Credentials {
                access_key_id: id.trim().to_string(),
                secret_access_key: secret.trim().to_string(),
                session_token: env.var("AWS_SESSION_TOKEN").map(|t| t.trim().to_string()),
            };
            register(&keys, redactor);
            Ok(Some(keys))
        }
    }
}

fn register(keys: &Credentials, redactor: &Redactor) {
    use crate::model::auth::Secrets;
    for s in keys.secrets() {
        redactor.add(s);
    }
}

/// A web identity: the token file must be there at intake; STS is asked at the first request.
fn web_identity(
    cx: &Context<'_>,
    file: &str,
    role: &str,
    session: Option<&str>,
    from: &str,
) -> Result<Signer, HoneError> {
    let token_file = PathBuf::from(file);
    if !token_file.is_file() {
        return Err(spec_error(
            format!("{from} names {file}, which is not a file"),
            "point it at the OIDC token your CI writes (in GitHub Actions, aws-actions/configure-aws-credentials or a step that saves the ID token)",
        ));
    }
    // Redacted from the start: setup and the baseline's checks run before the first request.
    if let Ok(token) = crate::safe_fs::read_small(&token_file, super::web_identity::MAX_TOKEN) {
        cx.redactor.add(String::from_utf8_lossy(&token).trim());
    }
    let session_name = session.map_or_else(default_session_name, str::to_string);
    if !(2..=64).contains(&session_name.len())
        || !session_name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b))
    {
        return Err(spec_error(
            format!("the role session name `{session_name}` is not one STS takes"),
            "use 2 to 64 letters, digits and _+=,.@- in AWS_ROLE_SESSION_NAME",
        ));
    }
    let (http, url) = (cx.sts)()?;
    let source =
        WebIdentity { http, url, role_arn: role.to_string(), session_name, token_file, redactor: cx.redactor.clone() };
    Ok(Signer::Refreshing(Arc::new(Refreshing::new(source, cx.redactor.clone()))))
}

/// `hone-<unix seconds>`, as the SDKs name a session by its start.
fn default_session_name() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("hone-{secs}")
}

/// The profile's keys or web identity; what it has that hone does not use is an error saying so.
fn from_profile(cx: &Context<'_>) -> Result<Signer, HoneError> {
    let p = cx.profile;
    let files = p.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
    if !p.found {
        let message = if p.explicit {
            format!("AWS_PROFILE names `{}`, which is in none of {files}", p.name)
        } else {
            let container = ["AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
                .iter()
                .find(|v| cx.env.var(v).is_some())
                .map(|v| format!(" ({v} is set, but hone does not read container credentials)"))
                .unwrap_or_default();
            format!("no AWS credentials for `provider: bedrock`{container}")
        };
        return Err(spec_error(message, WHAT_TO_SET));
    }
    let at = format!("AWS profile `{}`", p.name);
    if let (Some(id), Some(secret)) = (p.get("aws_access_key_id"), p.get("aws_secret_access_key")) {
        let keys = Credentials {
            access_key_id: id.to_string(),
            secret_access_key: secret.to_string(),
            session_token: p.get("aws_session_token").map(str::to_string),
        };
        register(&keys, cx.redactor);
        return Ok(Signer::Static(keys));
    }
    if let (Some(role), Some(file)) = (p.get("role_arn"), p.get("web_identity_token_file")) {
        return web_identity(cx, file, role, p.get("role_session_name"), &format!("{at}'s web_identity_token_file"));
    }
    let unsupported = if p.get("credential_process").is_some() {
        "has `credential_process`, and hone never runs a program named in configuration".to_string()
    } else if p.get("sso_session").is_some() || p.get("sso_start_url").is_some() {
        "uses AWS IAM Identity Center (SSO), which hone does not read".to_string()
    } else if p.get("source_profile").is_some() || p.get("credential_source").is_some() {
        "assumes a role from other credentials (`source_profile`, `credential_source`), which hone does not do"
            .to_string()
    } else {
        format!("has no credentials hone can use ({files})")
    };
    Err(spec_error(
        format!("{at} {unsupported}"),
        format!(
            "export the keys hone should use: `eval \"$(aws configure export-credentials --format env)\"` does it for any profile; or {WHAT_TO_SET}"
        ),
    ))
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
