//! Which models answered a run: each model's turns, tokens and cost at its own prices, and why
//! the run moved on to it.

use super::RunRecord;
use crate::protocol::Usage;
use crate::spec::pricing::Pricing;
use serde::{Deserialize, Serialize};

/// One model the run used, in the order it used them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelUse {
    /// `openai`, `anthropic`, `azure`, `bedrock`, `vertex`, …
    pub provider: String,
    /// The model asked for.
    pub model: String,
    /// The model id the provider said answered, if it said.
    pub model_id: Option<String>,
    /// The first turn it was asked.
    pub from_turn: u32,
    /// Turns it answered.
    pub turns: u32,
    /// Tokens it used, as its provider counted them.
    pub usage: Usage,
    /// Its prices (dollars per million tokens), if the spec gives them.
    pub pricing: Option<Pricing>,
    /// Why the run moved on to it (null for the job's own model).
    pub switched_because: Option<String>,
}

impl ModelUse {
    pub fn new(provider: &str, model: &str, from_turn: u32, pricing: Option<Pricing>) -> Self {
        ModelUse {
            provider: provider.into(),
            model: model.into(),
            model_id: None,
            from_turn,
            turns: 0,
            usage: Usage::default(),
            pricing,
            switched_because: None,
        }
    }
}

impl RunRecord {
    /// Count tokens the provider billed: in the run's total, and the current model's.
    pub fn add_usage(&mut self, u: Usage) {
        self.usage.add(u);
        if let Some(m) = self.models.last_mut() {
            m.usage.add(u);
        }
    }

    /// What the run's tokens cost: each model's at its own prices (a model without prices
    /// counts nothing); before any model was asked, the run's total at the record's prices.
    pub fn spent_usd(&self) -> f64 {
        if self.models.is_empty() {
            return self.cost.map_or(0.0, |c| c.pricing.cost(&self.usage));
        }
        self.models.iter().filter_map(|m| m.pricing.map(|p| p.cost(&m.usage))).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            ..Usage::default()
        }
    }

    #[test]
    fn each_model_costs_at_its_own_prices() {
        let cheap = Pricing { input: 1.0, cached_input: 1.0, cache_write: 1.0, output: 2.0 };
        let dear = Pricing { input: 10.0, cached_input: 10.0, cache_write: 10.0, output: 20.0 };
        let mut r = RunRecord::new("j", "id", "t".into());
        r.cost = Some(crate::spec::pricing::Cost { usd: 0.0, limit_usd: None, pricing: dear });
        r.models.push(ModelUse::new("openai", "dear", 1, Some(dear)));
        r.add_usage(usage(1_000_000, 0));
        r.models.push(ModelUse::new("anthropic", "cheap", 2, Some(cheap)));
        r.add_usage(usage(1_000_000, 1_000_000));
        assert_eq!(r.usage.prompt_tokens, 2_000_000, "the run's total counts both");
        assert_eq!(r.models[1].usage.prompt_tokens, 1_000_000);
        assert!((r.spent_usd() - (10.0 + 1.0 + 2.0)).abs() < 1e-9, "{}", r.spent_usd());
    }
}
