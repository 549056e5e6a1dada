//! The Amazon Bedrock client (`provider: bedrock`): the Converse API
//! (`POST /model/{id}/converse`) and ConverseStream (`/converse-stream`, answered in AWS
//! event-stream frames), signed with SigV4 (service `bedrock`) from the standard AWS credentials,
//! or authorized with a Bedrock API key.
//!
//! The endpoint is `https://bedrock-runtime.{region}.amazonaws.com`, unless `model.base_url`,
//! `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` or `AWS_ENDPOINT_URL` (in that order) names another (a VPC
//! endpoint, a proxy); STS's is `https://sts.{region}.amazonaws.com/`, unless
//! `AWS_ENDPOINT_URL_STS` or `AWS_ENDPOINT_URL` does. Both come from the operator only, are
//! https (plain http only to this machine), and no redirect is followed.

pub mod answer;
pub mod converse;
pub mod credentials;
pub mod errors;
pub mod eventstream;
pub mod profile;
pub mod sigv4;
pub mod web_identity;

use super::{ChatRequest, Model, ModelError, http};
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::protocol::{ModelErrorKind, Reply};
use crate::redact::Redactor;
use crate::spec::ModelSpec;
use credentials::Signer;
use serde_json::Value;
use std::time::Duration;

/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

pub struct Bedrock {
    pub http: reqwest::Client,
    /// `{endpoint}/model/{id}/converse` or `…/converse-stream`, the id encoded as one segment.
    pub url: reqwest::Url,
    pub region: String,
    pub signer: Signer,
    pub cache: converse::CachePoints,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Bedrock {
    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let body = converse::body(req, self.max_output_tokens, self.temperature, self.cache);
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::permanent(ModelErrorKind::BadRequest, format!("cannot write the request: {e}")))?;
        let accept = if self.stream { "application/vnd.amazon.eventstream" } else { "application/json" };
        let rb = self.http.post(self.url.clone()).header(reqwest::header::ACCEPT, accept);
        let rb = self.authorize(rb, &body).await?.header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        let resp = http::send(rb, self.request_timeout, self.stream).await?;
        let status = resp.status();
        if !status.is_success() {
            let headers = resp.headers().clone();
            let text = crate::model::http::body_text(resp).await;
            return Err(errors::from_http(status.as_u16(), &headers, &text));
        }
        if !self.stream {
            let v: Value = resp.json().await.map_err(|e| http::transport_error(&e))?;
            return answer::parse_response(&v);
        }
        let mut asm = answer::Assembler::default();
        eventstream::read(resp, self.idle_timeout, |frame| on_frame(&mut asm, &frame)).await?;
        asm.finish()
    }

    /// `rb` with its credentials: the bearer key, or the SigV4 headers over `body`.
    async fn authorize(&self, rb: reqwest::RequestBuilder, body: &[u8]) -> Result<reqwest::RequestBuilder, ModelError> {
        let creds = match &self.signer {
            Signer::Bearer(key) => return Ok(rb.bearer_auth(key)),
            Signer::Static(c) => c.clone(),
            Signer::Refreshing(r) => r.get().await?,
        };
        let host = host_header(&self.url);
        let amz_date = sigv4::amz_date(time::OffsetDateTime::now_utc());
        let scope =
            sigv4::Scope { region: &self.region, service: SERVICE, amz_date: &amz_date, content_sha256_header: true };
        let request = sigv4::Request {
            method: "POST",
            host: &host,
            path: self.url.path(),
            headers: &[("content-type", "application/json")],
            body,
        };
        Ok(sigv4::sign(&creds, &scope, &request).into_iter().fold(rb, |rb, (k, v)| rb.header(k, v)))
    }
}

