//! Where telemetry goes, from the standard OpenTelemetry variables and the job's `telemetry:`
//! block: a pure decision, tested by examples. Off unless a variable names a collector; off with
//! `OTEL_SDK_DISABLED=true` or the job's `enabled: false`.

use super::error::TelemetryError;
use crate::spec::telemetry::TelemetrySpec;
use std::time::Duration;

/// How the collector is spoken to (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpProtobuf,
    Grpc,
}

/// One signal's destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The whole URL requests go to (for HTTP, the signal's path included).
    pub url: String,
    pub protocol: Protocol,
    /// Request headers (`OTEL_EXPORTER_OTLP_HEADERS`): often a key; never written anywhere.
    pub headers: Vec<(String, String)>,
    /// One request's limit (`OTEL_EXPORTER_OTLP_TIMEOUT`); every export also ends at the flush
    /// bound, whichever comes first.
    pub timeout: Duration,
}

/// Everything the exporters are built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub traces: Option<Signal>,
    pub metrics: Option<Signal>,
    /// `OTEL_SERVICE_NAME` (default `hone`).
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, then the job's `telemetry.attributes`.
    pub resource: Vec<(String, String)>,
    pub capture_content: bool,
    /// The longest wait for the collector at the end.
    pub flush: Duration,
}

impl Config {
    /// The header values: secrets, kept out of every message.
    pub fn secrets(&self) -> Vec<String> {
        let signals = self.traces.iter().chain(&self.metrics);
        signals.flat_map(|s| s.headers.iter().map(|(_, v)| v.clone())).filter(|v| v.len() >= 4).collect()
    }

    /// `text` (an exporter's error) without the header values or the endpoints' query strings.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets() {
            out = out.replace(s.as_str(), "***");
        }
        for s in self.traces.iter().chain(&self.metrics) {
            if let Some((_, query)) = s.url.split_once('?') {
                out = out.replace(query, "***");
            }
        }
        out
    }
}

/// The values of the OTLP header variables, whatever else the variables say: for the process's
/// redactor, before anything is written.
pub fn header_secrets<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Vec<String> {
    let vars =
        ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"];
    let pairs = vars.iter().filter_map(|v| get(v).map(|t| pairs(v, t).unwrap_or_default()));
    pairs.flatten().map(|(_, v)| v).filter(|v| v.len() >= 4).collect()
}

