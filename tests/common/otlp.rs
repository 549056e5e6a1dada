//! An OTLP/HTTP receiver stand-in: it decodes what arrives at `/v1/traces` and `/v1/metrics`
//! with OpenTelemetry's own protobuf definitions (`opentelemetry-proto`), checks the request as
//! a collector does (POST, `application/x-protobuf`), records it, and answers as a collector
//! does. Also a collector that accepts connections and never answers, and an address where
//! nothing listens.

use super::connect_proxy::Task;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct Received {
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    /// Each request's headers, lower-case names.
    pub headers: Vec<HashMap<String, String>>,
    /// Every request body as it came (to look for what must never be sent).
    pub raw: Vec<Vec<u8>>,
}

pub struct Receiver {
    pub url: String,
    pub got: Arc<Mutex<Received>>,
    _task: Task,
}

fn headers_of(h: &HeaderMap) -> HashMap<String, String> {
    h.iter().map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string())).collect()
}

fn protobuf(h: &HeaderMap) -> bool {
    h.get("content-type").is_some_and(|v| v == "application/x-protobuf")
}

async fn traces(State(got): State<Arc<Mutex<Received>>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(req) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return (StatusCode::BAD_REQUEST, "not an ExportTraceServiceRequest").into_response();
    };
    if !protobuf(&headers) {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/x-protobuf only").into_response();
    }
    let mut g = got.lock().unwrap();
    g.traces.push(req);
    g.headers.push(headers_of(&headers));
    g.raw.push(body.to_vec());
    answer(ExportTraceServiceResponse::default().encode_to_vec())
}

async fn metrics(State(got): State<Arc<Mutex<Received>>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(req) = ExportMetricsServiceRequest::decode(body.as_ref()) else {
        return (StatusCode::BAD_REQUEST, "not an ExportMetricsServiceRequest").into_response();
    };
    if !protobuf(&headers) {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/x-protobuf only").into_response();
    }
    let mut g = got.lock().unwrap();
    g.metrics.push(req);
    g.headers.push(headers_of(&headers));
    g.raw.push(body.to_vec());
    answer(ExportMetricsServiceResponse::default().encode_to_vec())
}

fn answer(body: Vec<u8>) -> Response {
    ([("content-type", "application/x-protobuf")], body).into_response()
}

impl Receiver {
    /// A receiver made elsewhere (the gRPC one), read with the same helpers.
    pub fn of(url: String, got: Arc<Mutex<Received>>, task: Task) -> Receiver {
        Receiver { url, got, _task: task }
    }

    pub async fn start() -> Receiver {
        let got = Arc::new(Mutex::new(Received::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(traces))
            .route("/v1/metrics", axum::routing::post(metrics))
            .with_state(got.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, got, _task: Task(task) }
    }

    /// Every span received, with its resource's attributes.
    pub fn spans(&self) -> Vec<(Span, Vec<KeyValue>)> {
        let g = self.got.lock().unwrap();
        let mut out = Vec::new();
        for req in &g.traces {
            for rs in &req.resource_spans {
                let res = rs.resource.as_ref().map(|r| r.attributes.clone()).unwrap_or_default();
                for ss in &rs.scope_spans {
                    out.extend(ss.spans.iter().map(|s| (s.clone(), res.clone())));
                }
            }
        }
        out
    }

    /// Every metric received, by name.
    pub fn metrics(&self) -> Vec<Metric> {
        let g = self.got.lock().unwrap();
        let rms = g.metrics.iter().flat_map(|r| r.resource_metrics.iter());
        rms.flat_map(|rm| rm.scope_metrics.iter().flat_map(|s| s.metrics.iter().cloned())).collect()
    }

    /// The sum of a histogram's points (or a counter's values) named `name` whose attributes
    /// include `with`.
    pub fn total(&self, name: &str, with: &[(&str, &str)]) -> f64 {
        let matches = |attrs: &[KeyValue]| with.iter().all(|(k, v)| attr(attrs, k).as_deref() == Some(*v));
        let mut sum = 0.0;
        for m in self.metrics().into_iter().filter(|m| m.name == name) {
            match m.data {
                Some(metric::Data::Histogram(h)) => {
                    sum += h
                        .data_points
                        .iter()
                        .filter(|p| matches(&p.attributes))
                        .map(|p| p.sum.unwrap_or(0.0))
                        .sum::<f64>()
                }
                Some(metric::Data::Sum(s)) => {
                    for p in s.data_points.iter().filter(|p| matches(&p.attributes)) {
                        sum += match p.value {
                            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsDouble(d)) => d,
                            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(i)) => {
                                i as f64
                            }
                            None => 0.0,
                        }
                    }
                }
                _ => {}
            }
        }
        sum
    }

    /// Every byte received, as text (lossy), to search for what must not be there.
    pub fn all_text(&self) -> String {
        let g = self.got.lock().unwrap();
        g.raw.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>().join("\n")
    }
}

/// An attribute's value as text.
pub fn attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    let v = attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    Some(value_text(v))
}

fn value_text(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::ArrayValue(a)) => a.values.iter().map(value_text).collect::<Vec<_>>().join(","),
        _ => String::new(),
    }
}

/// An id in hex, as a TRACEPARENT writes it.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A collector that accepts every connection and never answers: what it holds, it keeps open.
pub async fn silent() -> (String, Task) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    (url, Task(task))
}

/// An address where nothing listens (connections are refused).
pub async fn refusing() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}
