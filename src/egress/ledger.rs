//! The record of a run's connections through hone's proxies: each one an event (the first
//! thousand of each run), all of them tallied by host for `report.json` and `summary.md`, and
//! the refusals kept in order so that a command's result can tell the model what was refused.
//! A connection under way is in the tally with what it has moved so far, and is recorded when
//! it ends, or when its proxy stops (dropping it with its jail cuts it).

use super::pipe::Counters;
use crate::events::Events;
pub use crate::protocol::Connection;
use crate::protocol::Event;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Events for this many connections; past it, only the tally.
const MAX_EVENTS: usize = 1000;
/// Distinct (purpose, host, port, outcome) rows kept; past it, the rest share one row.
const MAX_ROWS: usize = 500;
/// The latest refusals kept for the model's notes.
const MAX_REFUSALS: usize = 200;

/// A row of the report: every connection of one purpose to one host and port with one outcome.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct HostTally {
    pub purpose: String,
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// The rule that allowed these connections (null when refused).
    pub rule: Option<String>,
    /// Why they were refused (the first reason seen), or why an allowed one failed.
    pub reason: Option<String>,
    pub connections: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// A run's connections; clones share it.
#[derive(Clone, Default)]
pub struct Ledger {
    inner: Arc<Mutex<Inner>>,
    events: Option<Events>,
}

#[derive(Default)]
struct Inner {
    rows: Rows,
    seen: usize,
    /// The latest refusals: (purpose, its count before this one, what was refused and why).
    refusals: std::collections::VecDeque<(String, usize, String)>,
    /// Refusals so far, by purpose.
    refused: BTreeMap<String, usize>,
    /// Connections under way, by number: as they began, and what they have moved.
    live: BTreeMap<u64, (Connection, Arc<Counters>)>,
    opened: u64,
}

/// A connection under way (`Ledger::open`): recorded when finished, or, if dropped first (its
/// proxy stopped), as cut.
pub struct Live {
    ledger: Ledger,
    id: u64,
    started: std::time::Instant,
    done: bool,
}

impl Live {
    /// The connection ended: record it, with `cut` as the reason if it ended early.
    pub fn finish(mut self, cut: Option<String>) {
        self.done = true;
        self.ledger.close(self.id, self.started, cut);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.done {
            let why = "cut when hone's proxy stopped (its jail was done)".to_string();
            self.ledger.close(self.id, self.started, Some(why));
        }
    }
}

/// The connection `c` with what `n` counted.
fn with_counts(c: &Connection, n: &Counters) -> Connection {
    let mut c = c.clone();
    c.bytes_sent = n.sent.load(Ordering::Relaxed);
    c.bytes_received = n.received.load(Ordering::Relaxed);
    c
}

impl Ledger {
    pub fn new(events: Option<Events>) -> Ledger {
        Ledger { inner: Arc::default(), events }
    }

    /// Record `c`: an event (within the cap), its row, and, when refused, a note for the model.
    pub fn record(&self, c: Connection) {
        let Ok(mut inner) = self.inner.lock() else { return };
        inner.seen += 1;
        if let Some(ev) = self.events.as_ref().filter(|_| inner.seen <= MAX_EVENTS) {
            ev.emit(Event::Egress(c.clone()));
        }
        if !c.allowed {
            let n = inner.refused.entry(c.purpose.clone()).or_default();
            let seq = *n;
            *n += 1;
            if inner.refusals.len() == MAX_REFUSALS {
                inner.refusals.pop_front();
            }
            let why = c.reason.clone().unwrap_or_default();
            inner.refusals.push_back((c.purpose.clone(), seq, format!("{}:{}: {why}", c.host, c.port)));
        }
        fold(&mut inner.rows, c);
    }

    /// A connection that `counters` will count: in the tally from now on, recorded when the
    /// returned `Live` is finished or dropped.
    pub fn open(&self, c: Connection, counters: Arc<Counters>) -> Live {
        let started = std::time::Instant::now();
        let mut id = 0;
        if let Ok(mut inner) = self.inner.lock() {
            inner.opened += 1;
            id = inner.opened;
            inner.live.insert(id, (c, counters));
        }
        Live { ledger: self.clone(), id, started, done: false }
    }

    fn close(&self, id: u64, started: std::time::Instant, cut: Option<String>) {
        let Some((c, n)) = self.inner.lock().ok().and_then(|mut i| i.live.remove(&id)) else { return };
        let mut c = with_counts(&c, &n);
        c.reason = cut.or(c.reason);
        c.duration_ms = started.elapsed().as_millis() as u64;
        self.record(c);
    }

