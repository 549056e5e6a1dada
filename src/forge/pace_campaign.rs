//! A campaign's pace (the job's `pr.hourly_limit` and `pr.open_limit`), decided purely: from the
//! campaign's PRs as the forge shows them (opened by the campaign's identity on the job's branch
//! in each target repository) and the time now, which repositories run, which run only to update
//! their open PR, and which wait for a later fleet run. Slots are taken when a run that may open
//! a PR starts, and given back when it ends without opening one.

/// The job's limits: at most `hourly` PRs opened in any hour, at most `open` open at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub hourly: Option<u32>,
    pub open: Option<u32>,
}

impl Limits {
    /// Whether any limit is set: without one, nothing is asked of the forge.
    pub const fn any(&self) -> bool {
        self.hourly.is_some() || self.open.is_some()
    }
}

/// One of the campaign's PRs as its forge shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// When it was opened (Unix seconds); `None` when the forge's date cannot be read, which
    /// counts as opened within the hour.
    pub created_at: Option<i64>,
    /// Still open (not closed, not merged).
    pub open: bool,
}

/// What one repository does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It runs and may open a PR: it holds a slot until it ends.
    Run,
    /// The campaign's PR there is open: it runs, and updating a PR is not opening one.
    RunUpdating,
    /// Not run now (no model tokens spent): why, for its report.
    Waiting(String),
}

/// The length of the hourly window, in seconds.
const HOUR: i64 = 3600;

/// The campaign's budget as the fleet spends it.
#[derive(Debug, Clone)]
pub struct Budget {
    limits: Limits,
    now: i64,
    /// When each PR counted in the last hour was opened (a slot taken: now).
    hour: Vec<i64>,
    open: u32,
}

impl Budget {
    /// The budget left, from every PR of the campaign (in all its repositories) at `now`.
    pub fn new(limits: Limits, all: &[Seen], now: i64) -> Budget {
        let hour = all.iter().filter_map(|s| s.created_at.map_or(Some(now), |t| (t > now - HOUR).then_some(t)));
        let open = all.iter().filter(|s| s.open).count();
        Budget { limits, now, hour: hour.collect(), open: u32::try_from(open).unwrap_or(u32::MAX) }
    }

    /// The decision for a repository whose own campaign PRs are `mine`, taking a slot to run.
    pub fn admit(&mut self, mine: &[Seen]) -> Decision {
        if mine.iter().any(|s| s.open) {
            return Decision::RunUpdating;
        }
        if let Some(n) = self.limits.hourly.filter(|n| self.hour.len() >= *n as usize) {
            let next = self.hour.iter().min().map_or(HOUR, |t| t + HOUR - self.now).clamp(1, HOUR);
            return Decision::Waiting(format!(
                "waiting: the campaign opened {} PRs in the last hour (hourly_limit: {n}); \
                 the next slot frees in {} min, for a later fleet run",
                self.hour.len(),
                (next + 59) / 60
            ));
        }
        if let Some(n) = self.limits.open.filter(|n| self.open >= *n) {
            return Decision::Waiting(format!(
                "waiting: {} of the campaign's PRs are open (open_limit: {n}); \
                 a later fleet run opens this one once fewer are",
                self.open
            ));
        }
        self.hour.push(self.now);
        self.open += 1;
        Decision::Run
    }

    /// A run that held a slot (`Decision::Run`) ended without opening a PR: its slot is free.
    pub fn give_back(&mut self) {
        if let Some(i) = self.hour.iter().rposition(|t| *t == self.now) {
            self.hour.remove(i);
        }
        self.open = self.open.saturating_sub(1);
    }
}

/// An RFC 3339 date (a forge's `created_at`) as Unix seconds, `None` when it is not one.
pub fn unix_seconds(rfc3339: &str) -> Option<i64> {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(rfc3339, &Rfc3339).ok().map(|t| t.unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn pr(minutes_ago: i64, open: bool) -> Seen {
        Seen { created_at: Some(NOW - minutes_ago * 60), open }
    }

    fn limits(hourly: Option<u32>, open: Option<u32>) -> Limits {
        Limits { hourly, open }
    }

    #[test]
    fn the_hourly_limit_counts_prs_opened_in_the_last_hour_open_or_not() {
        // Three opened in the hour (one already merged), one the hour before: two slots of five.
        let all = [pr(5, true), pr(30, false), pr(59, true), pr(61, true)];
        let mut b = Budget::new(limits(Some(5), None), &all, NOW);
        assert_eq!(b.admit(&[]), Decision::Run);
        assert_eq!(b.admit(&[]), Decision::Run);
        let Decision::Waiting(why) = b.admit(&[]) else { panic!("the hour's budget is spent") };
        assert!(why.contains("opened 5 PRs in the last hour (hourly_limit: 5)"), "{why}");
        // The oldest counted one (59 min ago) leaves the window in a minute.
        assert!(why.contains("frees in 1 min"), "{why}");
    }

    #[test]
    fn an_open_campaign_pr_is_updated_whatever_the_budget() {
        let mine = [pr(10, true)];
        let mut b = Budget::new(limits(Some(1), Some(1)), &mine, NOW);
        assert_eq!(b.admit(&mine), Decision::RunUpdating);
        assert!(matches!(b.admit(&[]), Decision::Waiting(_)));
        // A closed PR of its own is no PR to update: the repository would open a new one.
        assert!(matches!(b.admit(&[pr(90, false)]), Decision::Waiting(_)));
    }

    #[test]
    fn the_open_limit_counts_open_prs_of_any_age_and_slots_come_back() {
        let all = [pr(600, true), pr(6000, true), pr(50, false)];
        let mut b = Budget::new(limits(None, Some(3)), &all, NOW);
        assert_eq!(b.admit(&[]), Decision::Run);
        let Decision::Waiting(why) = b.admit(&[]) else { panic!("three are open") };
        assert!(why.contains("3 of the campaign's PRs are open (open_limit: 3)"), "{why}");
        // The run ended without opening one: the next repository may.
        b.give_back();
        assert_eq!(b.admit(&[]), Decision::Run);
    }

    #[test]
    fn both_limits_hold_and_the_hourly_one_gives_back_too() {
        let mut b = Budget::new(limits(Some(1), Some(10)), &[], NOW);
        assert_eq!(b.admit(&[]), Decision::Run);
        assert!(matches!(b.admit(&[]), Decision::Waiting(w) if w.contains("hourly_limit: 1")));
        b.give_back();
        assert_eq!(b.admit(&[]), Decision::Run);
    }

    #[test]
    fn an_unreadable_or_future_date_counts_as_within_the_hour() {
        let all = [Seen { created_at: None, open: false }, Seen { created_at: Some(NOW + 600), open: false }];
        let mut b = Budget::new(limits(Some(2), None), &all, NOW);
        assert!(matches!(b.admit(&[]), Decision::Waiting(_)));
        assert_eq!(unix_seconds("2027-01-15T08:00:00Z"), Some(NOW));
    }

    #[test]
    fn no_limit_no_waiting() {
        let all: Vec<Seen> = (0..100).map(|i| pr(i, true)).collect();
        let mut b = Budget::new(Limits::default(), &all, NOW);
        assert!(!Limits::default().any());
        assert!((0..50).all(|_| b.admit(&[]) == Decision::Run));
    }
}
