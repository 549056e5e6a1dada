//! A fleet's live progress on stderr: done, running, failed, PRs created and updated, and the
//! time left, as one redrawn line on a terminal and as periodic plain lines in a log, with a line
//! for each repository that fails.

mod render;

use super::aggregate::{RepoResult, RepoStatus};
use crate::redact::Redactor;
use crate::screen::{self, Screen};
use render::{Cadence, Counts, LastLine};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State {
    counts: Counts,
    /// The time the finished repositories took (those that ran), and how many.
    spent: Duration,
    ran: usize,
    /// When each running repository started, by id (at most `workers` of them).
    running: HashMap<String, Instant>,
    /// The last status line a log got.
    last: LastLine,
    /// The counts the last status line said.
    said: Option<Counts>,
    finished: bool,
}

pub struct Live {
    screen: Arc<Mutex<Screen>>,
    tty: bool,
    state: Mutex<State>,
    workers: usize,
    cadence: Cadence,
    redactor: Redactor,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Live {
    /// Progress for `total` repositories on `workers` workers, written to `w` (a terminal when
    /// `tty`), starting `now`.
    pub fn new(w: Box<dyn std::io::Write + Send>, tty: bool, total: usize, workers: usize, redactor: Redactor) -> Self {
        let now = Instant::now();
        let state = State {
            counts: Counts { total, ..Default::default() },
            spent: Duration::ZERO,
            ran: 0,
            running: HashMap::new(),
            last: LastLine { done: 0, at: now },
            said: None,
            finished: false,
        };
        Live {
            screen: Arc::new(Mutex::new(Screen::new(w, tty))),
            tty,
            state: Mutex::new(state),
            workers: workers.max(1),
            cadence: Cadence::for_total(total),
            redactor,
        }
    }

    /// Progress on stderr: redrawn when stderr is a terminal (and stdout, when `--json` streams
    /// to it, is not the same screen), plain lines otherwise. On a terminal, log lines clear the
    /// status line first (`screen::above_status`).
    #[allow(clippy::disallowed_methods)] // stderr for the status line, which `Screen` keeps neutral
    pub fn stderr(total: usize, workers: usize, json: bool, redactor: Redactor) -> Live {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal() && !(json && std::io::stdout().is_terminal());
        let live = Live::new(Box::new(std::io::stderr()), tty, total, workers, redactor);
        if tty {
            screen::install(&live.screen);
        }
        live.begin();
        live
    }

    fn begin(&self) {
        let c = lock(&self.state).counts;
        let mut s = screen::locked(&self.screen);
        if self.tty {
            s.status(&render::status_line(&c, None));
        } else {
            s.line(&format!("hone fleet: {} repositories, {} at a time", c.total, self.workers.min(c.total.max(1))));
        }
    }

    fn line_for(&self, st: &State, now: Instant) -> String {
        let running: Vec<Duration> = st.running.values().map(|t| now.saturating_duration_since(*t)).collect();
        let queued = st.counts.total.saturating_sub(st.counts.done + st.counts.running);
        let left = render::time_left(st.spent, st.ran, queued, &running, self.workers);
        render::status_line(&st.counts, left)
    }

    /// The status line, if it is due: always on a terminal, by the cadence in a log.
    fn show(&self, st: &mut State, now: Instant) {
        let mut s = screen::locked(&self.screen);
        if st.finished {
            return;
        }
        if self.tty {
            s.status(&self.line_for(st, now));
        } else if render::due(&self.cadence, &st.last, st.counts.done, now) {
            s.status(&self.line_for(st, now));
            st.last = LastLine { done: st.counts.done, at: now };
            st.said = Some(st.counts);
        }
    }

    pub fn started(&self, id: &str, now: Instant) {
        let mut st = lock(&self.state);
        st.running.insert(id.to_string(), now);
        st.counts.running = st.running.len();
        if self.tty {
            self.show(&mut st, now);
        }
    }

    /// A repository finished: counted, a line of its own when it failed (its id and error
    /// through the redactor), and the status line when due.
    pub fn finished(&self, r: &RepoResult, now: Instant) {
        let mut st = lock(&self.state);
        st.running.remove(&r.id);
        st.counts.running = st.running.len();
        st.counts.done += 1;
        match r.status {
            RepoStatus::Failed => st.counts.failed += 1,
            RepoStatus::PrCreated => st.counts.created += 1,
            RepoStatus::PrUpdated => st.counts.updated += 1,
            _ => {}
        }
        if r.status != RepoStatus::Cancelled {
            st.spent += Duration::from_millis(r.duration_ms);
            st.ran += 1;
        }
        if r.status == RepoStatus::Failed && !st.finished {
            let took = Duration::from_millis(r.duration_ms);
            let error = r.error.as_deref().map(|e| self.redactor.apply(e));
            let line =
                render::failure_line(&self.redactor.apply(&r.id), r.code.map(|c| c.as_str()), error.as_deref(), took);
            screen::locked(&self.screen).line(&line);
        }
        self.show(&mut st, now);
    }

    /// Time passed: a terminal's time left is redrawn; a log gets its periodic line.
    pub fn tick(&self, now: Instant) {
        let mut st = lock(&self.state);
        self.show(&mut st, now);
    }

    /// The fleet ended (or was stopped): the last status line as an ordinary line, then nothing.
    pub fn finish(&self) {
        let mut st = lock(&self.state);
        if st.finished {
            return;
        }
        let line = self.line_for(&st, Instant::now());
        let mut s = screen::locked(&self.screen);
        if self.tty || st.said != Some(st.counts) {
            s.finish(&line);
        }
        st.finished = true;
        drop(s);
        screen::uninstall_if(&self.screen);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
