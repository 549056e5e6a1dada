//! The turn loop: ask the model, run its tool calls, and when it stops (a text answer or the
//! `finish` tool), verify; feed failures back until the checks pass or a budget (turns, tokens,
//! fix attempts) runs out.

use super::super::checks::Checks;
use super::super::handoff::Scope;
use super::super::state::{Run, State};
use super::{context, history, plan};
use crate::error::Code;
use crate::error::HoneError;
use crate::model::chain::{self, Models};
use crate::model::{ChatRequest, ModelError, retry};
use crate::protocol::{Event, FaultKind, FinishReason, Message, ModelErrorKind, Reply, ToolSpec};
use crate::record::{FinishRecord, Status};
use crate::tools::{self, ToolContext};
use crate::verify;
use tokio::time::Instant;

/// The session's state: what every turn reads (the scope, the model, the tools), the run being
/// recorded, and what only the loop keeps (the messages, the watchdogs, the accounting).
pub struct Loop<'a> {
    pub(super) s: &'a Scope,
    /// The work tree this session works in (its repository, policy, events and bound).
    pub(super) lane: crate::run::handoff::Lane<'a>,
    /// The run's models; the one asked now is the last in the record's `models`.
    pub(super) model: &'a Models,
    pub(super) tools: &'a std::sync::Arc<ToolContext>,
    pub(super) checks: Checks,
    specs: Vec<ToolSpec>,
    pub(super) run: &'a mut Run,
    pub(super) messages: Vec<Message>,
    pub(super) watch: super::watch::Watch,
    pub(super) base: git2::Oid,
    pub(super) clarify_requested: bool,
    /// The model called `finish`: how it said it ended.
    pub(super) finished: Option<FinishRecord>,
    /// The model changed the work tree at some point (a write tool, or a change seen by a check).
    pub(super) touched: bool,
    /// The requests' size, calibrated by the provider's usage reports.
    pub(super) sizing: context::Sizing,
    /// Compactions forced by context-length errors in the current turn.
    forced_compactions: u32,
    /// The answer's attempts (`output.max_attempts`) are used up without a valid one.
    pub(super) answer_exhausted: bool,
    /// The repository's instruction files given so far, and the budget left.
    pub(super) instructions: super::instructions::Instructions,
    /// What the request in flight holds of the job's cost budget, until its answer is counted.
    pub(super) held: Option<crate::run::meter::Hold>,
    /// Told when a verification round fails.
    failed_round: Option<&'a tokio::sync::watch::Sender<bool>>,
}

/// What to do after a model reply.
pub(super) enum Next {
    Continue,
    Verify,
    End(Status),
}

impl<'a> Loop<'a> {
    /// The loop from the baseline at `base`, the instruction files read at `guidance`.
    pub fn new(
        s: &'a Scope,
        lane: crate::run::handoff::Lane<'a>,
        parts: super::Parts<'a>,
        run: &'a mut Run,
        base: git2::Oid,
        guidance: Result<git2::Oid, crate::error::HoneError>,
    ) -> Self {
        let super::Parts { model, tools, checks, failed_round } = parts;
        let read_only = lane.policy.read_only_repo;
        let specs = tools::specs()
            .into_iter()
            .filter(|t| !read_only || tools::effect_of(&t.name) != Some(tools::Effect::Write))
            .chain(plan::specs(&s.job).into_iter().filter(|t| s.job.plan || t.name != "update_plan"))
            .collect();
        Loop {
            s,
            lane,
            model,
            tools,
            checks,
            specs,
            run,
            messages: vec![],
            watch: Default::default(),
            base,
            clarify_requested: false,
            finished: None,
            touched: false,
            sizing: Default::default(),
            forced_compactions: 0,
            answer_exhausted: false,
            instructions: super::instructions::Instructions::new(&s.job.instructions, guidance),
            held: None,
            failed_round,
        }
    }

    /// Begin the conversation (system prompt and first user turn) at checkpoint 0.
    pub fn start(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.first_checkpoint();
    }

