//! The OTLP/HTTP exporter's client: hone's own reqwest client (`net.rs`: the environment's
//! proxies, `SSL_CERT_FILE`, no redirects, a connect timeout), each request bounded in time and
//! its answer in size, run on hone's runtime whichever thread the exporter calls from.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use std::time::Duration;

/// The most of a collector's answer hone reads.
const MAX_ANSWER: usize = 64 * 1024;

#[derive(Debug)]
pub struct Client {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    /// A client for `url` that gives up on a request after `timeout`.
    pub fn new(
        url: &str,
        timeout: Duration,
        runtime: tokio::runtime::Handle,
    ) -> Result<Client, crate::error::HoneError> {
        let client = crate::net::builder(url)?
            .timeout(timeout)
            .build()
            .map_err(|e| crate::error::HoneError::new(crate::error::Code::Telemetry, format!("no HTTP client: {e}")))?;
        Ok(Client { client, runtime })
    }
}

/// Why a request failed, in words that say what to look at (never the URL, which may hold a
/// password).
#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error("the collector did not answer in time")]
    Timeout,
    #[error("the collector could not be reached (connection failed)")]
    Connect,
    #[error("the request to the collector failed")]
    Other,
}

fn failed(e: reqwest::Error) -> HttpError {
    Box::new(if e.is_timeout() {
        Failed::Timeout
    } else if e.is_connect() {
        Failed::Connect
    } else {
        Failed::Other
    })
}

async fn send(client: reqwest::Client, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let (parts, body) = request.into_parts();
    let sent = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(failed)?;
    let mut answer = Response::builder().status(sent.status());
    if let Some(h) = answer.headers_mut() {
        h.extend(sent.headers().iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut body = Vec::new();
    let mut stream = sent;
    while let Some(chunk) = stream.chunk().await.map_err(failed)? {
        body.extend_from_slice(&chunk[..chunk.len().min(MAX_ANSWER - body.len())]);
        if body.len() >= MAX_ANSWER {
            break;
        }
    }
    Ok(answer.body(Bytes::from(body))?)
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        // The metrics reader calls from a thread of its own, outside any runtime.
        self.runtime.spawn(send(self.client.clone(), request)).await?
    }
}
