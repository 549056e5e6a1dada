//! OTLP over gRPC: the official tonic exporters on a channel hone builds, so that the export
//! goes where hone's other connections go: through the environment's proxy (`HTTPS_PROXY`,
//! `HTTP_PROXY`, `ALL_PROXY`, with `NO_PROXY`; this machine and link-local addresses never) by
//! an HTTP CONNECT tunnel, over TLS that trusts the system's roots and `SSL_CERT_FILE` for an
//! `https://` endpoint; an `http://` endpoint is plain gRPC (a collector on this machine or the
//! cluster's inside).

use super::config::Signal;
use super::error::TelemetryError;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a connection to the collector is opened: directly, or through the proxy's tunnel.
#[derive(Clone)]
enum Connect {
    Direct(HttpConnector),
    Tunnel(Tunnel<HttpConnector>),
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<tokio::net::TcpStream>, BoxError>> + Send>>;

impl tower_service::Service<http::Uri> for Connect {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Connect::Direct(c) => c.poll_ready(cx).map_err(Into::into),
            Connect::Tunnel(t) => t.poll_ready(cx).map_err(Into::into),
        }
    }

    fn call(&mut self, dst: http::Uri) -> Connecting {
        match self {
            Connect::Direct(c) => {
                let f = c.call(dst);
                Box::pin(async move { f.await.map_err(Into::into) })
            }
            Connect::Tunnel(t) => {
                let f = t.call(dst);
                Box::pin(async move { f.await.map_err(Into::into) })
            }
        }
    }
}

fn bad(why: impl std::fmt::Display) -> TelemetryError {
    TelemetryError::Build(format!("the gRPC channel: {why}"))
}

/// The connector for `uri`, with the process's proxy settings.
fn connector(uri: &http::Uri, s: &crate::net::Settings) -> Result<Connect, TelemetryError> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(crate::net::CONNECT_TIMEOUT));
    let mut m = Matcher::builder().no(format!("{},{}", crate::net::DIRECT, s.no_proxy));
    for (var, value) in [("HTTP_PROXY", &s.http_proxy), ("HTTPS_PROXY", &s.https_proxy), ("ALL_PROXY", &s.all_proxy)] {
        let Some(v) = value else { continue };
        let url = crate::net::proxy_url(var, v).map_err(|e| bad(e.message))?;
        m = match var {
            "HTTP_PROXY" => m.http(url),
            "HTTPS_PROXY" => m.https(url),
            _ => m.all(url),
        };
    }
    let Some(via) = m.build().intercept(uri) else { return Ok(Connect::Direct(http)) };
    if via.uri().scheme_str() == Some("https") {
        return Err(bad("the proxy is spoken to over TLS, which the gRPC export cannot do; use http/protobuf"));
    }
    let mut tunnel = Tunnel::new(via.uri().clone(), http);
    if let Some(auth) = via.basic_auth() {
        tunnel = tunnel.with_auth(auth.clone());
    }
    Ok(Connect::Tunnel(tunnel))
}

/// The channel to the signal's endpoint (no connection is made before the first export).
fn channel(s: &Signal) -> Result<Channel, TelemetryError> {
    let settings = crate::net::Settings::process();
    let mut endpoint = Endpoint::from_shared(s.url.clone())
        .map_err(bad)?
        .connect_timeout(crate::net::CONNECT_TIMEOUT)
        .timeout(s.timeout)
        .user_agent(crate::net::USER_AGENT)
        .map_err(bad)?;
    if s.url.starts_with("https://") {
        let mut tls = ClientTlsConfig::new().with_native_roots();
        if let Some(path) = &settings.ca_file {
            let pem = crate::net::read_bundle(path).map_err(|e| bad(e.message))?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        endpoint = endpoint.tls_config(tls).map_err(bad)?;
    }
    let connect = connector(endpoint.uri(), settings)?;
    Ok(endpoint.connect_with_connector_lazy(connect))
}

fn metadata(s: &Signal) -> Result<tonic::metadata::MetadataMap, TelemetryError> {
    let mut headers = http::HeaderMap::new();
    for (k, v) in &s.headers {
        let name = http::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| bad(format!("`{k}` is not a header name")))?;
        let value = http::HeaderValue::from_str(v).map_err(|_| bad(format!("the `{k}` header's value is not one")))?;
        headers.insert(name, value);
    }
    Ok(tonic::metadata::MetadataMap::from_headers(headers))
}

/// A gRPC exporter's builder set up for `s`: hone's channel, the headers as metadata, the
/// timeout, no retries.
pub fn over_grpc<B: WithTonicConfig + WithExportConfig>(b: B, s: &Signal) -> Result<B, TelemetryError> {
    Ok(b.with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_channel(channel(s)?)
        .with_metadata(metadata(s)?)
        .with_timeout(s.timeout))
}
