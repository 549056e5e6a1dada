//! An Azure OpenAI stand-in: it checks what Azure checks before a model sees a request (the
//! path of a deployment or of the `/openai/v1/` API, a supported `api-version`, the `api-key`
//! header or an Entra ID token it issued, a deployment that exists), refuses as Azure does, and
//! hands what it accepts to a scripted mock model. It can refuse a request with Azure's content
//! filter, and it issues Entra ID tokens (`/{tenant}/oauth2/v2.0/token`) only for the right app
//! proving itself with the right federated token.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// API versions the stand-in serves (a real resource answers others with 404 or 400).
pub const API_VERSIONS: [&str; 3] = ["2024-10-21", "2025-03-01-preview", "2025-04-01-preview"];

#[derive(Default)]
pub struct Azure {
    /// The mock model's base URL (`http://…/v1`) that accepted requests go to.
    pub model: String,
    pub key: String,
    pub deployments: Vec<String>,
    /// The app Entra ID knows: (tenant, client id, the federated token it accepts).
    pub app: Option<(String, String, String)>,
    /// The app's client secret, if it has one.
    pub secret: Option<String>,
    /// GitHub's OIDC token service (`/oidc`): the request token it takes; it answers with the
    /// app's federated token for the audience Entra ID federates with.
    pub oidc_request_token: Option<String>,
    /// Tokens issued, accepted as `Authorization: Bearer`.
    pub issued: Mutex<Vec<String>>,
    /// Refuse this many of the next requests with the content filter.
    pub filter_next: Mutex<u32>,
    /// Every request accepted or refused: (path with query, how it authenticated, status).
    pub seen: Mutex<Vec<(String, String, u16)>>,
    /// Answer this many of the next token requests with 503, as an Entra ID outage does.
    pub token_outage: Mutex<u32>,
    /// The token requests, as forms.
    pub token_requests: Mutex<Vec<HashMap<String, String>>>,
}

impl Azure {
    /// Start it; its endpoint is `http://127.0.0.1:PORT`.
    pub async fn start(self) -> (String, Arc<Azure>) {
        let shared = Arc::new(self);
        let app = axum::Router::new()
            .route("/openai/deployments/{deployment}/{*api}", axum::routing::post(deployment))
            .route("/openai/{*api}", axum::routing::post(unversioned))
            .route("/{tenant}/oauth2/v2.0/token", axum::routing::post(token))
            .route("/oidc", axum::routing::get(oidc))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (format!("http://{addr}"), shared)
    }

    pub fn seen(&self) -> Vec<(String, String, u16)> {
        self.seen.lock().unwrap().clone()
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, axum::Json(json!({"error": {"code": code, "message": message}}))).into_response()
}

/// `/openai/deployments/{name}/chat/completions?api-version=…`
async fn deployment(
    State(az): State<Arc<Azure>>,
    Path((name, api)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let path =
        format!("/openai/deployments/{name}/{api}?api-version={}", q.get("api-version").cloned().unwrap_or_default());
    let refused = check_version(&q).or_else(|| (api != "chat/completions").then(not_found));
    let refused = refused.or_else(|| {
        (!az.deployments.contains(&name)).then(|| {
            error(StatusCode::NOT_FOUND, "DeploymentNotFound", "The API deployment for this resource does not exist.")
        })
    });
    serve(&az, path, refused, &headers, body, "chat/completions").await
}

/// `/openai/v1/{chat/completions,responses}` (no api-version) and `/openai/responses?api-version=…`.
async fn unversioned(
    State(az): State<Arc<Azure>>,
    Path(api): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let path = match q.get("api-version") {
        Some(v) => format!("/openai/{api}?api-version={v}"),
        None => format!("/openai/{api}"),
    };
    let (refused, to) = match api.as_str() {
        "v1/chat/completions" => (None, "chat/completions"),
        "v1/responses" => (None, "responses"),
        "responses" => (check_version(&q), "responses"),
        _ => (Some(not_found()), ""),
    };
    // The body names the deployment as its model.
    let model = serde_json::from_slice::<Value>(&body).ok().and_then(|b| b["model"].as_str().map(str::to_string));
    let refused = refused.or_else(|| {
        (!model.is_some_and(|m| az.deployments.contains(&m))).then(|| {
            error(StatusCode::NOT_FOUND, "DeploymentNotFound", "The API deployment for this resource does not exist.")
        })
    });
    serve(&az, path, refused, &headers, body, to).await
}

fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "404", "Resource not found")
}

