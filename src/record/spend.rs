//! What a run spent, as CI outputs give it (the Action's outputs, `GITHUB_OUTPUT`, GitLab's
//! dotenv report) and as a fleet sums it per campaign; and the trace a run was exported as.

use super::RunRecord;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spend {
    /// Prompt tokens, cached or not, as the providers counted them.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// What the tokens cost, when every model used has prices (`model.pricing`).
    pub cost_usd: Option<f64>,
    /// Turns the model answered.
    pub turns: u64,
    /// Requests sent to a model: each turn's, and each retry.
    pub model_requests: u64,
    pub duration_ms: u64,
}

impl Spend {
    /// `other` added; the cost sums the known costs (unknown only while none is).
    pub fn add(&mut self, other: &Spend) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.turns = self.turns.saturating_add(other.turns);
        self.model_requests = self.model_requests.saturating_add(other.model_requests);
        self.duration_ms = self.duration_ms.saturating_add(other.duration_ms);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(((a + b) * 1e6).round() / 1e6),
            (a, b) => a.or(b),
        };
    }

    /// The CI outputs, by name (empty cost when unpriced).
    pub fn outputs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("input-tokens", self.input_tokens.to_string()),
            ("output-tokens", self.output_tokens.to_string()),
            ("cached-tokens", self.cached_tokens.to_string()),
            ("cost-usd", self.cost_usd.map(|c| format!("{c}")).unwrap_or_default()),
            ("turns", self.turns.to_string()),
            ("model-requests", self.model_requests.to_string()),
            ("duration-ms", self.duration_ms.to_string()),
        ]
    }
}

/// The OpenTelemetry trace a run was exported as, and its `invoke_agent hone` span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRef {
    pub trace_id: String,
    pub span_id: String,
}

impl RunRecord {
    /// What the run spent (after `seal`, which prices it).
    pub fn spend(&self) -> Spend {
        Spend {
            input_tokens: self.usage.prompt_tokens,
            output_tokens: self.usage.completion_tokens,
            cached_tokens: self.usage.cached_prompt_tokens,
            cost_usd: self.cost.map(|c| c.usd),
            turns: u64::from(self.turns),
            model_requests: u64::from(self.turns) + u64::from(self.model_retries.total),
            duration_ms: self.duration_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_add_up_and_the_known_costs_sum() {
        let a = Spend {
            input_tokens: 10,
            output_tokens: 2,
            cost_usd: Some(0.1),
            turns: 1,
            model_requests: 2,
            ..Spend::default()
        };
        let b = Spend {
            input_tokens: 5,
            output_tokens: 1,
            cost_usd: Some(0.2),
            turns: 2,
            model_requests: 2,
            ..Spend::default()
        };
        let mut sum = Spend::default();
        sum.add(&a);
        sum.add(&b);
        assert_eq!((sum.input_tokens, sum.output_tokens, sum.turns, sum.model_requests), (15, 3, 3, 4));
        assert_eq!(sum.cost_usd, Some(0.3));
        sum.add(&Spend::default());
        assert_eq!(sum.cost_usd, Some(0.3), "a part with no cost adds nothing");
        assert_eq!(Spend::default().outputs()[3], ("cost-usd", String::new()), "unpriced: empty");
        let out = a.outputs();
        assert_eq!(out[0], ("input-tokens", "10".to_string()));
        assert_eq!(out[3], ("cost-usd", "0.1".to_string()));
    }
}
