//! `telemetry:` in the job spec: what the OpenTelemetry variables cannot say (whether this job
//! exports at all, content capture, the flush bound, attributes of the team's own).

use super::Checker;
use super::duration::Dur;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long hone waits at the end for the collector when the spec does not say.
pub const DEFAULT_FLUSH: Duration = Duration::from_secs(5);
/// The longest flush a spec may ask for.
pub const MAX_FLUSH: Duration = Duration::from_secs(30);
/// At most this many attributes of the job's own, each key and value bounded.
pub const MAX_ATTRIBUTES: usize = 16;
const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 256;

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// Export this job's traces and metrics when the environment names a collector
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`, …); false: never, whatever the environment says (default true).
    pub enabled: Option<bool>,
    /// Put the model's messages, tool arguments and tool results in spans (the GenAI
    /// conventions' content capture), each through the redactor and bounded (default false).
    pub capture_content: Option<bool>,
    /// The longest hone waits for the collector at the end of a run or fleet (default 5s, at
    /// most 30s); what is not sent by then is dropped with one warning.
    pub flush_timeout: Option<Dur>,
    /// Attributes of your own on every span and metric point, like `team: payments` (at most 16;
    /// keys of letters, digits, `.`, `_` and `-`).
    pub attributes: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TelemetrySpec {
    pub enabled: bool,
    pub capture_content: bool,
    pub flush_timeout: Duration,
    pub attributes: Vec<(String, String)>,
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        TelemetrySpec { enabled: true, capture_content: false, flush_timeout: DEFAULT_FLUSH, attributes: Vec::new() }
    }
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= MAX_KEY && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl Checker<'_> {
    pub(super) fn telemetry(&mut self, raw: Option<RawTelemetry>) -> TelemetrySpec {
        let raw = raw.unwrap_or_default();
        let flush_timeout = raw.flush_timeout.map_or(DEFAULT_FLUSH, |d| d.0);
        if flush_timeout.is_zero() || flush_timeout > MAX_FLUSH {
            self.err("telemetry.flush_timeout", "must be more than zero and at most 30s", "the default is 5s");
        }
        let attributes: Vec<(String, String)> = raw.attributes.unwrap_or_default().into_iter().collect();
        if attributes.len() > MAX_ATTRIBUTES {
            self.err("telemetry.attributes", format!("has {} entries", attributes.len()), "give at most 16");
        }
        for (k, v) in &attributes {
            if !valid_key(k) {
                self.err(
                    &format!("telemetry.attributes.{k}"),
                    "is not an attribute name hone accepts",
                    "use at most 64 letters, digits, `.`, `_` and `-`, like `team` or `cost.center`",
                );
            }
            if v.len() > MAX_VALUE {
                self.err(&format!("telemetry.attributes.{k}"), "is longer than 256 bytes", "give a shorter value");
            }
        }
        TelemetrySpec {
            enabled: raw.enabled.unwrap_or(true),
            capture_content: raw.capture_content.unwrap_or(false),
            flush_timeout: flush_timeout.min(MAX_FLUSH),
            attributes,
        }
    }
}