fn check_version(q: &HashMap<String, String>) -> Option<Response> {
    match q.get("api-version") {
        None => Some(error(StatusCode::NOT_FOUND, "404", "Resource not found")),
        Some(v) if !API_VERSIONS.contains(&v.as_str()) => {
            Some(error(StatusCode::BAD_REQUEST, "BadRequest", "API version not supported"))
        }
        Some(_) => None,
    }
}

/// Authenticate, filter, then hand the request to the mock model at `{model}/{to}`.
async fn serve(
    az: &Azure,
    path: String,
    refused: Option<Response>,
    headers: &HeaderMap,
    body: axum::body::Bytes,
    to: &str,
) -> Response {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    let how = match (header("api-key"), header("authorization")) {
        (Some(k), _) if k == az.key => "api-key".to_string(),
        (_, Some(b)) if az.issued.lock().unwrap().iter().any(|t| b == format!("Bearer {t}")) => "entra".into(),
        (k, b) => format!("refused (api-key {:?}, authorization {:?})", k.is_some(), b.is_some()),
    };
    let refused = if how.starts_with("refused") {
        Some(error(
            StatusCode::UNAUTHORIZED,
            "401",
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
        ))
    } else {
        refused
    };
    let refused = refused.or_else(|| filtered(az));
    let status = refused.as_ref().map_or(200, |r| r.status().as_u16());
    az.seen.lock().unwrap().push((path, how, status));
    if let Some(r) = refused {
        return r;
    }
    let resp = reqwest::Client::new()
        .post(format!("{}/{to}", az.model))
        .header("authorization", format!("Bearer {}", crate::common::KEY))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    let kind = resp.headers().get("content-type").cloned();
    let bytes = resp.bytes().await.unwrap();
    let mut out = (status, bytes).into_response();
    if let Some(k) = kind {
        out.headers_mut().insert("content-type", k);
    }
    out
}

/// Azure's content filter refusing the prompt, while the test asks for it.
fn filtered(az: &Azure) -> Option<Response> {
    let mut n = az.filter_next.lock().unwrap();
    if *n == 0 {
        return None;
    }
    *n -= 1;
    let body = json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
            "hate": {"filtered": false, "severity": "safe"},
            "jailbreak": {"filtered": true, "detected": true},
            "self_harm": {"filtered": false, "severity": "safe"}}}}});
    Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
}

/// Entra ID's token endpoint: a token for the known app proving itself with its federated token.
async fn token(State(az): State<Arc<Azure>>, Path(tenant): Path<String>, body: String) -> Response {
    let form: HashMap<String, String> =
        body.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect();
    az.token_requests.lock().unwrap().push(form.clone());
    {
        let mut n = az.token_outage.lock().unwrap();
        if *n > 0 {
            *n -= 1;
            let body = json!({"error": "temporarily_unavailable", "error_description": "AADSTS90033: A transient error has occurred."});
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
    }
    let Some((t, client, federated)) = &az.app else {
        return error(StatusCode::BAD_REQUEST, "invalid_request", "no app");
    };
    let get = |k: &str| form.get(k).map(String::as_str);
    let proven = match (&az.secret, get("client_secret")) {
        (Some(secret), Some(given)) => given == secret && get("client_assertion").is_none(),
        _ => {
            get("client_assertion_type") == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                && get("client_assertion") == Some(federated.as_str())
        }
    };
    let ok = tenant == *t
        && get("client_id") == Some(client.as_str())
        && get("grant_type") == Some("client_credentials")
        && get("scope") == Some("https://cognitiveservices.azure.com/.default")
        && proven;
    if !ok {
        let body = json!({"error": "invalid_client", "error_description": "AADSTS700213: No matching federated identity record found for presented assertion."});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    let n = az.issued.lock().unwrap().len();
    let issued = format!("entra-access-token-{n}-{}", "x".repeat(24));
    az.issued.lock().unwrap().push(issued.clone());
    axum::Json(json!({"token_type": "Bearer", "expires_in": 3599, "access_token": issued})).into_response()
}

/// GitHub's OIDC token service, as the runner's `ACTIONS_ID_TOKEN_REQUEST_URL` serves it.
async fn oidc(State(az): State<Arc<Azure>>, Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let (Some(want), Some((_, _, federated))) = (&az.oidc_request_token, &az.app) else { return not_found() };
    if bearer != format!("Bearer {want}") && bearer != format!("bearer {want}") {
        return error(StatusCode::UNAUTHORIZED, "401", "bad request token");
    }
    if q.get("audience").map(String::as_str) != Some("api://AzureADTokenExchange") {
        return error(StatusCode::BAD_REQUEST, "400", "wrong audience");
    }
    axum::Json(json!({"count": 1, "value": federated})).into_response()
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()
}
