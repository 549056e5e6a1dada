//! The job's checks, run in the run's jail: the baseline (by the environment stage), then
//! verification rounds and checkpoint checks (by the session), each judged against the baseline,
//! with events and records.

use super::handoff::{Lane, Scope};
use super::state::Run;
use crate::protocol::Event;
use crate::tools::ToolContext;
use crate::verify;
use std::sync::Arc;

/// The job's checks, run in the run's jail with the tools' environment.
pub struct Checks {
    tools: Arc<ToolContext>,
    /// The marking of what the last checks wrote, still running (`settle`).
    pending: Option<tokio::task::JoinHandle<crate::error::Result<Vec<String>>>>,
}

impl Checks {
    pub fn new(tools: Arc<ToolContext>) -> Self {
        Checks { tools, pending: None }
    }

    /// Run every check once and judge it against the baseline; with `record`, emit events and
    /// keep the results in the record and the transcript. Attempt 0 with `record` is the baseline.
    pub async fn run(
        &mut self,
        s: &Scope,
        lane: Lane<'_>,
        run: &mut Run,
        attempt: u32,
        record: bool,
    ) -> Vec<verify::CheckResult> {
        let baseline = attempt == 0 && record;
        self.settle(run).await;
        // What the checks themselves leave in the work tree is theirs, not the model's change.
        // Before the baseline of a run that requires a clean tree, intake saw it clean and
        // nothing has written it since: no walk needed.
        let before = if baseline && !s.job.repo.allow_dirty {
            Vec::new()
        } else {
            lane.ws.blocking(|ws| ws.dirty_entries()).await.unwrap_or_default()
        };
        let results = self.each(s, lane, run, attempt, record).await;
        if record {
            run.transcript.checks(&results);
        }
        // After the baseline, telling what the checks wrote (a walk of the tree) runs alongside
        // the first model request; it is settled before any tool runs (`settle`).
        match lane.ws.spawn_blocking(move |ws| ws.mark_artifacts(&before)) {
            Ok(task) => self.pending = Some(task),
            Err(e) => run.record.warnings.push(format!("could not tell what the checks wrote: {}", e.message)),
        }
        if !baseline {
            self.settle(run).await;
        }
        results
    }

    /// Wait for the marking of the last checks' artifacts, if it is still running.
    pub async fn settle(&mut self, run: &mut Run) {
        if let Some(task) = self.pending.take()
            && let Err(e) = crate::git::settle(task).await
        {
            run.record.warnings.push(format!("could not tell what the checks wrote: {}", e.message));
        }
    }

    async fn each(
        &mut self,
        s: &Scope,
        lane: Lane<'_>,
        run: &mut Run,
        attempt: u32,
        record: bool,
    ) -> Vec<verify::CheckResult> {
        let mut results: Vec<verify::CheckResult> = Vec::new();
        for check in &s.job.verify {
            if record {
                lane.events.emit(Event::VerifyStarted {
                    attempt,
                    check: check.name.clone(),
                    command: check.run.clone(),
                });
            }
            let root = self.tools.root.path();
            let started = run.machine.elapsed_ms();
            let mut r = verify::run_check(
                check,
                attempt,
                root,
                &self.tools.env,
                lane.bound.deadline,
                &self.tools.bound.cancel,
                &self.tools.sandbox,
            )
            .await;
            r.started_ms = Some(started);
            r.output_tail = self.tools.redactor.apply(&r.output_tail);
            r.junit_error = r.junit_error.map(|e| self.tools.redactor.apply(&e));
            r.key_lines = r.key_lines.iter().map(|l| self.tools.redactor.apply(l)).collect();
            if attempt != 0 || !run.record.baseline.is_empty() {
                let base = run.record.baseline.iter().find(|b| b.name == r.name).cloned();
                verify::judge(&mut r, base.as_ref());
            }
            if record {
                note(lane, run, attempt, &r);
            }
            let cancelled = r.cancelled;
            results.push(r);
            if cancelled {
                break;
            }
        }
        results
    }
}

/// A check's result: its event, and its place in the record.
fn note(lane: Lane<'_>, run: &mut Run, attempt: u32, r: &verify::CheckResult) {
    lane.events.emit(r.event());
    if attempt == 0 {
        run.record.baseline.push(r.clone());
    } else {
        run.record.verify.push(r.clone());
    }
}