    /// Move the state machine and emit the transition.
    pub fn enter(&mut self, to: State, reason: impl Into<String>) {
        self.run.enter(self.lane.events, to, &reason.into());
    }

    /// Run every check once (recorded, with events, when `record`): a verification round, or a
    /// checkpoint's check. A command may have changed files: the change existed, whatever
    /// happens to it later (whether anything differs is enough: nothing is read or diffed).
    pub(super) async fn run_checks(&mut self, attempt: u32, record: bool) -> Vec<verify::CheckResult> {
        self.checks.settle(self.run).await;
        if !self.touched {
            self.touched = self.lane.ws.blocking(|ws| ws.dirty_entries()).await.is_ok_and(|c| !c.is_empty());
        }
        self.checks.run(self.s, self.lane, self.run, attempt, record).await
    }

    /// Wait for the marking of what the last checks wrote.
    pub(super) async fn settle_marks(&mut self) {
        self.checks.settle(self.run).await;
    }

    pub(super) fn fault(&mut self, kind: FaultKind) {
        *self.run.record.faults.entry(kind).or_default() += 1;
    }

    pub(super) fn fail(&mut self, code: Code, message: impl Into<String>) {
        self.run.record.errors.push(HoneError::new(code, self.tools.redactor.apply(&message.into())));
    }

    /// Drive the loop to an outcome. Wall time and cancellation are enforced by the caller.
    pub async fn drive(&mut self) -> Status {
        let mut verify_attempt = 0u32;
        loop {
            if let Some(s) = self.out_of_budget().or_else(|| self.mcp_down()) {
                return s;
            }
            self.run.record.turns += 1;
            self.run.record.turn_started_ms.push(self.run.machine.elapsed_ms());
            let turn = self.run.record.turns;
            let reply = self.request(turn).await;
            // Nothing the model asks for runs before the tree's state is known.
            self.settle_marks().await;
            let reply = match reply {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(s) => return s,
            };
            match self.handle_reply(turn, reply).await {
                Next::Continue => continue,
                Next::End(s) => return s,
                Next::Verify => {}
            }
            verify_attempt += 1;
            if let Some(s) = self.verify_round(turn, verify_attempt).await {
                return s;
            }
        }
    }

    /// One model request: `Ok(None)` to ask again (after a compaction), `Err` to end the run.
    async fn request(&mut self, turn: u32) -> Result<Option<Reply>, Status> {
        self.maybe_compact(turn, false, "the history neared the context window");
        let started = Instant::now();
        let (messages, repairs) = history::enforce(&self.messages);
        if repairs > 0 {
            tracing::warn!(repairs, "repaired the tool-call history before the request");
            self.messages = messages.clone();
        }
        let estimated = self.sizing.tokens(&messages);
        let (tools, priced) = self.offer(estimated)?;
        self.started(turn, estimated, &messages, &tools);
        let req = ChatRequest { messages, tools };
        let link = self.link(turn);
        let mut cost = super::cost::TurnCost::new(&self.s.job, link, self.spent_by_all(), priced);
        let (events, stats, faults) =
            (self.lane.events, &mut self.run.record.model_retries, &mut self.run.record.faults);
        let reply = retry::complete(
            &link.client,
            &req,
            self.s.shared.model_slots.as_deref(),
            &link.spec.retry,
            self.lane.bound.deadline,
            &self.tools.bound.cancel,
            |attempt, err, delay| {
                if !cost.may_retry(err) {
                    return false;
                }
                stats.total += 1;
                *faults.entry(FaultKind::Model(err.kind())).or_default() += 1;
                *stats.by_kind.entry(err.kind()).or_default() += 1;
                tracing::debug!(attempt, kind = err.kind().as_str(), "model request failed; retrying: {err}");
                let delay_ms = delay.as_millis() as u64;
                events.emit(Event::ModelRetry {
                    turn,
                    attempt,
                    class: err.class().into(),
                    reason: err.to_string(),
                    delay_ms,
                });
                true
            },
        )
        .await;
        let (billed, stopped) = cost.finish();
        self.add_usage(billed);
        if let Some(why) = stopped {
            self.fail(Code::Budget, why);
            self.enter(State::Summarizing, "the cost budget ran out");
            return Err(Status::BudgetExhausted);
        }
        let reply = match reply {
            Ok(r) => r,
            Err(ModelError::Cancelled) => return Err(Status::Cancelled),
            Err(e) if e.kind() == ModelErrorKind::ContextLength && self.forced_compactions < 2 => {
                self.forced_compactions += 1;
                self.fault(FaultKind::ContextLength);
                tracing::warn!("the provider says the context is too long; compacting and retrying: {e}");
                self.maybe_compact(turn, true, "the provider reported a context-length error");
                return Ok(None);
            }
            Err(e) if chain::falls_back(&e) && self.model.get(self.model_on() + 1).is_some() => {
                self.fall_back(turn, &e);
                return Ok(None);
            }
            Err(e) => {
                let gave_up = e.kind() == ModelErrorKind::ScriptExhausted;
                self.fail(Code::Model, format!("model request failed ({}): {e}", e.kind()));
                self.enter(State::Summarizing, format!("the model failed: {}", e.kind()));
                return Err(if gave_up { Status::Failed } else { Status::Error });
            }
        };
        self.forced_compactions = 0;
        self.record_usage(turn, &reply, started);
        self.run.transcript.reply(turn, &reply);
        Ok(Some(reply))
    }

