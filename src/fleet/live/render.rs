//! What the fleet's progress says, as pure functions: the status line for given counts, the
//! estimated time left, and when a log (not a terminal) gets its next line.

use std::time::{Duration, Instant};

/// Where a fleet stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Repositories this run works on (not those carried over by `--resume`).
    pub total: usize,
    /// Finished, whatever their outcome.
    pub done: usize,
    pub running: usize,
    pub failed: usize,
    pub created: usize,
    pub updated: usize,
}

/// `45s`, `3m05s`, `1h02m`: short enough for a status line.
pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The status line: counts only (nothing a repository controls), short enough for a terminal.
pub fn status_line(c: &Counts, left: Option<Duration>) -> String {
    let mut line = format!("hone fleet: {}/{} done, {} running", c.done, c.total, c.running);
    if c.failed > 0 {
        line.push_str(&format!(", {} failed", c.failed));
    }
    line.push_str(&format!(", PRs {} created {} updated", c.created, c.updated));
    if let Some(left) = left.filter(|_| c.done < c.total) {
        line.push_str(&format!(", about {} left", short_duration(left)));
    }
    line
}

/// The time left: the mean duration of the finished repositories (`finished` of them took
/// `spent` in all) for each queued one, what the mean leaves of each running one (`running`:
/// how long each has run), spread over the workers that still have work. `None` before any
/// repository has finished.
pub fn time_left(
    spent: Duration,
    finished: usize,
    queued: usize,
    running: &[Duration],
    workers: usize,
) -> Option<Duration> {
    if finished == 0 {
        return None;
    }
    let mean = spent / finished as u32;
    let work = mean * queued as u32 + running.iter().map(|r| mean.saturating_sub(*r)).sum::<Duration>();
    let busy = workers.min(queued + running.len()).max(1);
    let longest =
        if queued > 0 { mean } else { running.iter().map(|r| mean.saturating_sub(*r)).max().unwrap_or_default() };
    Some((work / busy as u32).max(longest))
}

/// When a log gets a status line: every `every` repositories finished, and at least every
/// `period` while the fleet runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    pub every: usize,
    pub period: Duration,
}

impl Cadence {
    /// About twenty lines over the whole fleet by count (a line per repository for twenty or
    /// fewer, at most every 50), and one every 30 s whatever happens.
    pub fn for_total(total: usize) -> Cadence {
        Cadence { every: (total / 20).clamp(1, 50), period: Duration::from_secs(30) }
    }
}

/// The last line a log got: how many were done then, and when.
#[derive(Debug, Clone, Copy)]
pub struct LastLine {
    pub done: usize,
    pub at: Instant,
}

/// Whether a log is due a status line now, `done` repositories being finished.
pub fn due(cadence: &Cadence, last: &LastLine, done: usize, now: Instant) -> bool {
    done >= last.done + cadence.every || now.saturating_duration_since(last.at) >= cadence.period
}

/// The line for a repository that failed: its id, code and error (already through the
/// redactor), and how long it took. The caller makes it neutral for the runner.
pub fn failure_line(id: &str, code: Option<&str>, error: Option<&str>, took: Duration) -> String {
    let code = code.map(|c| format!(" {c}")).unwrap_or_default();
    let error = error.filter(|e| !e.is_empty()).map(|e| format!(": {e}")).unwrap_or_default();
    format!("hone fleet: {id} failed{code}{error} ({})", short_duration(took))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn the_status_line_says_done_running_failed_prs_and_time_left() {
        let c = Counts { total: 1000, done: 412, running: 32, failed: 3, created: 388, updated: 21 };
        assert_eq!(
            status_line(&c, Some(S(750))),
            "hone fleet: 412/1000 done, 32 running, 3 failed, PRs 388 created 21 updated, about 12m30s left"
        );
        let start = Counts { total: 5, running: 2, ..Default::default() };
        assert_eq!(status_line(&start, None), "hone fleet: 0/5 done, 2 running, PRs 0 created 0 updated");
        let end = Counts { total: 5, done: 5, created: 5, ..Default::default() };
        assert_eq!(status_line(&end, Some(S(3))), "hone fleet: 5/5 done, 0 running, PRs 5 created 0 updated");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(short_duration(S(0)), "0s");
        assert_eq!(short_duration(S(59)), "59s");
        assert_eq!(short_duration(S(65)), "1m05s");
        assert_eq!(short_duration(S(3 * 3600 + 125)), "3h02m");
    }

    #[test]
    fn time_left_spreads_the_queue_over_the_workers() {
        // Nothing finished: no estimate.
        assert_eq!(time_left(S(0), 0, 10, &[S(1)], 4), None);
        // Mean 10 s; 8 queued and 4 running for 4 s each (6 s left each): (80 + 24) / 4.
        assert_eq!(time_left(S(100), 10, 8, &[S(4); 4], 4), Some(S(26)));
        // A running repository past the mean counts as about to finish.
        assert_eq!(time_left(S(20), 2, 0, &[S(30)], 8), Some(S(0)));
        // Fewer repositories left than workers: the longest one left (the queued one, 10 s), not
        // the work spread over the workers (7.5 s).
        assert_eq!(time_left(S(10), 1, 1, &[S(5)], 32), Some(S(10)));
        assert_eq!(time_left(S(10), 1, 0, &[S(5), S(8)], 32), Some(S(5)));
        // 1,000 repositories of 2 s on 32 workers, none running yet.
        assert_eq!(time_left(S(2), 1, 999, &[], 32), Some(Duration::from_micros(62_437_500)));
    }

    #[test]
    fn a_log_gets_a_line_every_n_finished_or_every_period() {
        let t0 = Instant::now();
        let c = Cadence { every: 10, period: S(30) };
        let last = LastLine { done: 20, at: t0 };
        assert!(!due(&c, &last, 20, t0));
        assert!(!due(&c, &last, 29, t0 + S(29)));
        assert!(due(&c, &last, 30, t0 + S(1)), "ten more finished");
        assert!(due(&c, &last, 20, t0 + S(30)), "thirty seconds passed, even with nothing new");
    }

    #[test]
    fn the_cadence_follows_the_fleet_size() {
        assert_eq!(Cadence::for_total(3).every, 1);
        assert_eq!(Cadence::for_total(100).every, 5);
        assert_eq!(Cadence::for_total(1000).every, 50);
        assert_eq!(Cadence::for_total(100_000).every, 50);
        assert_eq!(Cadence::for_total(1000).period, S(30));
    }

    #[test]
    fn a_failure_line_names_the_repository_code_and_error() {
        let l = failure_line("acme__app", Some("E_GIT"), Some("clone failed"), Duration::from_millis(3200));
        assert_eq!(l, "hone fleet: acme__app failed E_GIT: clone failed (3s)");
        assert_eq!(failure_line("x", None, Some(""), S(0)), "hone fleet: x failed (0s)");
    }
}