/// One ConverseStream frame: an event for the assembler, or the exception the stream ended with.
pub(crate) fn on_frame(asm: &mut answer::Assembler, frame: &eventstream::Frame) -> Result<bool, ModelError> {
    match frame.str(":message-type") {
        Some("event") => {
            let data: Value = serde_json::from_slice(&frame.payload).map_err(|e| {
                ModelError::retryable(ModelErrorKind::StreamCut, format!("an event's payload was not JSON ({e})"))
            })?;
            asm.push(frame.str(":event-type").unwrap_or_default(), &data);
            Ok(false)
        }
        Some("exception") => {
            Err(errors::from_stream(frame.str(":exception-type").unwrap_or("exception"), &frame.payload))
        }
        Some("error") => {
            let said = frame.str(":error-message").unwrap_or("no message");
            let payload = serde_json::json!({"message": said}).to_string();
            Err(errors::from_stream(frame.str(":error-code").unwrap_or("error"), payload.as_bytes()))
        }
        _ => Ok(false),
    }
}

/// The `Host` header reqwest sends for `url`: the host, and the port when it is not the default.
fn host_header(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// The client for a `provider: bedrock` model block, and the credentials files it reads that
/// the environment does not name (a profile's `web_identity_token_file`). Errors are intake
/// errors (exit 2).
pub fn client(m: &ModelSpec, env: &RunEnv, redactor: &Redactor) -> Result<(Model, Vec<std::path::PathBuf>), HoneError> {
    if m.name.trim().is_empty() || m.name == "." || m.name == ".." {
        return Err(HoneError::new(Code::Spec, format!("`{}` is not a Bedrock model id", m.name)).hint(
            "set `model.name` to a model id or inference profile, like us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ));
    }
    let profile = profile::load(env)?;
    let region = credentials::region(m, env, &profile)?;
    let (base, from) = endpoint(m.base_url.as_deref(), env, &["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"])?
        .unwrap_or_else(|| (format!("https://bedrock-runtime.{region}.amazonaws.com"), "the region".into()));
    let op = if m.stream { "converse-stream" } else { "converse" };
    let id = sigv4::uri_encode(m.name.as_bytes(), false);
    let url = reqwest::Url::parse(&format!("{base}/model/{id}/{op}"))
        .map_err(|e| HoneError::new(Code::Spec, format!("the Bedrock endpoint from {from} is not a URL: {e}")))?;
    let sts = || -> Result<(reqwest::Client, String), HoneError> {
        let (base, _) = endpoint(None, env, &["AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"])?
            .unwrap_or_else(|| (format!("https://sts.{region}.amazonaws.com"), String::new()));
        Ok((super::http::client(&base)?, format!("{base}/")))
    };
    let cx = credentials::Context { env, profile: &profile, redactor, sts: &sts };
    let signer = credentials::signer(m, &cx)?;
    let origin = url.origin().ascii_serialization();
    tracing::info!(region, "bedrock: {} at {origin} (the endpoint from {from})", signer.describe());
    let files = profile.get("web_identity_token_file").map(std::path::PathBuf::from).into_iter().collect();
    let model = Model::Bedrock(Bedrock {
        http: super::http::client(&base)?,
        url,
        region,
        signer,
        cache: converse::cache_points(&m.name),
        temperature: m.temperature,
        max_output_tokens: m.max_output_tokens,
        stream: m.stream,
        request_timeout: m.request_timeout,
        idle_timeout: m.idle_timeout,
    });
    Ok((model, files))
}

/// The first endpoint set: `spec`, then each variable in turn; the base without a trailing `/`,
/// and where it came from. Credentials go with every request (a signature, an API key, STS's
/// web identity token), so never in clear text, but to this machine (a stand-in, a gateway).
fn endpoint(spec: Option<&str>, env: &RunEnv, vars: &[&str]) -> Result<Option<(String, String)>, HoneError> {
    let found = spec
        .map(|u| (u.to_string(), "`model.base_url`".to_string()))
        .or_else(|| vars.iter().find_map(|v| env.var(v).map(|u| (u.trim().to_string(), format!("`{v}`")))));
    let Some((url, from)) = found else { return Ok(None) };
    if !super::http::https_or_loopback(&url) {
        return Err(HoneError::new(Code::Spec, format!("{from} is `{url}`, which is not an https URL")).hint(
            "give the endpoint's root, like https://bedrock-runtime.us-east-1.amazonaws.com (plain http only to this machine)",
        ));
    }
    Ok(Some((url.trim_end_matches('/').to_string(), from)))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