    /// A request about to go: its prefix's reuse measured, `turn_started` said, and the
    /// transcript's note of what it sends.
    fn started(&mut self, turn: u32, estimated: u64, messages: &[Message], tools: &[ToolSpec]) {
        let (reuse, average, previous) = self.sizing.request(turn, messages);
        self.run.record.prefix_reuse_avg = average;
        let prefix_reuse = (reuse * 1000.0).round() / 1000.0;
        self.lane.events.emit(Event::TurnStarted { turn, estimated_tokens: estimated, prefix_reuse });
        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        self.run.transcript.request(turn, &previous, messages, &names);
    }

    /// The tools a request offers, and its estimated size for the cost budget (the tools it
    /// carries count too, about 4 bytes a token); a request that could take the run past the
    /// budget is not made.
    fn offer(&mut self, estimated: u64) -> Result<(Vec<ToolSpec>, u64), Status> {
        let mut tools = self.specs.clone();
        tools.extend(self.tools.mcp.get().map(crate::mcp::Hub::specs).unwrap_or_default());
        let priced = estimated + serde_json::to_string(&tools).map_or(0, |t| t.len() as u64 / 4);
        match self.over_cost(priced) {
            Some(s) => Err(s),
            None => Ok((tools, priced)),
        }
    }

    /// Run the reply's tool calls, or take its text as the model's last word.
    async fn handle_reply(&mut self, turn: u32, reply: Reply) -> Next {
        if let Some(why) = super::watch::degenerate(&reply.message) {
            return self.degenerate(turn, why);
        }
        self.watch.degenerate = 0;
        if self.run.machine.state() == State::Planning
            && !reply.message.tool_calls.iter().any(|c| c.name == "update_plan")
        {
            self.run.record.warnings.push("the model started without making a plan".into());
            self.enter(State::Executing, "the model started without a plan");
        }
        let calls = reply.message.tool_calls.clone();
        let text = reply.message.content.clone();
        let mut kept = reply.message;
        // What goes back to the provider holds only JSON arguments; the tool result says what was wrong.
        history::json_arguments(&mut kept);
        self.messages.push(kept);
        self.watch.cut = if calls.is_empty() && text.trim().is_empty() { self.watch.cut + 1 } else { 0 };
        if calls.is_empty() {
            if reply.finish_reason == FinishReason::Length {
                return self.cut_off();
            }
            self.run.record.final_message = self.tools.redactor.apply(&text);
            if self.s.job.output.is_some() && self.run.record.output.is_none() {
                return if self.ask_for_result(turn) { Next::Continue } else { self.answer_ends() };
            }
            return Next::Verify;
        }
        let mut streak = 0;
        for call in &calls {
            streak = streak.max(self.run_tool(turn, call).await);
        }
        if self.clarify_requested {
            self.enter(State::NeedsClarification, "the model asked for clarification");
            return Next::End(Status::NeedsClarification);
        }
        if self.answer_exhausted {
            return self.answer_ends();
        }
        if let Some(f) = self.finished.clone() {
            return self.on_finish(f, &text);
        }
        self.watch_loops(streak)
    }

