//! A run's metrics: the GenAI client metrics (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`) per model request, and hone's own: runs by status, their
//! duration and cost, checks by verdict, tool calls by tool and decision, egress connections
//! allowed and refused. Each point names the job and the repository, so a dashboard groups by
//! them; no value from the repository or the model is unbounded.

use super::attrs::{provider, split_model, text};
use crate::protocol::{Event, EventRecord};
use crate::record::RunRecord;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

pub struct Instruments {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
    cached: Counter<u64>,
    runs: Counter<u64>,
    run_duration: Histogram<f64>,
    cost: Counter<f64>,
    checks: Counter<u64>,
    tool_calls: Counter<u64>,
    egress: Counter<u64>,
}

/// The conventions' buckets for token counts and for a request's seconds.
const TOKEN_BUCKETS: [f64; 14] =
    [1., 4., 16., 64., 256., 1024., 4096., 16384., 65536., 262144., 1048576., 4194304., 16777216., 67108864.];
const SECOND_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

impl Instruments {
    pub fn new(meter: &Meter) -> Instruments {
        Instruments {
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used by each model request, by type (input, output)")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of each model request")
                .with_boundaries(SECOND_BUCKETS.to_vec())
                .build(),
            cached: meter
                .u64_counter("hone.tokens.cached_input")
                .with_unit("{token}")
                .with_description("Input tokens the provider read from its prompt cache")
                .build(),
            runs: meter.u64_counter("hone.runs").with_unit("{run}").with_description("Runs, by status").build(),
            run_duration: meter
                .f64_histogram("hone.run.duration")
                .with_unit("s")
                .with_description("Runs' wall time")
                .build(),
            cost: meter.f64_counter("hone.cost").with_unit("USD").with_description("What runs' tokens cost").build(),
            checks: meter
                .u64_counter("hone.checks")
                .with_unit("{check}")
                .with_description("Checks run, by verdict")
                .build(),
            tool_calls: meter
                .u64_counter("hone.tool.calls")
                .with_unit("{call}")
                .with_description("The model's tool calls, by tool and policy decision")
                .build(),
            egress: meter
                .u64_counter("hone.egress.connections")
                .with_unit("{connection}")
                .with_description("Connections through hone's egress proxy, allowed or refused")
                .build(),
        }
    }

    /// Record one run: its record and its events (as `events.jsonl` has them).
    pub fn record(&self, r: &RunRecord, events: &[EventRecord], repository: &str) {
        let base = [text("hone.job", &r.job), text("vcs.repository.name", repository)];
        let with = |more: &[KeyValue]| -> Vec<KeyValue> { base.iter().chain(more).cloned().collect() };
        self.runs.add(1, &with(&[KeyValue::new("hone.status", r.status.as_str())]));
        self.run_duration
            .record(r.duration_ms as f64 / 1000.0, &with(&[KeyValue::new("hone.status", r.status.as_str())]));
        if let Some(c) = r.cost {
            self.cost.add(c.usd, &with(&[text("gen_ai.request.model", &r.model)]));
        }
        for e in events {
            self.event(&e.event, &with);
        }
    }

    fn event(&self, e: &Event, with: &dyn Fn(&[KeyValue]) -> Vec<KeyValue>) {
        match e {
            Event::TurnCompleted { model, usage, duration_ms, .. } => {
                let (prov, name) = split_model(model);
                let request = [
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    text("gen_ai.provider.name", provider(prov)),
                    text("gen_ai.request.model", name),
                ];
                self.duration.record(*duration_ms as f64 / 1000.0, &with(&request));
                if let Some(u) = usage {
                    let typed = |t: &'static str| {
                        with(&[request.as_slice(), &[KeyValue::new("gen_ai.token.type", t)]].concat())
                    };
                    self.tokens.record(u.prompt_tokens, &typed("input"));
                    self.tokens.record(u.completion_tokens, &typed("output"));
                    self.cached.add(u.cached_prompt_tokens, &with(&request));
                }
            }
            Event::VerifyCompleted { attempt, check, passed, accepted, timed_out, .. } => {
                let verdict = super::attrs::verdict(*passed, *accepted, *timed_out);
                let round = if *attempt == 0 { "baseline" } else { "verify" };
                let attrs = [
                    text("hone.check.name", check),
                    KeyValue::new("hone.check.verdict", verdict),
                    KeyValue::new("hone.verify.round", round),
                ];
                self.checks.add(1, &with(&attrs));
            }
            Event::ToolCallCompleted { tool, code, .. } => {
                let denied = *code == Some(crate::error::Code::PolicyDenied);
                let attrs = [
                    text("gen_ai.tool.name", super::attrs::tool_name(tool)),
                    KeyValue::new("hone.tool.decision", if denied { "denied" } else { "allowed" }),
                ];
                self.tool_calls.add(1, &with(&attrs));
            }
            Event::Egress(c) => {
                let attrs = [
                    KeyValue::new("hone.egress.decision", if c.allowed { "allowed" } else { "refused" }),
                    text("hone.egress.purpose", &c.purpose),
                ];
                self.egress.add(1, &with(&attrs));
            }
            _ => {}
        }
    }
}
