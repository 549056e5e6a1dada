//! Azure OpenAI: where a deployment's Chat Completions and Responses APIs live (the
//! `deployments/{name}/…?api-version=` form and the `/openai/v1/` form), how a request proves
//! who sends it (an `api-key`, or a Microsoft Entra ID token), and the content filter's
//! refusals as their own error class.

mod entra;

use super::ModelError;
use super::auth::Auth;
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::protocol::ModelErrorKind;
use crate::redact::Redactor;
use crate::spec::ModelSpec;
use crate::spec::raw::Api;
use serde_json::Value;

/// The `api-version` of the deployments form when the spec gives none: the newest that has
/// both Chat Completions (with `max_completion_tokens`) and the Responses API.
pub const DEFAULT_API_VERSION: &str = "2025-04-01-preview";

/// Where requests go and the model they name.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    /// The body's `model`: the deployment's name.
    pub model: String,
}

/// The resource endpoint (`https://NAME.openai.azure.com`): `model.base_url`, else
/// `AZURE_OPENAI_ENDPOINT`; a trailing `/openai` or `/openai/v1` is taken off.
pub fn endpoint(m: &ModelSpec, env: &RunEnv) -> Result<String, HoneError> {
    let given = m.base_url.clone().or_else(|| env.var("AZURE_OPENAI_ENDPOINT").map(str::to_string));
    let Some(url) = given else {
        return Err(HoneError::new(Code::Spec, "`provider: azure` needs the resource's endpoint").hint(
            "set `model.base_url` to it (https://YOUR-RESOURCE.openai.azure.com), or export AZURE_OPENAI_ENDPOINT",
        ));
    };
    // The key or token goes with every request: never in clear text, but to this machine (a
    // test's stand-in, a local gateway).
    if !super::http::https_or_loopback(&url) {
        return Err(HoneError::new(Code::Spec, format!("the Azure OpenAI endpoint `{url}` is not an https URL"))
            .hint("give the resource's endpoint, like https://YOUR-RESOURCE.openai.azure.com"));
    }
    let url = url.trim_end_matches('/');
    let url = url.strip_suffix("/openai/v1").or_else(|| url.strip_suffix("/openai")).unwrap_or(url);
    Ok(url.to_string())
}

/// The URL of the job's API at `endpoint`, and the model the body names.
pub fn target(m: &ModelSpec, endpoint: &str) -> Target {
    let path = if m.api == Api::Responses { "responses" } else { "chat/completions" };
    match &m.deployment {
        Some(d) => {
            let version = m.api_version.as_deref().unwrap_or(DEFAULT_API_VERSION);
            let url = if m.api == Api::Responses {
                format!("{endpoint}/openai/responses?api-version={version}")
            } else {
                format!("{endpoint}/openai/deployments/{d}/{path}?api-version={version}")
            };
            Target { url, model: d.clone() }
        }
        None => Target { url: format!("{endpoint}/openai/v1/{path}"), model: m.name.clone() },
    }
}

/// How requests authenticate, in this order: the key (`model.api_key_env`, by default
/// `AZURE_OPENAI_API_KEY`) in the `api-key` header; a Microsoft Entra ID token the runner
/// already has (`AZURE_OPENAI_AD_TOKEN`); or one hone gets from Entra ID with workload identity
/// federation (AKS's `AZURE_FEDERATED_TOKEN_FILE`, or GitHub Actions' OIDC token) or a client
/// secret, for `AZURE_CLIENT_ID` in `AZURE_TENANT_ID`.
pub fn auth(m: &ModelSpec, env: &RunEnv, redactor: &Redactor) -> Result<Auth, HoneError> {
    if let Some(key) = env.var(&m.api_key_env) {
        return Ok(Auth::Header("api-key", key.to_string()));
    }
    if let Some(token) = env.var("AZURE_OPENAI_AD_TOKEN") {
        redactor.add(token);
        return Ok(Auth::Bearer(token.to_string()));
    }
    match entra::from_env(env, redactor)? {
        Some(tokens) => Ok(Auth::Token(tokens)),
        None => Err(HoneError::new(Code::Spec, "no credentials for Azure OpenAI").hint(format!(
            "export {} with the resource's key; or, for Microsoft Entra ID, AZURE_CLIENT_ID and AZURE_TENANT_ID with AZURE_FEDERATED_TOKEN_FILE (AKS), the job's `id-token: write` permission (GitHub Actions) or AZURE_CLIENT_SECRET; or AZURE_OPENAI_AD_TOKEN with a token",
            m.api_key_env
        ))),
    }
}

/// An error body that is Azure's content filter refusing the prompt (`content_filter`, or
/// `ResponsibleAIPolicyViolation`): a permanent error of its own class, naming the categories
/// that were filtered.
pub fn content_filter(status: Option<u16>, err: &Value) -> Option<ModelError> {
    let inner = err.get("innererror");
    fn code(v: Option<&Value>) -> &str {
        v.and_then(|v| v.get("code")).and_then(Value::as_str).unwrap_or_default()
    }
    if code(Some(err)) != "content_filter" && code(inner) != "ResponsibleAIPolicyViolation" {
        return None;
    }
    let results = inner.and_then(|i| i.get("content_filter_result").or_else(|| i.get("content_filter_results")));
    let mut filtered: Vec<String> = results
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, r)| r.get("filtered").and_then(Value::as_bool) == Some(true))
        .map(|(name, r)| match r.get("severity").and_then(Value::as_str) {
            Some(sev) => format!("{name} ({sev})"),
            None => name.clone(),
        })
        .collect();
    filtered.sort();
    let which = if filtered.is_empty() { String::new() } else { format!(" [{}]", filtered.join(", ")) };
    let said = err.get("message").and_then(Value::as_str).unwrap_or("the content filter refused the request");
    let said: String = said.chars().take(300).collect();
    Some(ModelError::Permanent {
        kind: ModelErrorKind::ContentFilter,
        status,
        message: format!("the provider's content filter refused the request{which}: {said}"),
    })
}

#[cfg(test)]
mod tests;
