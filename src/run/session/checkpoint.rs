//! Plans, checkpoints and rollback. The baseline is checkpoint 0. When the
//! model marks a plan step done, hone runs the checks and saves the work tree on a private ref.
//! A step or fix attempt that makes the checks worse than the last checkpoint is rolled back to
//! it, and the model is asked to replan the remaining steps.

use super::super::state::State;
use super::plan::{self, PlanArgs};
use super::turns::Loop;
use crate::error::{Code, HoneError};
use crate::protocol::{Event, ToolCall, ToolOutput};
use crate::record::CheckpointRecord as Checkpoint;
use crate::record::RollbackRecord;
use crate::verify::CheckResult;

impl Loop<'_> {
    /// Checkpoint 0: the base commit with the baseline's score.
    pub fn first_checkpoint(&mut self) {
        if self.run.record.checkpoints.is_empty() {
            let score = plan::score(&self.run.record.baseline);
            self.run.record.checkpoints.push(Checkpoint {
                id: 0,
                label: "baseline".into(),
                commit: self.base.to_string(),
                score,
            });
        }
    }

    /// Handle the agent-level tools; `None` for every other tool.
    pub async fn agent_tool(&mut self, turn: u32, call: &ToolCall) -> Option<ToolOutput> {
        match call.name.as_str() {
            "update_plan" if self.s.job.plan => Some(self.update_plan(turn, call).await),
            "request_clarification" => Some(self.clarify(call)),
            "finish" => Some(self.finish_tool(turn, call)),
            _ => None,
        }
    }

    /// `finish`: the model says how it ended; the loop acts on it after this turn's calls.
    fn finish_tool(&mut self, turn: u32, call: &ToolCall) -> ToolOutput {
        use crate::record::{FinishOutcome, FinishRecord};
        let mut f: FinishRecord = match serde_json::from_str(&call.arguments) {
            Ok(f) => f,
            Err(e) => {
                return ToolOutput::err(
                    Code::InvalidArgs,
                    format!("the arguments of `finish` do not match its schema: {e}"),
                );
            }
        };
        let reason = f.reason.as_deref().map(str::trim).unwrap_or("");
        if f.outcome == FinishOutcome::Blocked && reason.is_empty() {
            return ToolOutput::err(Code::InvalidArgs, "`finish` with outcome `blocked` needs a `reason`");
        }
        // The answer is kept once, as the record's `output`, not again in `finish`.
        let result = f.result.take();
        if f.outcome == FinishOutcome::Done {
            match self.check_answer(turn, result) {
                Ok(valid) => self.run.record.output = valid,
                Err(out) => return out,
            }
        }
        let red = &self.tools.redactor;
        let f = FinishRecord { summary: red.apply(&f.summary), reason: f.reason.map(|r| red.apply(&r)), ..f };
        let note = match f.outcome {
            FinishOutcome::Done if self.lane.policy.read_only_repo => "Recorded: your answer ends the run.",
            FinishOutcome::Done => {
                "Recorded. hone now runs the checks; if one fails you get its output and can fix it."
            }
            FinishOutcome::Blocked => "Recorded: the run ends here as blocked, and your work is saved for a person.",
        };
        self.finished = Some(f);
        ToolOutput::ok(note)
    }

    fn clarify(&mut self, call: &ToolCall) -> ToolOutput {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            questions: Vec<String>,
        }
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(a) if !a.questions.is_empty() => {
                self.run.record.clarification = a.questions.iter().map(|q| self.tools.redactor.apply(q)).collect();
                self.clarify_requested = true;
                ToolOutput::ok("Your questions are recorded; the run stops here so a person can answer them.")
            }
            Ok(_) => ToolOutput::err(Code::InvalidArgs, "ask at least one question"),
            Err(e) => ToolOutput::err(
                Code::InvalidArgs,
                format!("the arguments of `request_clarification` do not match its schema: {e}"),
            ),
        }
    }

    async fn update_plan(&mut self, turn: u32, call: &ToolCall) -> ToolOutput {
        let args: PlanArgs = match serde_json::from_str::<PlanArgs>(&call.arguments) {
            // The plan reaches the PR body and commit messages: no secret in it.
            Ok(a) => a.redacted(&self.tools.redactor),
            Err(e) => {
                return ToolOutput::err(
                    Code::InvalidArgs,
                    format!("the arguments of `update_plan` do not match its schema: {e}"),
                );
            }
        };
        let mut p = self.run.record.plan.clone().unwrap_or_default();
        let done = match p.update(args) {
            Ok(d) => d,
            Err(e) => return ToolOutput::err(e.code(), e.to_string()),
        };
        self.lane.events.emit(Event::PlanUpdated { turn, plan: p.clone() });
        let rendered = p.render();
        self.run.record.plan = Some(p);
        if self.run.machine.state() == State::Planning {
            self.enter(State::Executing, "the model made its plan");
        }
        // A read-only job keeps no checkpoint and rolls nothing back: it may change nothing.
        if done.is_empty() || self.s.job.verify.is_empty() || self.lane.policy.read_only_repo {
            return ToolOutput::ok(format!("Plan updated:\n{rendered}"));
        }
        let label = format!("step `{}`", done.join("`, `"));
        match self.checkpoint_or_rollback(turn, &label).await {
            Ok(note) => ToolOutput::ok(format!("Plan updated:\n{rendered}{note}")),
            Err(e) => {
                ToolOutput::err(Code::Git, format!("the plan was updated, but the checkpoint failed: {}", e.message))
            }
        }
    }

    /// Run the checks; keep a checkpoint when they are no worse than the last one, otherwise roll
    /// back to it. Returns a note for the model.
    async fn checkpoint_or_rollback(&mut self, turn: u32, label: &str) -> Result<String, HoneError> {
        let results = self.run_checks(0, false).await;
        let note = self.judge_progress(turn, label, &results).await?;
        Ok(note.unwrap_or_default())
    }

    /// Compare `results` with the last checkpoint: roll back when worse (returning the notice for
    /// the model), or save a new checkpoint.
    pub async fn judge_progress(
        &mut self,
        turn: u32,
        label: &str,
        results: &[CheckResult],
    ) -> Result<Option<String>, HoneError> {
        self.first_checkpoint();
        let score = plan::score(results);
        let Some(last) = self.run.record.checkpoints.last().cloned() else { return Ok(None) };
        if score > last.score {
            let oid = git2::Oid::from_str(&last.commit).map_err(|e| {
                HoneError::new(Code::Git, format!("checkpoint {} has no commit id (`{}`): {e}", last.id, last.commit))
            })?;
            self.lane.ws.blocking(move |ws| ws.reset_worktree_to(oid)).await?;
            let reason = format!(
                "{label} made the checks worse: {} ({} failing check(s) and {} failing test(s), against {} and {} at checkpoint {} ({}))",
                crate::verify::failure_summary(results),
                score.0,
                score.1,
                last.score.0,
                last.score.1,
                last.id,
                last.label
            );
            self.lane.events.emit(Event::Rollback { turn, to_checkpoint: last.id, reason: reason.clone() });
            self.run.record.rollbacks.push(RollbackRecord { turn, to_checkpoint: last.id, reason: reason.clone() });
            self.fault(crate::protocol::FaultKind::Rollback);
            return Ok(Some(format!(
                "\nhone rolled the work tree back to checkpoint {} ({}): {reason}. Your changes since then are gone. Replan the remaining steps with update_plan, then continue.",
                last.id, last.label
            )));
        }
        // A checkpoint stages and stores the whole change: never one larger than the policy
        // allows (it is counted first, stopping one past the limits).
        let (cap, max) = (self.tools.policy.max_files_changed, self.tools.policy.max_bytes_changed);
        let counted = self.lane.ws.blocking(move |ws| ws.count_changed(cap, max)).await?;
        if counted.over {
            return Ok(Some(format!(
                "\nNo checkpoint was saved after {label}: {}. The change will be refused unless it shrinks.",
                crate::guard::too_large(&self.tools.policy, &counted)
            )));
        }
        let id = last.id + 1;
        let refname = self.lane.checkpoint_ref(&self.s.job.name, id);
        let msg = format!("hone checkpoint {id}: after {label}\n\nRun: {}\n", self.run.record.run_id);
        let (base, name, email) = (self.base, self.s.job.git.author_name.clone(), self.s.job.git.author_email.clone());
        let oid = self.lane.ws.blocking(move |ws| ws.snapshot(base, &refname, &msg, &name, &email)).await?;
        self.lane.events.emit(Event::Checkpoint {
            id,
            label: label.into(),
            commit: oid.to_string(),
            failing_checks: score.0,
            failing_tests: score.1,
        });
        self.run.record.checkpoints.push(Checkpoint { id, label: label.into(), commit: oid.to_string(), score });
        let state =
            if score.0 == 0 { "all checks pass".to_string() } else { format!("{} check(s) still failing", score.0) };
        Ok(Some(format!("\nCheckpoint {id} saved after {label}: {state}.")))
    }
}
