//! The turn loop: ask the model, run its tool calls, and when it stops, verify; feed failures
//! back until the checks pass or a budget (turns, tokens, fix attempts) runs out.

use super::state::{Machine, State};
use super::{context, history};
use crate::error::Code;
use crate::events::Events;
use crate::model::{ChatRequest, Model, ModelError, retry};
use crate::protocol::{Event, FinishReason, Message, ToolSpec};
use crate::report::{Denial, ErrorRecord, RunReport, Status, ToolCallRecord};
use crate::spec::Job;
use crate::tools::{self, ToolContext};
use crate::verify;
use tokio::time::Instant;

pub struct Loop<'a> {
    pub job: &'a Job,
    pub model: &'a Model,
    pub tools: &'a ToolContext,
    pub specs: Vec<ToolSpec>,
    pub events: &'a Events,
    pub report: &'a mut RunReport,
    pub messages: Vec<Message>,
    pub deadline: Instant,
    pub machine: &'a mut Machine,
    pub loops: super::watchdog::LoopDetector,
    pub degenerate_streak: u32,
    pub ws: &'a crate::git::Workspace,
    pub base: git2::Oid,
    pub clarify_requested: bool,
    /// The previous request's messages, to measure prefix reuse.
    pub last_request: Vec<Message>,
    /// Provider tokens per estimated token, from the last usage report.
    pub calibration: f64,
    pub reuse_sum: f64,
}

