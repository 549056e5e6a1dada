//! OpenTelemetry: every run, and every fleet, as a trace with metrics in the GenAI semantic
//! conventions, exported over OTLP when the standard variables name a collector (off
//! otherwise). A run's trace is built when it ends, from its record and its events (as the
//! reports have them), and exported within a bounded flush; a run in a fleet hands its spans and
//! metrics to the fleet's exporters instead, under the fleet's span for its repository.

mod attrs;
mod chat;
pub mod config;
mod content;
pub mod error;
mod export;
mod grpc;
mod http;
mod metrics;
pub mod parent;
mod spans;
pub mod tree;

pub use export::Pipeline;

use crate::env::RunEnv;
use crate::protocol::EventRecord;
use crate::protocol::transcript::Entry;
use crate::record::RunRecord;
use crate::redact::Redactor;
use crate::spec::telemetry::TelemetrySpec;
use opentelemetry::KeyValue;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tree::{Parent, Tree};

/// Where a run's telemetry goes.
#[derive(Clone, Debug, Default)]
pub enum Link {
    /// Decided by the run: the environment's variables and its job's `telemetry:` block; the
    /// run exports at its end.
    #[default]
    Own,
    /// Nothing is exported (replays).
    Off,
    /// A fleet's run: its spans go under `parent` (the fleet's span for the repository), to the
    /// fleet's exporters, which flush when the fleet ends.
    Fleet { pipeline: Arc<Pipeline>, parent: Parent, repository: String },
}

/// A finished run, as telemetry reads it.
pub struct Finished<'a> {
    pub record: &'a RunRecord,
    /// `events.jsonl`'s text: the events as the reports have them.
    pub events: &'a str,
    pub said: &'a [Entry],
    pub redactor: &'a Redactor,
    pub job: &'a TelemetrySpec,
    pub env: &'a RunEnv,
    /// The repository, as the report names it (`owner/name` where the CI says, or the directory).
    pub repository: &'a str,
    /// What is left of the run's wall-time budget: the flush never waits longer (nor less than a second).
    pub budget_left: Duration,
}

/// What exporting a run did: its trace (to put in the report) and the one warning, if any.
#[derive(Debug, Default)]
pub struct Exported {
    pub trace: Option<crate::record::TraceRef>,
    pub warning: Option<String>,
}

/// A text attribute's value from the repository or a file, bounded.
pub fn bounded(s: &str) -> String {
    attrs::bounded(s, attrs::MAX_VALUE)
}

/// Parse `events.jsonl`'s text back into events (lines that do not parse are skipped).
pub fn events_of(jsonl: &str) -> Vec<EventRecord> {
    jsonl.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The resource attributes of a process that runs one job: hone's version, the job, the CI
/// system, the forge, the pipeline and, when there is one, the repository.
pub fn resource(env: &RunEnv, job: &str, repository: Option<&str>) -> Vec<KeyValue> {
    let mut out = vec![KeyValue::new("service.version", env!("CARGO_PKG_VERSION")), attrs::text("hone.job", job)];
    out.extend(repository.map(|r| attrs::text("vcs.repository.name", r)));
    if let Some(ci) = crate::forge::ci::of(env) {
        out.push(KeyValue::new("cicd.system", ci.system));
        out.push(KeyValue::new("vcs.provider.name", ci.forge));
        out.extend(ci.pipeline.map(|p| attrs::text("cicd.pipeline.name", &p)));
        out.extend(ci.run_id.map(|p| attrs::text("cicd.pipeline.run.id", &p)));
        out.extend(ci.run_url.map(|p| attrs::text("cicd.pipeline.run.url.full", &p)));
    }
    out
}

/// Export a finished run's trace and metrics as `link` says. Never fails: what went wrong is
/// the warning. The report names the trace only when its spans reached the collector.
pub async fn run_ended(link: &Link, f: Finished<'_>) -> Exported {
    let started = Instant::now();
    let (pipeline, parent, owned) = match link {
        Link::Off => return Exported::default(),
        Link::Fleet { pipeline, parent, .. } => (pipeline.clone(), *parent, false),
        Link::Own => {
            let config = match config::config(|k| f.env.var(k), f.job) {
                Ok(Some(c)) => c,
                Ok(None) => return Exported::default(),
                Err(e) => return Exported { trace: None, warning: Some(e.warning()) },
            };
            let resource = resource(f.env, &f.record.job, Some(f.repository));
            match Pipeline::start(&config, resource) {
                Ok(p) => (Arc::new(p), parent::from_env(f.env), true),
                Err(e) => return Exported { trace: None, warning: Some(e.warning()) },
            }
        }
    };
    let deadline = started + pipeline.flush().min(f.budget_left.max(Duration::from_secs(1)));
    let events = events_of(f.events);
    let (root, sent) = export_run(&pipeline, parent, &f, &events, deadline).await;
    let warning = if owned { pipeline.finish(deadline).await.map(|e| e.warning()) } else { None };
    tracing::debug!("telemetry: {} spans of trace {} sent", pipeline.sent(), parent.trace_id);
    let trace =
        sent.then(|| crate::record::TraceRef { trace_id: parent.trace_id.to_string(), span_id: root.to_string() });
    Exported { trace, warning }
}

/// The run's spans, exported, and its metrics recorded; the root span's id.
async fn export_run(
    pipeline: &Pipeline,
    parent: Parent,
    f: &Finished<'_>,
    events: &[EventRecord],
    deadline: Instant,
) -> (opentelemetry::trace::SpanId, bool) {
    let mut tree = Tree::new(parent.trace_id);
    let root = tree.id();
    let content = pipeline.capture_content().then_some(content::Content { said: f.said, redactor: f.redactor });
    let input = spans::Input { record: f.record, events, content, repository: f.repository };
    spans::run(&mut tree, parent, root, &input);
    if let Some(m) = pipeline.instruments() {
        m.record(f.record, events, f.repository);
    }
    let sent = parent.sampled && pipeline.export(tree.spans, deadline).await;
    (root, sent)
}