    /// No valid answer after `output.max_attempts`: the run fails with the last errors.
    fn answer_ends(&mut self) -> Next {
        self.answer_failed();
        self.enter(State::Summarizing, "the answer never satisfied the output schema");
        Next::End(Status::Failed)
    }

    /// `finish`: `done` goes to verification with its summary as the last word; `blocked` ends
    /// the run as failed with the model's reason.
    fn on_finish(&mut self, f: FinishRecord, text: &str) -> Next {
        self.finished = None;
        let summary = if f.summary.trim().is_empty() { text.to_string() } else { f.summary.clone() };
        self.run.record.final_message = self.tools.redactor.apply(&summary);
        let blocked = f.reason.clone().filter(|_| f.outcome == crate::record::FinishOutcome::Blocked);
        self.run.record.finish = Some(f);
        match blocked {
            Some(reason) => {
                self.fail(Code::Blocked, format!("the model could not do the task: {reason}"));
                self.enter(State::Summarizing, "the model said it is blocked");
                Next::End(Status::Failed)
            }
            None => Next::Verify,
        }
    }

    /// The model says it is done: hone verifies. `None` to go on with the model's fix.
    async fn verify_round(&mut self, turn: u32, attempt: u32) -> Option<Status> {
        if self.lane.policy.read_only_repo {
            // Nothing could change: the baseline was the checks' word, and the answer is the result.
            self.enter(State::Summarizing, "a read-only job's answer is in");
            return Some(Status::Success);
        }
        let max_fixes = self.lane.limits.max_fix_attempts;
        self.enter(State::Verifying, format!("the model finished; verification attempt {attempt}"));
        let hook_note = self.before_verify(turn).await;
        let results = self.run_checks(attempt, true).await;
        if results.iter().any(|r| r.cancelled) {
            return Some(Status::Cancelled);
        }
        if results.iter().all(|r| r.accepted) {
            self.enter(State::Summarizing, "every check meets its expectation");
            return Some(Status::Success);
        }
        if let Some(told) = self.failed_round {
            told.send_replace(true);
        }
        let failing: Vec<String> = results.iter().filter(|r| !r.accepted).map(|r| r.name.clone()).collect();
        self.enter(State::Recovering, format!("failing: {}", failing.join(", ")));
        if self.run.record.fix_attempts >= max_fixes {
            let msg = verify::failure_summary(&results);
            self.fail(
                Code::BuildFail,
                format!("checks still failing after {} fix attempt(s): {msg}", self.run.record.fix_attempts),
            );
            self.enter(State::Summarizing, "the fix attempts are used up");
            return Some(Status::Failed);
        }
        self.run.record.fix_attempts += 1;
        self.enter(State::Executing, format!("fix attempt {}", self.run.record.fix_attempts));
        self.lane.events.emit(Event::FixRequested { attempt: self.run.record.fix_attempts, failing });
        let mut fb = verify::feedback(&results, self.run.record.fix_attempts, max_fixes);
        fb.push_str(&hook_note);
        match self.judge_progress(turn, &format!("verification round {attempt}"), &results).await {
            Ok(Some(note)) => fb.push_str(&note),
            Ok(None) => {}
            Err(e) => self.run.record.warnings.push(format!("checkpoint failed: {}", e.message)),
        }
        self.messages.push(Message::user(self.tools.redactor.apply(&fb)));
        None
    }
}
