//! A fleet as one trace: a `hone fleet` span (under the CI's `TRACEPARENT`, if any), a
//! `repository` span per repository (its clone and its run), each run's own spans under it; the
//! fleet's exporters take every run's spans and metrics and flush once, at the end.

use super::aggregate::{FleetReport, RepoResult};
use crate::env::RunEnv;
use crate::telemetry::tree::{self, Parent, Span, Tree};
use crate::telemetry::{self, Link, Pipeline};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanId;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::time::Instant;

pub struct FleetTrace {
    pipeline: Arc<Pipeline>,
    /// The fleet span, as a parent.
    fleet: Parent,
    /// Where the fleet span hangs.
    above: Parent,
    started: SystemTime,
}

/// One repository's place in the trace, taken when it starts.
pub struct Repo {
    span: SpanId,
    started: SystemTime,
    pub link: Link,
}

impl FleetTrace {
    /// The fleet's exporters, when the environment and the job's `telemetry:` name a collector;
    /// otherwise none, with the warning when the variables are wrong.
    pub fn start(env: &RunEnv, job: &crate::spec::Job) -> (Option<FleetTrace>, Option<String>) {
        let config = match telemetry::config::config(|k| env.var(k), &job.telemetry) {
            Ok(Some(c)) => c,
            Ok(None) => return (None, None),
            Err(e) => return (None, Some(e.warning())),
        };
        match Pipeline::start(&config, telemetry::resource(env, &job.name, None)) {
            Err(e) => (None, Some(e.warning())),
            Ok(p) => {
                let above = telemetry::parent::from_env(env);
                let fleet = above.child_of(tree::span_id());
                (Some(FleetTrace { pipeline: Arc::new(p), fleet, above, started: SystemTime::now() }), None)
            }
        }
    }

    /// A repository starts: its span's id, and the link its run exports through.
    pub fn repository(&self, id: &str) -> Repo {
        let span = tree::span_id();
        let parent = self.fleet.child_of(span);
        let link = Link::Fleet { pipeline: self.pipeline.clone(), parent, repository: id.to_string() };
        Repo { span, started: SystemTime::now(), link }
    }

    /// A repository ended with `r`: its span, sent.
    pub async fn repository_done(&self, repo: Repo, r: &RepoResult) {
        let mut tree = Tree::new(self.fleet.trace_id);
        let attrs = [
            KeyValue::new("vcs.repository.name", telemetry::bounded(&r.id)),
            KeyValue::new("hone.status", r.status.as_str()),
            KeyValue::new("gen_ai.usage.input_tokens", r.spend.input_tokens as i64),
            KeyValue::new("gen_ai.usage.output_tokens", r.spend.output_tokens as i64),
        ];
        let error = (r.status == super::aggregate::RepoStatus::Failed)
            .then(|| r.code.map_or("failed".to_string(), |c| c.as_str().to_string()));
        tree.add_as(
            repo.span,
            self.fleet,
            Span::new("repository", repo.started, SystemTime::now()).attrs(attrs).error(error),
        );
        if self.fleet.sampled {
            self.pipeline.export(tree.spans, Instant::now() + self.pipeline.flush()).await;
        }
    }

    /// The fleet ended: its span sent and everything flushed; the trace and any warning go in
    /// `report`. A cancelled fleet gives the collector at most a second: its reports come first.
    pub async fn finish(&self, report: &mut FleetReport, cancelled: bool) {
        let mut tree = Tree::new(self.fleet.trace_id);
        let mut attrs = vec![
            KeyValue::new("hone.job", telemetry::bounded(&report.job)),
            KeyValue::new("hone.repositories", report.repos.len() as i64),
            KeyValue::new("hone.exit_code", i64::from(report.exit_code)),
            KeyValue::new("gen_ai.usage.input_tokens", report.spend.input_tokens as i64),
            KeyValue::new("gen_ai.usage.output_tokens", report.spend.output_tokens as i64),
        ];
        attrs.extend(report.spend.cost_usd.map(|c| KeyValue::new("hone.cost.usd", c)));
        attrs.extend(report.counts.iter().map(|(k, v)| KeyValue::new(format!("hone.repositories.{k}"), *v as i64)));
        let error = (report.exit_code != crate::exit::SUCCESS).then(|| format!("exit {}", report.exit_code));
        let span = Span::new("hone fleet", self.started, SystemTime::now()).attrs(attrs).error(error);
        tree.add_as(self.fleet.span_id, self.above, span);
        let bound = if cancelled {
            self.pipeline.flush().min(std::time::Duration::from_secs(1))
        } else {
            self.pipeline.flush()
        };
        let deadline = Instant::now() + bound;
        let sent = self.fleet.sampled && self.pipeline.export(tree.spans, deadline).await;
        let warning = self.pipeline.finish(deadline).await;
        report.trace = sent.then(|| crate::record::TraceRef {
            trace_id: self.fleet.trace_id.to_string(),
            span_id: self.fleet.span_id.to_string(),
        });
        report.warnings.extend(warning.map(|w| w.warning()));
    }
}
