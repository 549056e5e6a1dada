//! What a job's tries have spent together (cost and tokens), so that `max_cost_usd` and
//! `max_tokens` hold for the whole job however many tries run at once. Each try reports what it
//! has spent so far; a try about to send a request first holds the most that request may cost,
//! until its answer is counted, so that tries running at once cannot each pass the check and
//! overshoot the budget together. With one try the sums are that try's own numbers, unchanged.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// What was spent: dollars at the models' prices, and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Used {
    pub usd: f64,
    pub tokens: u64,
}

#[derive(Default)]
struct Spend {
    by_try: BTreeMap<u32, Used>,
    /// Dollars held by requests in flight.
    held: f64,
}

/// The job's meter, shared by its tries (clones share it).
#[derive(Clone, Default)]
pub struct Meter(Arc<Mutex<Spend>>);

impl Meter {
    fn spend(&self) -> std::sync::MutexGuard<'_, Spend> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Try `number` has spent `used` so far (its own total, not an increment).
    pub fn report(&self, number: u32, used: Used) {
        self.spend().by_try.insert(number, used);
    }

    /// What every try has spent, together (held dollars not included).
    pub fn spent(&self) -> Used {
        let s = self.spend();
        s.by_try.values().fold(Used::default(), |a, u| Used { usd: a.usd + u.usd, tokens: a.tokens + u.tokens })
    }

    /// Dollars held by requests in flight now.
    pub fn held(&self) -> f64 {
        self.spend().held
    }

    /// Hold `most` dollars for a request, if what was spent, what others hold and `most` stay
    /// within `limit`; `None` when they would not (the request must not be sent). The hold is
    /// let go when dropped, once the request's cost has been reported.
    pub fn hold(&self, most: f64, limit: f64) -> Option<Hold> {
        let mut s = self.spend();
        let spent: f64 = s.by_try.values().map(|u| u.usd).sum();
        if spent + s.held + most > limit {
            return None;
        }
        s.held += most;
        Some(Hold { meter: self.clone(), usd: most })
    }
}

/// Dollars held for one request in flight.
pub struct Hold {
    meter: Meter,
    usd: f64,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut s = self.meter.spend();
        s.held = (s.held - self.usd).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_try_spends_exactly_what_it_reports() {
        let m = Meter::default();
        m.report(1, Used { usd: 0.1 + 0.2, tokens: 7 });
        assert_eq!(m.spent(), Used { usd: 0.1 + 0.2, tokens: 7 }, "the same float, not summed again");
        m.report(1, Used { usd: 0.5, tokens: 9 });
        assert_eq!(m.spent(), Used { usd: 0.5, tokens: 9 }, "a report replaces the try's last");
    }

    #[test]
    fn tries_add_up_and_holds_stop_them_overshooting_together() {
        let m = Meter::default();
        m.report(1, Used { usd: 0.4, tokens: 100 });
        m.report(2, Used { usd: 0.3, tokens: 50 });
        assert_eq!(m.spent().tokens, 150);
        // Two tries each about to send a request that may cost 0.2, with 1.0 to spend: the
        // first holds its 0.2, the second finds 0.7 + 0.2 + 0.2 > 1.0 and must not send.
        let first = m.hold(0.2, 1.0).expect("within the budget");
        assert!(m.hold(0.2, 1.0).is_none(), "together they would pass the budget");
        // The first's answer is counted and its hold let go: now the second may go.
        m.report(1, Used { usd: 0.45, tokens: 120 });
        drop(first);
        assert!(m.hold(0.2, 1.0).is_some());
        assert!(m.hold(0.26, 1.0).is_none());
    }

    #[test]
    fn holds_from_threads_never_pass_the_limit() {
        let m = Meter::default();
        let granted = std::sync::atomic::AtomicUsize::new(0);
        let holds = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..100 {
                        if let Some(h) = m.hold(0.1, 1.0) {
                            granted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            holds.lock().unwrap().push(h);
                        }
                    }
                });
            }
        });
        // 1.0 holds ten requests of 0.1 at most (floating point may make it nine).
        let n = granted.load(std::sync::atomic::Ordering::Relaxed);
        assert!((9..=10).contains(&n), "{n} holds were granted");
    }
}
