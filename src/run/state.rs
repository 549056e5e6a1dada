//! A run in progress: its record, and its state machine (with no interactive states: a policy
//! answers every question). Every transition goes through `Machine::go`, which checks it against
//! the one table below and records it with timings; `enter` also emits it.

use crate::events::Events;
use crate::protocol::Event;
pub use crate::protocol::{State, StateSpan};
use crate::record::RunRecord;
use std::time::Instant;

use State::*;

#[cfg(test)]
pub const ALL: [State; 11] = [
    Intake,
    ContextBuilding,
    Planning,
    Executing,
    Verifying,
    Recovering,
    Summarizing,
    Done,
    Failed,
    Aborted,
    NeedsClarification,
];

/// The transition table: every allowed move, and nothing else.
pub fn allowed(from: State, to: State) -> bool {
    if from.is_terminal() {
        return false;
    }
    // Cancellation can stop any live state; an infrastructure error can fail any live state.
    if to == Aborted || to == Failed {
        return true;
    }
    matches!(
        (from, to),
        (Intake, ContextBuilding)
            | (Intake, Summarizing)
            | (ContextBuilding, Planning)
            | (ContextBuilding, Executing)
            | (Planning, Executing)
            | (Planning, NeedsClarification)
            | (Planning, Summarizing)
            | (Executing, Verifying)
            | (Executing, Recovering)
            | (Executing, Summarizing)
            | (Executing, NeedsClarification)
            | (Verifying, Summarizing)
            | (Verifying, Recovering)
            | (Recovering, Executing)
            | (Recovering, Summarizing)
            | (Summarizing, Done)
    )
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid state transition {from:?} -> {to:?}")]
pub struct InvalidTransition {
    pub from: State,
    pub to: State,
}

pub struct Machine {
    state: State,
    started: Instant,
    history: Vec<StateSpan>,
}

impl Machine {
    pub fn new() -> Self {
        Machine {
            state: Intake,
            started: Instant::now(),
            history: vec![StateSpan { state: Intake, entered_ms: 0, duration_ms: 0, reason: "run started".into() }],
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// Move to `to`, or refuse if the table does not allow it.
    pub fn go(&mut self, to: State, reason: &str) -> Result<(State, State), InvalidTransition> {
        let from = self.state;
        if !allowed(from, to) {
            return Err(InvalidTransition { from, to });
        }
        let now = self.elapsed_ms();
        if let Some(last) = self.history.last_mut() {
            last.duration_ms = now - last.entered_ms;
        }
        self.history.push(StateSpan { state: to, entered_ms: now, duration_ms: 0, reason: reason.into() });
        self.state = to;
        Ok((from, to))
    }

    /// Milliseconds since the run started (the clock of its states' timings).
    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn history(&self) -> Vec<StateSpan> {
        self.history.clone()
    }

    /// Move to `to` and emit the transition; a move the table refuses is a bug in hone, logged.
    pub fn enter(&mut self, events: &Events, to: State, reason: &str) {
        match self.go(to, reason) {
            Ok((from, to)) => events.emit(Event::StateChanged { from, to, reason: reason.into() }),
            Err(e) => tracing::error!("{e} ({reason}); this is a bug in hone"),
        }
    }
}

/// A run in progress: the record it fills in (what `report.json` will say), and what only the
/// run itself needs: the state machine, the conversation for `transcript.jsonl`, its clock.
pub struct Run {
    /// The account of the run, filled in as it goes and sealed once at the end.
    pub record: RunRecord,
    pub machine: Machine,
    /// What was said, for `transcript.jsonl`.
    pub transcript: super::transcript::Transcript,
    pub started: tokio::time::Instant,
    /// Each try's patch and transcript (`attempts:`), for the report dir.
    pub try_files: Vec<crate::output::TryFiles>,
}

impl Run {
    pub fn new(record: RunRecord, started: tokio::time::Instant) -> Run {
        Run { record, machine: Machine::new(), transcript: Default::default(), started, try_files: Vec::new() }
    }

    /// Move the state machine and emit the transition.
    pub fn enter(&mut self, events: &Events, to: State, reason: &str) {
        self.machine.enter(events, to, reason);
    }

    /// Record `e` (redacted): the run ends in error.
    pub fn fail(&mut self, redactor: &crate::redact::Redactor, e: crate::error::HoneError) -> crate::record::Status {
        self.record.errors.push(redactor.error(e));
        crate::record::Status::Error
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

impl Default for Machine {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_path_and_recovery_loop_are_allowed() {
        let mut m = Machine::new();
        for s in [ContextBuilding, Planning, Executing, Verifying, Recovering, Executing, Verifying, Summarizing, Done]
        {
            m.go(s, "test").unwrap();
        }
        assert_eq!(m.history().len(), 10);
        assert!(m.state().is_terminal());
    }

    #[test]
    fn terminal_states_have_no_way_out_and_skips_are_refused() {
        let mut m = Machine::new();
        assert_eq!(m.go(Verifying, "skip"), Err(InvalidTransition { from: Intake, to: Verifying }));
        assert_eq!(m.go(Done, "skip"), Err(InvalidTransition { from: Intake, to: Done }));
        m.go(Aborted, "signal").unwrap();
        for s in ALL {
            assert!(m.go(s, "after the end").is_err(), "{s:?}");
        }
    }

    #[test]
    fn the_table_is_exactly_as_specified() {
        // Count the allowed moves: a change to the table must change this test too.
        let n = ALL.iter().flat_map(|a| ALL.iter().map(move |b| (*a, *b))).filter(|(a, b)| allowed(*a, *b)).count();
        assert_eq!(n, 16 + 7 * 2);
        assert!(!allowed(Verifying, Executing), "verification failures go through RECOVERING");
        assert!(!allowed(Executing, Done), "success goes through VERIFYING and SUMMARIZING");
        assert!(!allowed(Recovering, Verifying));
        assert!(allowed(Planning, Summarizing), "the model can fail before it makes a plan");
    }
}
