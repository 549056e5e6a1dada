//! The exporters: the official OTLP span and metric exporters, over HTTP/protobuf through hone's
//! own client or over gRPC, built only when a collector is named. Nothing here may slow a run
//! beyond its flush bound: each export has a deadline, the first failure stops the rest (one
//! warning), and the metrics' final flush runs on a thread of its own that is waited for only
//! until the deadline.

use super::config::{Config, Protocol, Signal};
use super::error::TelemetryError;
use super::metrics::Instruments;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Spans are sent in batches of at most this many.
const BATCH: usize = 512;

pub struct Pipeline {
    spans: Option<opentelemetry_otlp::SpanExporter>,
    meters: Option<(SdkMeterProvider, Instruments)>,
    /// The first failure; after it nothing more is sent.
    failed: Mutex<Option<TelemetryError>>,
    /// The same, for the metrics reader's thread.
    stopped: Arc<AtomicBool>,
    sent: AtomicUsize,
    /// What it was built from: its secrets are kept out of any message.
    config: Config,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pipeline")
    }
}

fn headers(s: &Signal) -> std::collections::HashMap<String, String> {
    s.headers.iter().cloned().collect()
}

/// An HTTP exporter's builder set up for `s`: hone's client, the endpoint, the headers, the
/// timeout, no retries.
fn over_http<B: WithHttpConfig + WithExportConfig>(b: B, s: &Signal) -> Result<B, TelemetryError> {
    let client = super::http::Client::new(&s.url, s.timeout, tokio::runtime::Handle::current())
        .map_err(|e| TelemetryError::Build(e.message))?;
    Ok(b.with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_http_client(client)
        .with_endpoint(&s.url)
        .with_timeout(s.timeout)
        .with_headers(headers(s)))
}

fn span_exporter(s: &Signal, resource: &Resource) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let b = opentelemetry_otlp::SpanExporter::builder();
    let built = match s.protocol {
        Protocol::HttpProtobuf => over_http(b.with_http(), s)?.build(),
        Protocol::Grpc => super::grpc::over_grpc(b.with_tonic(), s)?.build(),
    };
    let mut exporter = built.map_err(|e| TelemetryError::Build(e.to_string()))?;
    exporter.set_resource(resource);
    Ok(exporter)
}

fn meters(
    s: &Signal,
    resource: Resource,
    failed: &Arc<AtomicBool>,
) -> Result<(SdkMeterProvider, Instruments), TelemetryError> {
    let b = opentelemetry_otlp::MetricExporter::builder().with_temporality(Temporality::Delta);
    let built = match s.protocol {
        Protocol::HttpProtobuf => over_http(b.with_http(), s)?.build(),
        Protocol::Grpc => super::grpc::over_grpc(b.with_tonic(), s)?.build(),
    };
    let inner = built.map_err(|e| TelemetryError::Build(e.to_string()))?;
    let exporter = OnRuntime { inner, runtime: tokio::runtime::Handle::current(), failed: failed.clone() };
    // Collected once, at the end: the interval only keeps the reader from sending empty batches.
    let reader = PeriodicReader::builder(exporter).with_interval(Duration::from_secs(24 * 3600)).build();
    let provider = SdkMeterProvider::builder().with_resource(resource).with_reader(reader).build();
    let instruments = Instruments::new(&provider.meter("hone"));
    Ok((provider, instruments))
}

/// A metric exporter whose exports run on hone's runtime: the SDK's reader calls from a thread
/// of its own, and the exporters' clients need the runtime's I/O.
/// After the pipeline's first failure it sends nothing.
struct OnRuntime<E> {
    inner: E,
    runtime: tokio::runtime::Handle,
    failed: Arc<AtomicBool>,
}