/// The OTLP default endpoints' ports are the collector's; there is no default host: without a
/// variable naming one, nothing is exported.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The configuration `get` (the process's variables) and the job's block give, or `None` when
/// nothing is to be exported.
pub fn config<'a>(
    get: impl Fn(&str) -> Option<&'a str>,
    job: &TelemetrySpec,
) -> Result<Option<Config>, TelemetryError> {
    if truthy(get("OTEL_SDK_DISABLED")) || !job.enabled {
        return Ok(None);
    }
    let traces = signal(&get, "TRACES", "/v1/traces")?;
    let metrics = signal(&get, "METRICS", "/v1/metrics")?;
    if traces.is_none() && metrics.is_none() {
        return Ok(None);
    }
    let service_name = get("OTEL_SERVICE_NAME").map(str::trim).filter(|s| !s.is_empty()).unwrap_or("hone");
    let mut resource = pairs("OTEL_RESOURCE_ATTRIBUTES", get("OTEL_RESOURCE_ATTRIBUTES").unwrap_or(""))?;
    resource.extend(job.attributes.iter().cloned());
    Ok(Some(Config {
        traces,
        metrics,
        service_name: service_name.to_string(),
        resource,
        capture_content: job.capture_content || truthy(get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")),
        flush: job.flush_timeout,
    }))
}

/// One signal: its own variables first (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as given),
/// then the shared ones (`OTEL_EXPORTER_OTLP_ENDPOINT`, a base the signal's path is added to
/// for HTTP). `OTEL_TRACES_EXPORTER=none` (or `METRICS`) turns one signal off.
fn signal<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    name: &str,
    path: &str,
) -> Result<Option<Signal>, TelemetryError> {
    let own_var = |suffix: &str| format!("OTEL_EXPORTER_OTLP_{name}_{suffix}");
    let own = |suffix: &str| get(&own_var(suffix)).filter(|v| !v.trim().is_empty());
    let shared = |suffix: &str| get(&format!("OTEL_EXPORTER_OTLP_{suffix}")).filter(|v| !v.trim().is_empty());
    if own("ENDPOINT").is_none() && shared("ENDPOINT").is_none() {
        return Ok(None);
    }
    let exporter_var = format!("OTEL_{name}_EXPORTER");
    let exporters = get(&exporter_var).unwrap_or("otlp").to_ascii_lowercase();
    let listed: Vec<&str> = exporters.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    if listed.contains(&"none") || (!listed.is_empty() && !listed.contains(&"otlp")) {
        return match listed.iter().find(|e| !matches!(**e, "none" | "otlp")) {
            Some(other) => Err(TelemetryError::Exporter { var: exporter_var, value: (*other).into() }),
            None => Ok(None),
        };
    }
    let protocol = match own("PROTOCOL").or_else(|| shared("PROTOCOL")).map(str::trim) {
        None | Some("http/protobuf") => Protocol::HttpProtobuf,
        Some("grpc") => Protocol::Grpc,
        Some(other) => return Err(TelemetryError::Protocol(other.into())),
    };
    let url = match (own("ENDPOINT"), shared("ENDPOINT")) {
        (Some(u), _) => u.trim().to_string(),
        (None, Some(base)) if protocol == Protocol::HttpProtobuf => with_path(base.trim(), path)?,
        (None, base) => base.unwrap_or_default().trim().to_string(),
    };
    let mut headers = pairs("OTEL_EXPORTER_OTLP_HEADERS", shared("HEADERS").unwrap_or(""))?;
    headers.extend(pairs(&own_var("HEADERS"), own("HEADERS").unwrap_or(""))?);
    let timeout = match (own("TIMEOUT"), shared("TIMEOUT")) {
        (Some(ms), _) => millis(&own_var("TIMEOUT"), ms)?,
        (None, Some(ms)) => millis("OTEL_EXPORTER_OTLP_TIMEOUT", ms)?,
        (None, None) => DEFAULT_TIMEOUT,
    };
    check_url(&url, !headers.is_empty())?;
    Ok(Some(Signal { url, protocol, headers, timeout }))
}

/// A limit in milliseconds (at most an hour: a larger one means no limit but the flush bound).
fn millis(var: &str, ms: &str) -> Result<Duration, TelemetryError> {
    ms.trim()
        .parse()
        .map(|n: u64| Duration::from_millis(n.min(3_600_000)))
        .map_err(|_| TelemetryError::Timeout { var: var.into(), value: ms.into() })
}

/// The shared endpoint with the signal's path added to its path (a query string stays last).
fn with_path(base: &str, path: &str) -> Result<String, TelemetryError> {
    let mut url = reqwest::Url::parse(base).map_err(|_| TelemetryError::Endpoint(shown_url(base)))?;
    let joined = format!("{}{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    Ok(url.to_string())
}

/// An http(s) URL with no user or password in it (a credential belongs in the headers); headers
/// (often a key) go over plain http only to this machine.
fn check_url(url: &str, headers: bool) -> Result<(), TelemetryError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| TelemetryError::Endpoint(shown_url(url)))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(TelemetryError::Userinfo(shown_url(url)));
    }
    if http::Uri::try_from(url).is_err() {
        return Err(TelemetryError::Endpoint(shown_url(url)));
    }
    match parsed.scheme() {
        "https" | "http" if !headers || crate::model::http::https_or_loopback(url) => Ok(()),
        "http" => Err(TelemetryError::PlainHeaders(shown_url(url))),
        _ => Err(TelemetryError::Endpoint(shown_url(url))),
    }
}

/// The URL for messages: without a user, a password or a query string.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "(not a URL)".into(),
    }
}

/// `key=value,key=value`, values percent-decoded (the W3C Baggage form the variables use).
fn pairs(var: &str, text: &str) -> Result<Vec<(String, String)>, TelemetryError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| TelemetryError::Pairs(var.into()))?;
        let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy().into_owned();
        if k.trim().is_empty() {
            return Err(TelemetryError::Pairs(var.into()));
        }
        out.push((k.trim().to_string(), v));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
