//! Running the verify commands from the loop: the baseline, verification rounds and checkpoint
//! checks, each judged against the baseline, with events and report records.

use super::turns::Loop;
use crate::protocol::Event;
use crate::verify;

impl Loop<'_> {
    /// Run every check once and judge it against the baseline; with `record`, emit events and
    /// keep the results in the report.
    pub async fn run_checks(&mut self, attempt: u32, record: bool) -> Vec<verify::CheckResult> {
        let baseline = attempt == 0 && record;
        self.settle_marks().await;
        if !baseline && !self.touched {
            // A command may have changed files: the change existed, whatever happens to it later.
            // (Whether anything differs is enough: nothing is read or diffed.)
            self.touched = self.ws.blocking(|ws| ws.dirty_entries()).await.is_ok_and(|c| !c.is_empty());
        }
        // What the checks themselves leave in the work tree is theirs, not the model's change.
        // Before the baseline of a run that requires a clean tree, intake saw it clean and
        // nothing has written it since: no walk needed.
        let before = if baseline && !self.job.repo.allow_dirty {
            Vec::new()
        } else {
            self.ws.blocking(|ws| ws.dirty_entries()).await.unwrap_or_default()
        };
        let results = self.run_each_check(attempt, record).await;
        if record {
            self.note_checks(&results);
        }
        // After the baseline, telling what the checks wrote (a walk of the tree) runs alongside
        // the first model request; it is settled before any tool runs (`settle_marks`).
        match self.ws.spawn_blocking(move |ws| ws.mark_artifacts(&before)) {
            Ok(task) => self.pending_marks = Some(task),
            Err(e) => self.run.record.warnings.push(format!("could not tell what the checks wrote: {}", e.message)),
        }
        if !baseline {
            self.settle_marks().await;
        }
        results
    }

    /// Wait for the marking of the last checks' artifacts, if it is still running.
    pub async fn settle_marks(&mut self) {
        if let Some(task) = self.pending_marks.take()
            && let Err(e) = crate::git::settle(task).await
        {
            self.run.record.warnings.push(format!("could not tell what the checks wrote: {}", e.message));
        }
    }

    async fn run_each_check(&mut self, attempt: u32, record: bool) -> Vec<verify::CheckResult> {
        let mut results: Vec<verify::CheckResult> = Vec::new();
        for check in &self.job.verify {
            if record {
                self.events.emit(Event::VerifyStarted {
                    attempt,
                    check: check.name.clone(),
                    command: check.run.clone(),
                });
            }
            let root = self.tools.root.path();
            let mut r = verify::run_check(
                check,
                attempt,
                root,
                &self.tools.env,
                self.deadline,
                &self.tools.cancel,
                &self.tools.sandbox,
            )
            .await;
            r.output_tail = self.tools.redactor.apply(&r.output_tail);
            r.junit_error = r.junit_error.map(|e| self.tools.redactor.apply(&e));
            r.key_lines = r.key_lines.iter().map(|l| self.tools.redactor.apply(l)).collect();
            if attempt != 0 || !self.run.record.baseline.is_empty() {
                let base = self.run.record.baseline.iter().find(|b| b.name == r.name).cloned();
                verify::judge(&mut r, base.as_ref());
            }
            if record {
                self.record_check(attempt, &r);
            }
            let cancelled = r.cancelled;
            results.push(r);
            if cancelled {
                break;
            }
        }
        results
    }

    /// Run every check once and record it; `attempt` 0 is the baseline, then verification rounds.
    pub async fn verify(&mut self, attempt: u32) -> Vec<verify::CheckResult> {
        self.run_checks(attempt, true).await
    }

    fn record_check(&mut self, attempt: u32, r: &verify::CheckResult) {
        {
            self.events.emit(r.event());
            if attempt == 0 {
                self.run.record.baseline.push(r.clone());
            } else {
                self.run.record.verify.push(r.clone());
            }
        }
    }
}
