//! A check's verdict: what one run of a check came to, decided by one function from its result and
//! worded by one function, so that the summary, the commit text, `junit.xml` and the progress line
//! all say the same thing. Each of them chooses only its presentation (an icon, a JUnit element,
//! markdown for the names a check reported).

use super::CheckResult;
use crate::protocol::Event;
use std::fmt;

/// The fields of a check's result that its verdict is decided from: a [`CheckResult`]'s, or
/// those of the `verify_completed` event that reports it (which carries the same ones).
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    /// The command succeeded: exit 0, neither timed out nor cancelled.
    pub passed: bool,
    /// The verify module's judgement: the check meets its `expect` against the baseline.
    pub accepted: bool,
    pub timed_out: bool,
    pub cancelled: bool,
    /// `None` when the command did not exit by itself (killed by a signal).
    pub exit_code: Option<i32>,
    /// Tests that fail now but passed at the baseline.
    pub new_failures: &'a [String],
    /// Why the check's `junit:` file could not be read.
    pub junit_error: Option<&'a str>,
}

/// What one run of a check came to.
///
/// The one precedence, first match wins:
/// 1. [`Cancelled`](Verdict::Cancelled), then 2. [`TimedOut`](Verdict::TimedOut): a check that was
///    stopped proved nothing about the code, whatever else its result says. Its missing exit
///    code, a test report it never wrote and the failures it had reached are consequences of
///    being stopped, not the cause. (The two never come together: a command is stopped once.)
/// 3. [`NoReport`](Verdict::NoReport): the command ran to its end but its `junit:` file could not
///    be read. Such a check is never accepted, even with exit 0, and without the report no test
///    can be named, so this is said before anything the exit code would say.
/// 4. [`Pass`](Verdict::Pass) and 5. [`FailsAsBefore`](Verdict::FailsAsBefore): the check is
///    accepted (`accepted` is the verify module's judgement, taken as it is), with the command
///    succeeding or failing as it did at the baseline. Failures a command that exits 0 lists in
///    its report do not make it fail: the verify module accepts it.
/// 6. [`NewFailures`](Verdict::NewFailures), then 7. [`Fails`](Verdict::Fails): not accepted, with
///    the tests that broke when the report names some, else the exit code.
///
/// So [`Verdict::accepted`] is `accepted` for every result the verify module judges: it never
/// accepts a check that was stopped or has no report, and a failing check it accepts has no new
/// failures (the tests below check both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict<'a> {
    Cancelled,
    TimedOut,
    NoReport { exit: Option<i32>, error: &'a str },
    Pass,
    FailsAsBefore { exit: Option<i32> },
    NewFailures { exit: Option<i32>, tests: &'a [String] },
    Fails { exit: Option<i32> },
}

/// How a renderer writes what a check reported inside the verdict's words: test names, and why
/// its report could not be read. Plain text as it is; markdown escapes them (`crate::markdown`).
#[derive(Clone, Copy)]
pub struct Style {
    pub name: fn(&str) -> String,
    pub text: fn(&str) -> String,
}

impl Style {
    pub const PLAIN: Style = Style { name: str::to_owned, text: str::to_owned };
}

impl<'a> Verdict<'a> {
    /// The one decision (see the precedence on [`Verdict`]).
    pub fn of(f: Facts<'a>) -> Self {
        let exit = f.exit_code;
        match f {
            Facts { cancelled: true, .. } => Verdict::Cancelled,
            Facts { timed_out: true, .. } => Verdict::TimedOut,
            Facts { junit_error: Some(error), .. } => Verdict::NoReport { exit, error },
            Facts { accepted: true, passed: true, .. } => Verdict::Pass,
            Facts { accepted: true, .. } => Verdict::FailsAsBefore { exit },
            Facts { new_failures: [_, ..], .. } => Verdict::NewFailures { exit, tests: f.new_failures },
            _ => Verdict::Fails { exit },
        }
    }

    /// The check meets its expectation.
    pub fn accepted(&self) -> bool {
        matches!(self, Verdict::Pass | Verdict::FailsAsBefore { .. })
    }

    /// The words, with the check's own names and text written as `style` says.
    pub fn describe(&self, style: Style) -> String {
        match self {
            Verdict::Cancelled => "cancelled".into(),
            Verdict::TimedOut => "timed out".into(),
            Verdict::NoReport { exit, error } => {
                format!("no test report ({}): {}", exit_words(*exit), (style.text)(error))
            }
            Verdict::Pass => "pass".into(),
            Verdict::FailsAsBefore { exit } => format!("fails as before ({}; no new failures)", exit_words(*exit)),
            Verdict::NewFailures { exit, tests } => {
                let names: Vec<String> = tests.iter().map(|t| (style.name)(t)).collect();
                format!("fails ({}; new failures: {})", exit_words(*exit), names.join(", "))
            }
            Verdict::Fails { exit } => format!("fails ({})", exit_words(*exit)),
        }
    }
}

fn exit_words(exit: Option<i32>) -> String {
    exit.map_or("killed by a signal".into(), |c| format!("exit {c}"))
}

/// The words in plain text.
impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(Style::PLAIN))
    }
}

impl CheckResult {
    pub fn facts(&self) -> Facts<'_> {
        Facts {
            passed: self.passed,
            accepted: self.accepted,
            timed_out: self.timed_out,
            cancelled: self.cancelled,
            exit_code: self.exit_code,
            new_failures: &self.new_failures,
            junit_error: self.junit_error.as_deref(),
        }
    }

    pub fn verdict(&self) -> Verdict<'_> {
        Verdict::of(self.facts())
    }

    /// The `verify_completed` event that reports this result (with what its verdict needs).
    pub fn event(&self) -> Event {
        Event::VerifyCompleted {
            attempt: self.attempt,
            check: self.name.clone(),
            passed: self.passed,
            accepted: self.accepted,
            new_failures: self.new_failures.clone(),
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            cancelled: self.cancelled,
            junit_error: self.junit_error.clone(),
            duration_ms: self.duration_ms,
        }
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