impl Loop<'_> {
    /// Compact the history when it nears the context window (or always, when `force`d by a
    /// context-length error: then to half of what it was).
    fn maybe_compact(&mut self, turn: u32, force: bool, reason: &str) {
        let window = self.job.model.context_window;
        let before = (context::estimate(&self.messages) as f64 * self.calibration) as u64;
        if !force && (before as f64) < window as f64 * context::COMPACT_AT {
            return;
        }
        let target = if force { (before / 2).max(1024).min(window) } else { window };
        let target_raw = (target as f64 / self.calibration) as u64;
        let plan = self.report.plan.as_ref().map(|p| p.render());
        if let Some(c) = context::compact(&self.messages, target_raw, plan.as_deref()) {
            self.messages = c;
            let after = (context::estimate(&self.messages) as f64 * self.calibration) as u64;
            self.report.compactions += 1;
            self.events.emit(Event::Compacted {
                turn,
                before_tokens: before,
                after_tokens: after,
                reason: reason.into(),
            });
        }
    }

    /// Move the state machine and emit the transition.
    pub fn enter(&mut self, to: State, reason: impl Into<String>) {
        enter(self.machine, self.events, to, &reason.into());
    }

    fn fault(&mut self, kind: &str) {
        *self.report.faults.entry(kind.to_string()).or_default() += 1;
    }

    fn fail(&mut self, code: Code, message: impl Into<String>) {
        self.report.errors.push(ErrorRecord { code, message: self.tools.redactor.apply(&message.into()) });
    }

    /// Drive the loop to an outcome. Wall time and cancellation are enforced by the caller.
    pub async fn drive(&mut self) -> Status {
        let limits = self.job.limits.clone();
        let mut verify_attempt = 0u32;
        let mut forced_compactions = 0u32;
        loop {
            if self.report.turns >= limits.max_turns {
                self.fail(
                    Code::Budget,
                    format!("the turn budget ({}) ran out before the task was done", limits.max_turns),
                );
                self.enter(State::Summarizing, "the turn budget ran out");
                return Status::BudgetExhausted;
            }
            if self.report.usage.total_tokens >= limits.max_tokens {
                self.fail(
                    Code::Budget,
                    format!(
                        "the token budget ({}) ran out: {} used",
                        limits.max_tokens, self.report.usage.total_tokens
                    ),
                );
                self.enter(State::Summarizing, "the token budget ran out");
                return Status::BudgetExhausted;
            }
            self.report.turns += 1;
            let turn = self.report.turns;
            self.maybe_compact(turn, false, "the history neared the context window");
            let started = Instant::now();
            let (messages, repairs) = history::enforce(&self.messages);
            if repairs > 0 {
                tracing::warn!(repairs, "repaired the tool-call sequence before the request");
                self.messages = messages.clone();
            }
            let estimated = (context::estimate(&messages) as f64 * self.calibration) as u64;
            let reuse = context::prefix_reuse(&self.last_request, &messages);
            self.reuse_sum += reuse;
            self.report.prefix_reuse_avg = self.reuse_sum / f64::from(turn);
            self.events.emit(Event::TurnStarted {
                turn,
                estimated_tokens: estimated,
                prefix_reuse: (reuse * 1000.0).round() / 1000.0,
            });
            self.last_request = messages.clone();
            let req = ChatRequest { messages, tools: self.specs.clone() };
            let events = self.events;
            let stats = &mut self.report.model_retries;
            let faults = &mut self.report.faults;
            let reply = retry::complete(
                self.model,
                &req,
                &self.job.model.retry,
                self.deadline,
                &self.tools.cancel,
                |attempt, err, delay| {
                    stats.total += 1;
                    *faults.entry(err.kind().to_string()).or_default() += 1;
                    *stats.by_kind.entry(err.kind().to_string()).or_default() += 1;
                    tracing::warn!(
                        attempt,
                        kind = err.kind(),
                        delay_ms = delay.as_millis() as u64,
                        "model request failed; retrying: {err}"
                    );
                    events.emit(Event::ModelRetry {
                        turn,
                        attempt,
                        class: err.class().into(),
                        reason: err.to_string(),
                        delay_ms: delay.as_millis() as u64,
                    });
                },
            )
            .await;
            let reply = match reply {
                Ok(r) => r,
                Err(ModelError::Cancelled) => return Status::Cancelled,
                Err(e) if e.kind() == "context_length" && forced_compactions < 2 => {
                    forced_compactions += 1;
                    self.fault("context_length");
                    tracing::warn!("the provider says the context is too long; compacting and retrying: {e}");
                    self.maybe_compact(turn, true, "the provider reported a context-length error");
                    continue;
                }
                Err(e) => {
                    let gave_up = e.kind() == "script_exhausted";
                    self.fail(Code::Model, format!("model request failed ({}): {e}", e.kind()));
                    self.enter(State::Summarizing, format!("the model failed: {}", e.kind()));
                    return if gave_up { Status::Failed } else { Status::Error };
                }
            };
            forced_compactions = 0;
            if let Some(u) = reply.usage {
                self.report.usage.add(u);
                let est = context::estimate(&self.last_request).max(1) as f64;
                if u.prompt_tokens > 0 {
                    // Only ever raise the estimate: underestimating overflows the window, overestimating
                    // merely compacts a little early.
                    self.calibration = (u.prompt_tokens as f64 / est).clamp(1.0, 4.0);
                }
            }
            self.events.emit(Event::TurnCompleted {
                turn,
                finish_reason: reply.finish_reason.clone(),
                tool_calls: reply.message.tool_calls.len(),
                usage: reply.usage,
                duration_ms: started.elapsed().as_millis() as u64,
            });
            if let Some(why) = super::watchdog::degenerate(&reply.message) {
                self.fault("repetition");
                self.degenerate_streak += 1;
                self.events.emit(Event::ModelRetry {
                    turn,
                    attempt: self.degenerate_streak,
                    class: "retryable".into(),
                    reason: format!("degenerate answer: {why}"),
                    delay_ms: 0,
                });
                if self.degenerate_streak >= 3 {
                    self.fail(Code::Model, format!("the model kept producing degenerate answers ({why})"));
                    self.enter(State::Summarizing, "degenerate answers");
                    return Status::Failed;
                }
                self.messages.push(Message::user(format!(
                    "Your last answer was discarded: it degenerated into repetition ({why}). Answer again, briefly."
                )));
                continue;
            }
            self.degenerate_streak = 0;
            if self.machine.state() == State::Planning
                && !reply.message.tool_calls.iter().any(|c| c.name == "update_plan")
            {
                self.report.warnings.push("the model started without making a plan".into());
                self.enter(State::Executing, "the model started without a plan");
            }
            let calls = reply.message.tool_calls.clone();
            let text = reply.message.content.clone();
            self.messages.push(reply.message);
            if !calls.is_empty() {
                let mut streak = 0;
                for call in &calls {
                    streak = streak.max(self.run_tool(turn, call).await);
                }
                if self.clarify_requested {
                    self.enter(State::NeedsClarification, "the model asked for clarification");
                    return Status::NeedsClarification;
                }
                if streak >= super::watchdog::LOOP_FAIL {
                    self.fault("loop");
                    self.fail(
                        Code::Model,
                        format!("the model repeated the same tool call with the same result {streak} times in a row"),
                    );
                    self.enter(State::Summarizing, "the model is stuck in a loop");
                    return Status::Failed;
                }
                if streak >= super::watchdog::LOOP_WARN {
                    self.fault("loop_warning");
                    self.messages.push(Message::user(format!(
                        "You have made the same tool call {streak} times in a row and got the same result each time. It will not change: try a different approach."
                    )));
                }
                continue;
            }
            if reply.finish_reason == FinishReason::Length {
                self.messages.push(Message::user(super::prompt::CONTINUE_AFTER_LENGTH));
                continue;
            }
            // The model says it is done: hone verifies.
            self.report.final_message = self.tools.redactor.apply(&text);
            verify_attempt += 1;
            self.enter(State::Verifying, format!("the model finished; verification attempt {verify_attempt}"));
            let results = self.verify(verify_attempt).await;
            if results.iter().any(|r| r.cancelled) {
                return Status::Cancelled;
            }
            if results.iter().all(|r| r.accepted) {
                self.enter(State::Summarizing, "every check meets its expectation");
                return Status::Success;
            }
            let failing: Vec<String> = results.iter().filter(|r| !r.accepted).map(|r| r.name.clone()).collect();
            self.enter(State::Recovering, format!("failing: {}", failing.join(", ")));
            if self.report.fix_attempts >= limits.max_fix_attempts {
                self.fail(
                    Code::BuildFail,
                    format!(
                        "checks still failing after {} fix attempt(s): {}",
                        self.report.fix_attempts,
                        failing.join(", ")
                    ),
                );
                self.enter(State::Summarizing, "the fix attempts are used up");
                return Status::Failed;
            }
            self.report.fix_attempts += 1;
            self.enter(State::Executing, format!("fix attempt {}", self.report.fix_attempts));
            self.events.emit(Event::FixRequested { attempt: self.report.fix_attempts, failing });
            let mut fb = verify::feedback(&results, self.report.fix_attempts, limits.max_fix_attempts);
            match self.judge_progress(turn, &format!("verification round {verify_attempt}"), &results) {
                Ok(Some(note)) => fb.push_str(&note),
                Ok(None) => {}
                Err(e) => self.report.warnings.push(format!("checkpoint failed: {e}")),
            }
            self.messages.push(Message::user(self.tools.redactor.apply(&fb)));
        }
    }

    /// Run one tool call; returns the streak of identical call+result pairs.
    async fn run_tool(&mut self, turn: u32, call: &crate::protocol::ToolCall) -> usize {
        let args: String = self.tools.redactor.apply(&call.arguments).chars().take(200).collect();
        self.events.emit(Event::ToolCallStarted {
            turn,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: args.clone(),
        });
        let started = Instant::now();
        let out = match self.agent_tool(turn, call).await {
            Some(out) => out,
            None => tools::dispatch(self.tools, call).await,
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        for d in self.tools.drain_decisions() {
            let p = &mut self.report.policy;
            p.decisions += 1;
            if !d.allowed {
                p.denied += 1;
                p.denials.push(Denial {
                    turn,
                    tool: call.name.clone(),
                    subject: d.subject.clone(),
                    rule: d.rule.clone(),
                });
            }
            self.events.emit(Event::PolicyDecision {
                trace_id: format!("{}/{}", self.events.run_id(), call.id),
                turn,
                tool: call.name.clone(),
                subject: d.subject,
                allowed: d.allowed,
                rule: d.rule,
            });
        }
        self.events.emit(Event::ToolCallCompleted {
            turn,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: out.ok,
            code: out.code,
            duration_ms,
        });
        self.report.tool_calls.push(ToolCallRecord {
            turn,
            id: call.id.clone(),
            name: call.name.clone(),
            args,
            ok: out.ok,
            code: out.code,
            duration_ms,
        });
        if out.code == Some(Code::InvalidArgs) {
            self.fault("invalid_tool_call");
        }
        let streak = self.loops.record(&call.name, &call.arguments, &out.content);
        self.messages.push(Message::tool(call.id.clone(), out.content));
        streak
    }
}

/// Move `machine` to `to` and emit the transition. An invalid transition is a bug in hone: it is
/// logged and refused, never acted on.
pub fn enter(machine: &mut Machine, events: &Events, to: State, reason: &str) {
    match machine.go(to, reason) {
        Ok((from, to)) => events.emit(Event::StateChanged {
            from: from.as_str().into(),
            to: to.as_str().into(),
            reason: reason.into(),
        }),
        Err(e) => tracing::error!("{e} ({reason}); this is a bug in hone"),
    }
}
