//! The timeline in `summary.md`: a run's states, its turns and its checks (setup, the baseline,
//! each verification round) on one clock, as a Mermaid gantt, from the record's timings.

use crate::output::chart::{Gantt, Mark, Task};
use crate::protocol::{State, StateSpan};
use crate::record::RunRecord;
use crate::verify::CheckResult;

/// The most rows for turns, and for checks: beyond them, rows stand for several.
pub const MAX_ROWS: usize = 30;

/// The gantt of `r`, or `None` when the record holds no timings (a run that never started).
pub fn render(r: &RunRecord) -> Option<String> {
    let origin = time::OffsetDateTime::parse(&r.started_at, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(0);
    let mut g = Gantt::new("Timeline", origin);
    g.section("States", states(r));
    g.section("Turns", turns(r));
    g.section("Checks", checks(r));
    g.render()
}

/// Where a state span ends: its recorded end, or for the last one still open, the run's end.
fn end(s: &StateSpan, last: bool, run_ms: u64) -> u64 {
    if last && s.duration_ms == 0 && !s.state.is_terminal() {
        run_ms.max(s.entered_ms)
    } else {
        s.entered_ms + s.duration_ms
    }
}

fn states(r: &RunRecord) -> Vec<Task> {
    let n = r.states.len();
    r.states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mark = match s.state {
                _ if s.state.is_terminal() => Mark::Milestone,
                State::Recovering => Mark::Failed,
                _ => Mark::Plain,
            };
            let end = end(s, i + 1 == n, r.duration_ms);
            Task { kind: s.state.as_str(), name: String::new(), start_ms: s.entered_ms, end_ms: end, mark }
        })
        .collect()
}

/// Each turn from its request to the next turn or the run's next state other than EXECUTING
/// (verification, the summary), whichever is first; with more than [`MAX_ROWS`] turns, a row
/// for each run of turns.
fn turns(r: &RunRecord) -> Vec<Task> {
    let starts = &r.turn_started_ms;
    let leaves = |t: u64| {
        r.states
            .iter()
            .find(|s| s.entered_ms >= t && s.state != State::Executing)
            .map_or(r.duration_ms, |s| s.entered_ms)
    };
    let spans: Vec<(u64, u64)> = starts
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
            (t, leaves(t).min(next).max(t))
        })
        .collect();
    let per_row = spans.len().div_ceil(MAX_ROWS).max(1);
    spans
        .chunks(per_row)
        .enumerate()
        .map(|(row, c)| {
            let first = row * per_row + 1;
            let name = if c.len() == 1 { first.to_string() } else { format!("{first}-{}", first + c.len() - 1) };
            let kind = if c.len() == 1 { "turn" } else { "turns" };
            Task { kind, name, start_ms: c[0].0, end_ms: c[c.len() - 1].1, mark: Mark::Plain }
        })
        .collect()
}

/// One row per check that has a start time (setup, baseline, rounds); with more than
/// [`MAX_ROWS`], one row per stage (setup, baseline, each round). Red: it failed (a setup or
/// baseline command), or did not meet its expectation (a verification round).
fn checks(r: &RunRecord) -> Vec<Task> {
    let timed = |c: &CheckResult| c.started_ms.map(|s| (s, s + c.duration_ms));
    let mut rows: Vec<(&'static str, String, &CheckResult)> = Vec::new();
    rows.extend(r.setup.iter().map(|c| ("setup", String::new(), c)));
    rows.extend(r.baseline.iter().map(|c| ("baseline", String::new(), c)));
    rows.extend(r.verify.iter().map(|c| ("round", format!("{} ", c.attempt), c)));
    rows.retain(|(_, _, c)| c.started_ms.is_some());
    let failed = |kind: &str, c: &CheckResult| if kind == "round" { !c.accepted } else { !c.passed };
    if rows.len() <= MAX_ROWS {
        return rows
            .into_iter()
            .filter_map(|(kind, stage, c)| {
                let (start_ms, end_ms) = timed(c)?;
                let mark = if failed(kind, c) { Mark::Failed } else { Mark::Plain };
                Some(Task { kind, name: format!("{stage}{}", c.name), start_ms, end_ms, mark })
            })
            .collect();
    }
    let mut out: Vec<Task> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for (kind, stage, c) in rows {
        let Some((start, end)) = timed(c) else { continue };
        let mark = if failed(kind, c) { Mark::Failed } else { Mark::Plain };
        let name = stage.trim().to_string();
        match out.last_mut() {
            Some(t) if t.kind == kind && t.name == name => {
                (t.start_ms, t.end_ms) = (t.start_ms.min(start), t.end_ms.max(end));
                t.mark = if mark == Mark::Failed { Mark::Failed } else { t.mark };
                if let Some(n) = counts.last_mut() {
                    *n += 1;
                }
            }
            _ => {
                out.push(Task { kind, name, start_ms: start, end_ms: end, mark });
                counts.push(1);
            }
        }
    }
    for (t, n) in out.iter_mut().zip(counts) {
        t.name = format!("{} ({n} checks)", t.name).trim_start().to_string();
    }
    out
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