    /// Every row, by purpose, host, port and outcome; the connections under way among them,
    /// with what they have moved so far.
    pub fn tally(&self) -> Vec<HostTally> {
        let Ok(i) = self.inner.lock() else { return vec![] };
        let mut rows = i.rows.clone();
        for (c, n) in i.live.values() {
            let mut c = with_counts(c, n);
            c.reason = Some("still open when this was written".into());
            fold(&mut rows, c);
        }
        rows.into_values().collect()
    }

    /// How many refusals `purpose` has had so far: a mark for `refused_since`.
    pub fn mark(&self, purpose: &str) -> usize {
        self.inner.lock().map(|i| i.refused.get(purpose).copied().unwrap_or(0)).unwrap_or(0)
    }

    /// The refusals of `purpose` after `mark`: the first five still kept, and how many in all.
    pub fn refused_since(&self, mark: usize, purpose: &str) -> (Vec<String>, usize) {
        let Ok(i) = self.inner.lock() else { return (vec![], 0) };
        let count = i.refused.get(purpose).copied().unwrap_or(0).saturating_sub(mark);
        let shown = i.refusals.iter().filter(|(p, seq, _)| p == purpose && *seq >= mark).take(5);
        (shown.map(|(_, _, t)| t.clone()).collect(), count)
    }
}

type Rows = BTreeMap<(String, String, u16, bool), HostTally>;

/// Add `c` to its row (past `MAX_ROWS` rows, to its purpose's `(other hosts)` row).
fn fold(rows: &mut Rows, c: Connection) {
    let mut key = (c.purpose.clone(), c.host.clone(), c.port, c.allowed);
    if rows.len() >= MAX_ROWS && !rows.contains_key(&key) {
        key = (c.purpose.clone(), "(other hosts)".into(), 0, c.allowed);
    }
    let row = rows.entry(key.clone()).or_insert_with(|| HostTally {
        purpose: key.0,
        host: key.1,
        port: key.2,
        allowed: c.allowed,
        rule: c.rule.clone(),
        reason: c.reason.clone(),
        connections: 0,
        bytes_sent: 0,
        bytes_received: 0,
    });
    row.connections += 1;
    row.bytes_sent += c.bytes_sent;
    row.bytes_received += c.bytes_received;
    if row.reason.is_none() {
        row.reason = c.reason;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(host: &str, allowed: bool, sent: u64) -> Connection {
        Connection {
            purpose: "commands".into(),
            host: host.into(),
            port: 443,
            allowed,
            rule: allowed.then(|| "network.allow[0] `a.org`".into()),
            reason: (!allowed).then(|| "not listed".into()),
            address: None,
            bytes_sent: sent,
            bytes_received: 2 * sent,
            duration_ms: 1,
        }
    }

    #[test]
    fn connections_are_tallied_by_host_and_refusals_kept_for_the_model() {
        let l = Ledger::new(None);
        l.record(conn("a.org", true, 10));
        let mark = l.mark("commands");
        l.record(conn("a.org", true, 5));
        l.record(conn("evil.com", false, 0));
        let rows = l.tally();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].host.as_str(), rows[0].connections, rows[0].bytes_sent, rows[0].bytes_received),
            ("a.org", 2, 15, 30)
        );
        assert_eq!((rows[1].host.as_str(), rows[1].allowed), ("evil.com", false));
        assert_eq!(l.refused_since(mark, "commands"), (vec!["evil.com:443: not listed".to_string()], 1));
        assert_eq!(l.refused_since(mark, "setup").1, 0);
        assert_eq!(l.refused_since(l.mark("commands"), "commands").1, 0);
    }

    #[test]
    fn rows_are_bounded_however_many_hosts_are_tried() {
        let l = Ledger::new(None);
        for i in 0..(MAX_ROWS + 50) {
            l.record(conn(&format!("h{i}.org"), false, 0));
        }
        let rows = l.tally();
        assert_eq!(rows.len(), MAX_ROWS + 1);
        assert_eq!(rows.iter().find(|r| r.host == "(other hosts)").unwrap().connections, 50);
        // Counted past the kept ones: a command's note says how many however many there were.
        let mark = l.mark("commands");
        assert_eq!(mark, MAX_ROWS + 50);
        l.record(conn("late.org", false, 0));
        assert_eq!(l.refused_since(mark, "commands"), (vec!["late.org:443: not listed".to_string()], 1));
    }
}
