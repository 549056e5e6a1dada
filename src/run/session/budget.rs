//! The run's accounting inside the turn loop: the turn and token budgets, usage as the provider
//! reports it (which calibrates the token estimate), and compaction when the history nears the
//! model's context window.

use super::super::state::State;
use super::context;
use super::turns::Loop;
use crate::error::Code;
use crate::protocol::{Event, Reply};
use crate::record::Status;
use crate::run::meter::Used;
use tokio::time::Instant;

impl Loop<'_> {
    /// Compact the history when it nears the context window (or always, when `force`d by a
    /// context-length error: then to half of what it was).
    pub(super) fn maybe_compact(&mut self, turn: u32, force: bool, reason: &str) {
        let window = self.spec().context_window;
        let before = self.sizing.tokens(&self.messages);
        if !force && (before as f64) < window as f64 * context::COMPACT_AT {
            return;
        }
        let target = if force { (before / 2).max(1024).min(window) } else { window };
        let target_raw = self.sizing.uncalibrated(target);
        let plan = self.run.record.plan.as_ref().map(|p| p.render());
        if let Some(c) = context::compact(&self.messages, target_raw, plan.as_deref()) {
            self.messages = c;
            self.instructions_restate();
            let after = self.sizing.tokens(&self.messages);
            self.run.record.compactions += 1;
            self.lane.events.emit(Event::Compacted {
                turn,
                before_tokens: before,
                after_tokens: after,
                reason: reason.into(),
            });
        }
    }

    /// What this try has spent, told to the job's meter (which the budgets read).
    pub(super) fn report_spend(&self) {
        let used = Used { usd: self.run.record.spent_usd(), tokens: self.run.record.usage.total_tokens };
        self.lane.meter.report(self.lane.number, used);
    }

    /// What every try of the job has spent so far, in dollars (this one's told first).
    pub(super) fn spent_by_all(&self) -> f64 {
        self.report_spend();
        self.lane.meter.spent().usd
    }

    /// Usage counted, and told to the meter.
    pub(super) fn add_usage(&mut self, u: crate::protocol::Usage) {
        self.run.record.add_usage(u);
        self.report_spend();
    }

    /// The turn budget (this try's) and the token budget (the job's: every try's tokens).
    pub(super) fn out_of_budget(&mut self) -> Option<Status> {
        let limits = self.lane.limits;
        self.report_spend();
        let (tokens, own) = (self.lane.meter.spent().tokens, self.run.record.usage.total_tokens);
        let why = if self.run.record.turns >= limits.max_turns {
            format!("the turn budget ({}) ran out before the task was done", limits.max_turns)
        } else if tokens >= limits.max_tokens {
            format!("the token budget ({}) ran out: {} used{}", limits.max_tokens, tokens, self.by_tries())
        } else if let Some(cap) = self.lane.own.max_tokens.filter(|cap| own >= *cap) {
            format!("this try's token budget ({cap}) ran out: {own} used")
        } else {
            return None;
        };
        self.fail(Code::Budget, why);
        self.enter(State::Summarizing, "a budget ran out");
        Some(Status::BudgetExhausted)
    }

    /// " by the job's tries" when the job has several (the budgets are the whole job's).
    fn by_tries(&self) -> &'static str {
        if self.lane.number == 0 { "" } else { " by the job's tries together" }
    }

    /// The cost budget: stop before a request whose most possible cost (its estimated prompt,
    /// none of it cached, and a full `max_output_tokens` answer) would take the job past it. The
    /// job's tries share it: the request's most is held until its answer is counted, so tries
    /// asking at once cannot pass the budget together.
    pub(super) fn over_cost(&mut self, estimated_prompt: u64) -> Option<Status> {
        self.held = None;
        let spec = self.spec();
        let pricing = spec.pricing?;
        let next = pricing.most(estimated_prompt, spec.max_output_tokens);
        if let Some(cap) = self.lane.own.max_cost_usd.filter(|cap| self.run.record.spent_usd() + next > *cap) {
            use crate::spec::pricing::dollars;
            let spent = dollars(self.run.record.spent_usd());
            let why = format!(
                "this try's cost budget ({}) would be exceeded: {spent} spent by it, and the next request could cost up to {}",
                dollars(cap),
                dollars(next)
            );
            self.fail(Code::Budget, why);
            self.enter(State::Summarizing, "the try's cost budget ran out");
            return Some(Status::BudgetExhausted);
        }
        let limit = self.lane.limits.max_cost_usd?;
        self.report_spend();
        if let Some(hold) = self.lane.meter.hold(next, limit) {
            self.held = Some(hold);
            return None;
        }
        let (spent, held) = (self.lane.meter.spent().usd, self.lane.meter.held());
        use crate::spec::pricing::dollars;
        let in_flight = if held > 0.0 {
            format!(", {} held by other tries' requests in flight", dollars(held))
        } else {
            String::new()
        };
        self.fail(
            Code::Budget,
            format!(
                "the cost budget ({}) would be exceeded: {} spent{}{in_flight}, and the next request could cost up to {}",
                dollars(limit),
                dollars(spent),
                self.by_tries(),
                dollars(next)
            ),
        );
        self.enter(State::Summarizing, "the cost budget ran out");
        Some(Status::BudgetExhausted)
    }

    /// A server the job requires stopped answering: the run cannot go on.
    pub(super) fn mcp_down(&mut self) -> Option<Status> {
        let why = self.tools.mcp.get()?.required_down()?;
        self.fail(Code::Mcp, why);
        self.enter(State::Summarizing, "a required MCP server stopped");
        Some(Status::Error)
    }

    pub(super) fn record_usage(&mut self, turn: u32, reply: &Reply, started: Instant) {
        // The job's own model's id (each model's is in `models`).
        if let Some(m) = reply.model.as_ref().filter(|_| self.model_on() == 0) {
            self.run.record.model_id = Some(m.clone());
        }
        self.answered(reply.model.as_deref());
        if let Some(u) = reply.usage {
            self.run.record.add_usage(u);
            self.sizing.calibrate(u.prompt_tokens);
        }
        self.report_spend();
        // The answer is counted: what its request held goes back.
        self.held = None;
        let model = super::models::label(self.link(turn));
        self.lane.events.emit(Event::TurnCompleted {
            turn,
            model,
            finish_reason: reply.finish_reason.clone(),
            tool_calls: reply.message.tool_calls.len(),
            usage: reply.usage,
            duration_ms: started.elapsed().as_millis() as u64,
        });
    }
}
