//! One tool call from the turn loop: hone's own tools (plan, clarification, finish) first, then
//! the dispatch; its policy decisions audited; its record, events and result kept.

use super::turns::Loop;
use crate::error::Code;
use crate::protocol::{Event, Message, ToolCall};
use crate::record::{Denial, ToolCallRecord};
use crate::tools::{self, Effect};
use tokio::time::Instant;

impl Loop<'_> {
    /// Run one tool call; returns the streak of identical call+result pairs.
    pub(super) async fn run_tool(&mut self, turn: u32, call: &ToolCall) -> usize {
        let args: String = self.tools.redactor.apply(&call.arguments).chars().take(200).collect();
        self.lane.events.emit(Event::ToolCallStarted {
            turn,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: args.clone(),
        });
        let started = Instant::now();
        let mut out = match self.agent_tool(turn, call).await {
            Some(out) => crate::protocol::ToolOutput { content: self.tools.redactor.apply(&out.content), ..out },
            None => tools::dispatch(self.tools, call).await,
        };
        if out.ok
            && tools::effect_of(&call.name) == Some(Effect::Write)
            && call.name != "undo_patch"
            && self.tools.changes.lock().is_ok_and(|c| c.last_altered())
        {
            self.touched = true;
            // A file the model wrote is its change, even where a check had left one.
            let paths = self.tools.changes.lock().map(|c| c.last_paths()).unwrap_or_default();
            for rel in &paths {
                self.lane.ws.claim(rel);
            }
            if !self.s.job.hooks.after_edit.is_empty() {
                let written = self.tools.changes.lock().map(|c| c.last_written()).unwrap_or_default();
                let note = self.after_edit(turn, &written).await;
                out.content.push_str(&note);
            }
        }
        if out.ok
            && let Some(guidance) = self.instructions_along(turn, call)
        {
            out.content.push_str(&guidance);
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        self.audit(turn, call);
        self.lane.events.emit(Event::ToolCallCompleted {
            turn,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: out.ok,
            code: out.code,
            exit_code: out.exit_code,
            duration_ms,
        });
        self.run.record.tool_calls.push(ToolCallRecord {
            turn,
            id: call.id.clone(),
            name: call.name.clone(),
            args,
            ok: out.ok,
            code: out.code,
            duration_ms,
            command: command_of(call).map(|c| self.tools.redactor.apply(&c).chars().take(400).collect()),
            exit_code: out.exit_code,
        });
        if out.code == Some(Code::InvalidArgs) {
            self.fault(crate::protocol::FaultKind::InvalidToolCall);
        }
        let streak = self.watch.loops.record(&call.name, &call.arguments, &out.content);
        self.run.transcript.tool(turn, &call.id, &call.name, out.ok, &out.content);
        self.messages.push(Message::tool(call.id.clone(), out.content));
        streak
    }

    /// Record the policy decisions a tool call made, for the report and the audit trail.
    fn audit(&mut self, turn: u32, call: &ToolCall) {
        for d in self.tools.drain_decisions() {
            let p = &mut self.run.record.policy;
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
            self.lane.events.emit(Event::PolicyDecision {
                trace_id: format!("{}/{}", self.lane.events.run_id(), call.id),
                turn,
                tool: call.name.clone(),
                subject: d.subject,
                allowed: d.allowed,
                rule: d.rule,
            });
        }
    }
}

/// The command of a `run_cmd` call, as the model gave it.
fn command_of(call: &ToolCall) -> Option<String> {
    if call.name != "run_cmd" {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    v["command"].as_str().map(str::to_string)
}
