//! `model.pricing` and `limits.max_cost_usd`: what a run's tokens cost, from prices the job
//! gives (never a table in the binary that goes stale), and the most the next request can cost.

use super::Checker;
use crate::protocol::Usage;
use serde::{Deserialize, Serialize};

/// Prices in US dollars per million tokens, as the job spec gives them.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPricing {
    #[schemars(range(min = 0))]
    pub input: Option<f64>,
    #[schemars(range(min = 0))]
    pub cached_input: Option<f64>,
    #[schemars(range(min = 0))]
    pub cache_write: Option<f64>,
    #[schemars(range(min = 0))]
    pub output: Option<f64>,
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pricing {
    /// Prompt tokens neither read from nor written to the provider's cache.
    pub input: f64,
    /// Prompt tokens read from the cache (default: `input`).
    pub cached_input: f64,
    /// Prompt tokens written to the cache (Anthropic; default: `input`).
    pub cache_write: f64,
    pub output: f64,
}

impl Pricing {
    /// The cost of `u`, in dollars: each kind of token at its price.
    pub fn cost(&self, u: &Usage) -> f64 {
        let cached = u.cached_prompt_tokens.min(u.prompt_tokens);
        let written = u.cache_write_tokens.min(u.prompt_tokens - cached);
        let plain = u.prompt_tokens - cached - written;
        (plain as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.cache_write
            + u.completion_tokens as f64 * self.output)
            / 1e6
    }

    /// The most a request of `prompt_tokens` (estimated) can cost: the whole prompt at the
    /// higher of the input and cache-write prices, and `max_output` tokens of output.
    pub fn most(&self, prompt_tokens: u64, max_output: u32) -> f64 {
        (prompt_tokens as f64 * self.input.max(self.cache_write) + f64::from(max_output) * self.output) / 1e6
    }
}

/// A run's cost, as the report shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cost {
    /// What the run's tokens cost, in US dollars, from the provider's token counts.
    pub usd: f64,
    /// `limits.max_cost_usd`.
    pub limit_usd: Option<f64>,
    /// The prices it was counted at (dollars per million tokens).
    pub pricing: Pricing,
}

/// Dollars for people: cents for sums of a dollar or more; below, up to four decimals and at
/// least two (`$0.15`, `$0.0123`).
pub fn dollars(v: f64) -> String {
    if v >= 1.0 {
        return format!("${v:.2}");
    }
    let mut s = format!("{v:.4}");
    while s.ends_with('0') && s.len() > s.find('.').map_or(0, |d| d + 3) {
        s.pop();
    }
    format!("${s}")
}

impl Checker<'_> {
    pub(super) fn pricing(&mut self, raw: Option<RawPricing>, at: &str) -> Option<Pricing> {
        let r = raw?;
        let (Some(input), Some(output)) = (r.input, r.output) else {
            let help =
                "give at least `input` and `output`, in dollars per million tokens, like `{ input: 2.0, output: 8.0 }`";
            let missing = if r.input.is_none() { "input" } else { "output" };
            self.missing(&format!("{at}.pricing.{missing}"), help);
            return None;
        };
        let p = Pricing {
            input,
            cached_input: r.cached_input.unwrap_or(input),
            cache_write: r.cache_write.unwrap_or(input),
            output,
        };
        // Only what the file says is checked (the defaults copy `input`).
        for (key, v) in
            [("input", r.input), ("cached_input", r.cached_input), ("cache_write", r.cache_write), ("output", r.output)]
        {
            if let Some(v) = v
                && (!v.is_finite() || v < 0.0)
            {
                let help = "dollars per million tokens, 0 or more";
                self.err(&format!("{at}.pricing.{key}"), format!("{v} is not a price"), help);
            }
        }
        Some(p)
    }

    /// `limits.max_cost_usd`: above zero, and only with prices to count against.
    /// `unpriced`: the path of the first model (or fallback) without prices, if any.
    pub(super) fn max_cost(&mut self, v: Option<f64>, unpriced: Option<&str>) -> Option<f64> {
        let v = v?;
        if !v.is_finite() || v <= 0.0 {
            self.err("limits.max_cost_usd", format!("{v} is not a budget"), "give dollars, more than zero, like 2.5");
        } else if let Some(at) = unpriced {
            self.err(
                "limits.max_cost_usd",
                "a cost budget needs prices",
                format!("add `{at}.pricing` (dollars per million tokens), like `{{ input: 2.0, cached_input: 0.5, output: 8.0 }}`"),
            );
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Pricing = Pricing { input: 2.0, cached_input: 0.5, cache_write: 2.5, output: 8.0 };

    #[test]
    fn each_kind_of_token_costs_its_price() {
        let u = Usage {
            prompt_tokens: 1_000_000,
            cached_prompt_tokens: 600_000,
            cache_write_tokens: 100_000,
            completion_tokens: 50_000,
            total_tokens: 1_050_000,
        };
        // 300k plain at $2, 600k cached at $0.50, 100k written at $2.50, 50k out at $8.
        let want = 0.6 + 0.3 + 0.25 + 0.4;
        assert!((P.cost(&u) - want).abs() < 1e-9, "{}", P.cost(&u));
        assert_eq!(P.cost(&Usage::default()), 0.0);
        // A provider that reports more cached tokens than prompt tokens is not charged below zero.
        let odd = Usage { prompt_tokens: 10, cached_prompt_tokens: 50, cache_write_tokens: 5, ..Default::default() };
        assert!((P.cost(&odd) - 10.0 * 0.5 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn the_most_a_request_costs_is_an_upper_bound() {
        assert!((P.most(100_000, 4096) - (0.25 + 4096.0 * 8.0 / 1e6)).abs() < 1e-9);
        assert_eq!(dollars(0.01234), "$0.0123");
        assert_eq!(dollars(12.345), "$12.35");
        assert_eq!((dollars(0.15), dollars(0.143), dollars(0.0)), ("$0.15".into(), "$0.143".into(), "$0.00".into()));
    }

    fn spec(model_tail: &str, limits: &str) -> Result<crate::spec::Job, Vec<crate::spec::Diagnostic>> {
        let text = format!(
            "version: 1\ntask: t\nmodel:\n  provider: openai\n  name: m\n{model_tail}verify: [{{ name: t, run: 'true' }}]\nlimits: {{ {limits} }}\n"
        );
        match crate::spec::parse(std::path::Path::new("job.yaml"), &text) {
            Ok(j) => Ok(j),
            Err(crate::spec::SpecError::Invalid(d)) => Err(d),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn prices_and_the_cost_budget_are_checked_with_positions() {
        let j = spec("  pricing: { input: 2, output: 8 }\n", "max_cost_usd: 1.5").unwrap();
        let p = j.model.pricing.unwrap();
        assert_eq!((p.cached_input, p.cache_write), (2.0, 2.0), "both default to the input price");
        assert_eq!(j.limits.max_cost_usd, Some(1.5));
        let e = spec("", "max_cost_usd: 1.5").unwrap_err();
        assert_eq!((e[0].path.as_str(), e[0].line), ("limits.max_cost_usd", 7));
        assert!(e[0].help.as_deref().unwrap().contains("model.pricing"));
        let e = spec("  pricing: { input: -1, output: 8 }\n", "max_cost_usd: 0").unwrap_err();
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["model.pricing.input", "limits.max_cost_usd"]);
        let e = spec("  pricing: { input: 2 }\n", "max_turns: 3").unwrap_err();
        assert_eq!(e[0].path, "model.pricing.output");
    }
}