impl<E: PushMetricExporter> PushMetricExporter for OnRuntime<E> {
    fn export(&self, metrics: &ResourceMetrics) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let done = if self.failed.load(Ordering::Relaxed) {
            Err(OTelSdkError::InternalFailure("an earlier export failed".into()))
        } else {
            self.runtime.block_on(self.inner.export(metrics))
        };
        std::future::ready(done)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

impl Pipeline {
    /// The exporters `config` names, for a process described by `resource` (on the current
    /// runtime: call from inside it).
    pub fn start(config: &Config, resource: Vec<KeyValue>) -> Result<Pipeline, TelemetryError> {
        // `OTEL_SERVICE_NAME` wins over a `service.name` among the attributes, as the spec has it.
        let resource = Resource::builder_empty()
            .with_attributes(config.resource.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())))
            .with_attributes(resource)
            .with_service_name(config.service_name.clone())
            .build();
        let stopped = Arc::new(AtomicBool::new(false));
        let scrub = |e: TelemetryError| match e {
            TelemetryError::Build(text) => TelemetryError::Build(config.scrub(&text)),
            other => other,
        };
        let spans = config.traces.as_ref().map(|s| span_exporter(s, &resource)).transpose().map_err(scrub)?;
        let meters =
            config.metrics.as_ref().map(|s| meters(s, resource.clone(), &stopped)).transpose().map_err(scrub)?;
        Ok(Pipeline {
            spans,
            meters,
            failed: Mutex::new(None),
            stopped,
            sent: AtomicUsize::new(0),
            config: config.clone(),
        })
    }

    /// Content capture (the job's opt-in).
    pub fn capture_content(&self) -> bool {
        self.config.capture_content
    }

    /// The longest wait for the collector.
    pub fn flush(&self) -> Duration {
        self.config.flush
    }

    pub fn instruments(&self) -> Option<&Instruments> {
        self.meters.as_ref().map(|(_, i)| i)
    }

    /// How many spans reached the collector.
    pub fn sent(&self) -> usize {
        self.sent.load(Ordering::Relaxed)
    }

    fn has_failed(&self) -> bool {
        self.failed.lock().map(|f| f.is_some()).unwrap_or(true)
    }

    fn fail(&self, e: TelemetryError) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Ok(mut f) = self.failed.lock()
            && f.is_none()
        {
            *f = Some(e);
        }
    }

    /// An exporter's error, without any secret and bounded.
    fn scrub(&self, e: &dyn std::fmt::Display) -> String {
        super::attrs::bounded(&self.config.scrub(&e.to_string()), 300)
    }

    /// Send `spans`, giving up at `deadline`; after a failure, nothing is sent. Whether every
    /// span reached the collector.
    pub async fn export(&self, spans: Vec<SpanData>, deadline: Instant) -> bool {
        let Some(exporter) = &self.spans else { return false };
        let mut spans = spans;
        while !spans.is_empty() && !self.has_failed() {
            let rest = spans.split_off(spans.len().min(BATCH));
            let n = spans.len();
            match tokio::time::timeout_at(deadline, exporter.export(spans)).await {
                Ok(Ok(())) => {
                    self.sent.fetch_add(n, Ordering::Relaxed);
                }
                Ok(Err(e)) => self.fail(TelemetryError::Export(self.scrub(&e))),
                Err(_) => self.fail(TelemetryError::Flush(self.flush())),
            }
            spans = rest;
        }
        !self.has_failed()
    }

    /// Send the metrics and stop, waiting at most until `deadline`: the one warning there is,
    /// if anything failed. The provider is always shut down here, on a thread nothing waits for
    /// past the deadline (after a failure it sends nothing), so that dropping it later never
    /// blocks.
    pub async fn finish(&self, deadline: Instant) -> Option<TelemetryError> {
        if let Some((provider, _)) = &self.meters {
            let provider = provider.clone();
            let (tx, rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new().name("hone-metrics".into()).spawn(move || {
                let _ = tx.send(provider.shutdown());
            });
            let failed_before = self.has_failed();
            match spawned {
                Err(e) => self.fail(TelemetryError::Export(e.to_string())),
                Ok(_) => match tokio::time::timeout_at(deadline, rx).await {
                    Ok(Ok(Ok(()))) => {}
                    Ok(Ok(Err(_))) | Ok(Err(_)) if failed_before => {}
                    Ok(Ok(Err(e))) => self.fail(TelemetryError::Export(self.scrub(&e))),
                    Ok(Err(_)) => self.fail(TelemetryError::Export("the metrics reader stopped".into())),
                    Err(_) => self.fail(TelemetryError::Flush(self.flush())),
                },
            }
        }
        self.failed.lock().ok().and_then(|f| f.clone())
    }
}
