//! Microsoft Entra ID tokens for Azure OpenAI, for an app (`AZURE_CLIENT_ID` in
//! `AZURE_TENANT_ID`) that proves itself with a federated token (AKS workload identity's
//! `AZURE_FEDERATED_TOKEN_FILE`, or GitHub Actions' OIDC token) or a client secret; fetched
//! again before they expire, and redacted with the assertion that got them.

use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::model::ModelError;
use crate::model::auth::{Expiring, Refreshing, Source, refused};
use crate::protocol::ModelErrorKind;
use crate::redact::Redactor;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The scope of a token for Azure OpenAI (Cognitive Services).
pub const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// Entra ID's public cloud, when `AZURE_AUTHORITY_HOST` does not name another.
pub const AUTHORITY: &str = "https://login.microsoftonline.com";
/// The audience of GitHub's OIDC token that Entra ID federates with.
pub const ACTIONS_AUDIENCE: &str = "api://AzureADTokenExchange";
const LIMIT: Duration = Duration::from_secs(30);

/// How the app proves itself.
enum Proof {
    /// A federated token in a file the platform rotates (AKS): read at every fetch.
    File(PathBuf),
    /// GitHub Actions' OIDC token, asked from the runner.
    ActionsOidc {
        url: String,
        bearer: String,
    },
    Secret(String),
}

struct Entra {
    http: reqwest::Client,
    token_url: String,
    client_id: String,
    proof: Proof,
    redactor: Redactor,
}

/// Entra ID credentials from the environment, if it names an app and a proof.
pub fn from_env(env: &RunEnv, redactor: &Redactor) -> Result<Option<Arc<Refreshing<String>>>, HoneError> {
    let (Some(client_id), Some(tenant)) = (env.var("AZURE_CLIENT_ID"), env.var("AZURE_TENANT_ID")) else {
        return Ok(None);
    };
    // As Azure's SDKs: a secret set on purpose before the runner's ambient OIDC token.
    let proof = if let Some(f) = env.var("AZURE_FEDERATED_TOKEN_FILE") {
        Proof::File(PathBuf::from(f))
    } else if let Some(secret) = env.var("AZURE_CLIENT_SECRET") {
        Proof::Secret(secret.into())
    } else if let (Some(url), Some(bearer)) =
        (env.var("ACTIONS_ID_TOKEN_REQUEST_URL"), env.var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"))
    {
        Proof::ActionsOidc { url: url.into(), bearer: bearer.into() }
    } else {
        return Ok(None);
    };
    if tenant.is_empty() || !tenant.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') {
        return Err(HoneError::new(Code::Spec, format!("AZURE_TENANT_ID `{tenant}` is not a tenant id"))
            .hint("set it to the directory (tenant) id, a GUID, or its domain"));
    }
    let authority = env.var("AZURE_AUTHORITY_HOST").unwrap_or(AUTHORITY).trim_end_matches('/');
    if !crate::model::http::https_or_loopback(authority) {
        return Err(HoneError::new(Code::Spec, format!("AZURE_AUTHORITY_HOST `{authority}` is not an https URL"))
            .hint("unset it for Azure's public cloud, or name the sovereign cloud's authority over https"));
    }
    let entra = Entra {
        // Entra ID over https (whatever the model's endpoint is): the system's roots.
        http: crate::model::http::client("https://")?,
        token_url: format!("{authority}/{tenant}/oauth2/v2.0/token"),
        client_id: client_id.into(),
        proof,
        redactor: redactor.clone(),
    };
    Ok(Some(Arc::new(Refreshing::new(entra, redactor.clone()))))
}

impl Entra {
    /// The federated token that proves the app (not for a client secret).
    async fn assertion(&self) -> Result<Option<String>, ModelError> {
        let token = match &self.proof {
            Proof::Secret(_) => return Ok(None),
            Proof::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|e| refused("cannot read AZURE_FEDERATED_TOKEN_FILE", format!("{}: {e}", path.display())))?,
            Proof::ActionsOidc { url, bearer } => {
                let rb = self.http.get(url).query(&[("audience", ACTIONS_AUDIENCE)]).bearer_auth(bearer);
                let v = json_of(rb, "GitHub's OIDC token service").await?;
                let token = v["value"].as_str().unwrap_or_default().to_string();
                if token.is_empty() {
                    return Err(refused("GitHub's OIDC token service", "its answer had no `value`"));
                }
                token
            }
        };
        let token = token.trim().to_string();
        self.redactor.add(&token);
        Ok(Some(token))
    }
}

impl Source<String> for Entra {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
        Box::pin(async move {
            let assertion = self.assertion().await?;
            let mut form: Vec<(&str, &str)> =
                vec![("client_id", &self.client_id), ("scope", SCOPE), ("grant_type", "client_credentials")];
            match (&self.proof, &assertion) {
                (Proof::Secret(s), _) => form.push(("client_secret", s)),
                (_, Some(a)) => {
                    form.push(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"));
                    form.push(("client_assertion", a));
                }
                (_, None) => {}
            }
            let v = json_of(self.http.post(&self.token_url).form(&form), "Microsoft Entra ID").await?;
            let token = v["access_token"].as_str().unwrap_or_default().to_string();
            if token.is_empty() {
                return Err(refused("Microsoft Entra ID", "its answer had no access_token"));
            }
            let life = v["expires_in"].as_u64().or_else(|| v["expires_in"].as_str()?.parse().ok()).unwrap_or(3600);
            Ok(Expiring { value: token, expires_at: Some(SystemTime::now() + Duration::from_secs(life)) })
        })
    }
}

/// The JSON answer of an identity service. It being unreachable, slow, rate limited or failing
/// (429, 5xx) is retried with the model request; a refusal is a permanent auth error with what
/// it said.
async fn json_of(rb: reqwest::RequestBuilder, who: &str) -> Result<Value, ModelError> {
    let unavailable = |kind, why: String| ModelError::retryable(kind, format!("{who}: {why}"));
    let resp = match tokio::time::timeout(LIMIT, rb.timeout(LIMIT).send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(unavailable(ModelErrorKind::Connection, format!("cannot reach it: {e}"))),
        Err(_) => return Err(unavailable(ModelErrorKind::Timeout, format!("no answer within {}s", LIMIT.as_secs()))),
    };
    let status = resp.status();
    let text = crate::model::http::body_text(resp).await;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !status.is_success() {
        let said = v["error_description"].as_str().or(v["error"].as_str()).or(v["message"].as_str());
        let said: String = said.unwrap_or("no reason given").chars().take(300).collect();
        let why = format!("HTTP {}: {said}", status.as_u16());
        return Err(match status.as_u16() {
            429 => unavailable(ModelErrorKind::RateLimited, why),
            s if s >= 500 => unavailable(ModelErrorKind::ServerError, why),
            _ => refused(who, why),
        });
    }
    Ok(v)
}
