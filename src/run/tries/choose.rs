//! Which of a job's tries wins, decided by the repository's own checks in a documented order
//! (`docs/job-spec.md`, "Attempts"): a try whose change a guard refused, or that changed
//! nothing, never wins (nor one a cascade stopped: `settle` leaves it out); then the try whose checks all met their expectation; then the fewer new
//! failures against the baseline; then the fewer changed lines; then the lower cost; then the
//! earlier try. Pure: the tries come in as numbers, the choice and the rung that decided go out.

pub use crate::record::tries::{Choice, Why};

/// What the choice knows of one try, once it has ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The try's number, from 1.
    pub number: u32,
    /// A guard refused its change (a secret in it, a link out of the repository, …).
    pub refused: bool,
    /// Its change holds no file at all.
    pub empty: bool,
    /// Every check met its expectation in the try's last round.
    pub accepted: bool,
    /// It reached a verification round (a try that never did ranks below every try that did,
    /// whatever its count of new failures, which is then unknown).
    pub verified: bool,
    /// Tests or checks that passed at the baseline and fail after the try's change.
    pub new_failures: usize,
    /// Lines added and removed by its change.
    pub lines: u64,
    /// What its model requests cost, in US dollars.
    pub cost_usd: f64,
}

impl Candidate {
    /// What the choice knows of a try that ended (a try that never started is no candidate).
    pub fn of(t: &crate::record::tries::TryRecord) -> Candidate {
        Candidate {
            number: t.number,
            refused: !t.refused.is_empty(),
            empty: t.files_changed == 0,
            accepted: t.accepted,
            verified: !t.checks.is_empty(),
            new_failures: t.new_failures,
            lines: t.lines_changed,
            cost_usd: t.cost_usd.unwrap_or(0.0),
        }
    }
}

/// The order's comparison of two tries that may both win: `Less` when `a` is better, with the
/// rung that told them apart.
fn rank(a: &Candidate, b: &Candidate) -> (std::cmp::Ordering, Why) {
    let rungs = [
        (b.accepted.cmp(&a.accepted), Why::Checks),
        ((!a.verified, a.new_failures).cmp(&(!b.verified, b.new_failures)), Why::NewFailures),
        (a.lines.cmp(&b.lines), Why::Lines),
        (a.cost_usd.total_cmp(&b.cost_usd), Why::Cost),
        (a.number.cmp(&b.number), Why::Earlier),
    ];
    rungs.into_iter().find(|(o, _)| o.is_ne()).unwrap_or((std::cmp::Ordering::Equal, Why::Earlier))
}

/// The winner among `tries`, or `None` when every try was refused or changed nothing.
pub fn choose(tries: &[Candidate]) -> Option<Choice> {
    let mut able: Vec<&Candidate> = tries.iter().filter(|t| !t.refused && !t.empty).collect();
    able.sort_by(|a, b| rank(a, b).0);
    let winner = able.first()?;
    let why = match able.get(1) {
        None => Why::OnlyOne,
        Some(next) => rank(winner, next).1,
    };
    Some(Choice { number: winner.number, why })
}

#[cfg(test)]
#[path = "choose_tests.rs"]
mod tests;
