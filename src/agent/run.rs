//! A run in progress: the record it fills in (what `report.json` will say), and what only the
//! run itself needs: the state machine, the conversation for `transcript.jsonl`, its clock.

use super::state::Machine;
use crate::record::RunRecord;
use tokio::time::Instant;

pub struct Run {
    /// The account of the run, filled in as it goes and sealed once at the end.
    pub record: RunRecord,
    pub machine: Machine,
    /// What was said, for `transcript.jsonl`.
    pub transcript: Vec<crate::protocol::transcript::Entry>,
    pub started: Instant,
}

impl Run {
    pub fn new(record: RunRecord, started: Instant) -> Run {
        Run { record, machine: Machine::new(), transcript: vec![], started }
    }

    /// The record with the fields derived for output computed (once, here): exit code,
    /// duration, cost, fault classes and the states the run went through.
    pub fn seal(&mut self) -> RunRecord {
        self.record.states = self.machine.history();
        self.record.seal(self.started.elapsed());
        self.record.clone()
    }
}

/// A run's record for unit tests.
#[cfg(test)]
pub fn test_record(job: &str) -> RunRecord {
    let mut r = RunRecord::new(job, "run", "2026-01-01T00:00:00Z".into());
    (r.provider, r.model, r.repo) = ("script".into(), "m".into(), "/r".into());
    (r.base, r.branch, r.context_window) = ("HEAD".into(), format!("hone/{job}"), 32_768);
    r
}
