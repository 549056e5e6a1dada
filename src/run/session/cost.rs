//! The cost of one turn's attempts against the run's cost budget: what failed attempts were
//! billed, and whether one more still fits.

/// The cost of one turn's attempts: an empty answer's usage counts (the provider billed it), an
/// attempt cut off before its usage came counts at the most it could cost, and a retry is made
/// only while the next attempt still fits the cost budget.
pub(super) struct TurnCost {
    /// Tokens billed for failed attempts (empty answers), to add to the run's.
    billed: crate::protocol::Usage,
    /// (the model's prices, the budget, the most one attempt costs), with a budget.
    cap: Option<(crate::spec::pricing::Pricing, f64, f64)>,
    /// What the run had spent before this turn, each model at its own prices.
    before: f64,
    unknown: f64,
    stopped: Option<String>,
}

impl TurnCost {
    pub fn new(job: &crate::spec::Job, link: &crate::model::chain::Link, before: f64, prompt: u64) -> Self {
        let m = &link.spec;
        let cap = match (m.pricing, job.limits.max_cost_usd) {
            (Some(p), Some(limit)) => Some((p, limit, p.most(prompt, m.max_output_tokens))),
            _ => None,
        };
        TurnCost { billed: Default::default(), cap, before, unknown: 0.0, stopped: None }
    }

    /// After a failed attempt: whether to try again.
    pub fn may_retry(&mut self, err: &crate::model::ModelError) -> bool {
        let next = self.cap.map_or(0.0, |c| c.2);
        match err {
            crate::model::ModelError::Empty { usage: Some(u) } => self.billed.add(*u),
            _ => self.unknown += next,
        }
        let Some((pricing, limit, next)) = self.cap else { return true };
        let spent = self.before + pricing.cost(&self.billed) + self.unknown;
        if spent + next <= limit {
            return true;
        }
        use crate::spec::pricing::dollars;
        self.stopped = Some(format!(
            "the cost budget ({}) would be exceeded by a retry: {} spent (failed attempts counted at their most), and the next attempt could cost up to {}",
            dollars(limit),
            dollars(spent),
            dollars(next)
        ));
        false
    }

    /// The tokens failed attempts were billed for, and why the retries stopped for the cost
    /// budget, if they did.
    pub fn finish(self) -> (crate::protocol::Usage, Option<String>) {
        (self.billed, self.stopped)
    }
}
