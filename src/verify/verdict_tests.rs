//! Tests for a check's verdict: every kind, the precedence, the words, and that it accepts what
//! the verify module accepts.

use super::*;
use crate::spec::Expect;
use proptest::prelude::*;

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

type Example<'a> = (&'a str, Facts<'a>, Verdict<'a>, &'a str);

const REPORT: &str = "the check wrote no JUnit file at out/junit.xml";

fn exit(c: i32) -> Facts<'static> {
    Facts { exit_code: Some(c), ..Facts::default() }
}

/// Each example's facts give its verdict and its words, and the verdict accepts what it names.
fn holds(examples: Vec<Example<'_>>) {
    for (what, facts, want, words) in examples {
        let v = Verdict::of(facts);
        assert_eq!(v, want, "{what}");
        assert_eq!(v.to_string(), words, "{what}");
        assert_eq!(v.accepted(), matches!(want, Verdict::Pass | Verdict::FailsAsBefore { .. }), "{what}");
    }
}

/// Every kind of verdict: the facts, the verdict, its words.
#[test]
fn each_result_has_one_verdict_and_one_wording() {
    let (new, report) = (strings(&["t::a", "t::b"]), REPORT);
    let f = Facts::default();
    holds(vec![
        ("pass", Facts { passed: true, accepted: true, ..exit(0) }, Verdict::Pass, "pass"),
        (
            "fails as before",
            Facts { accepted: true, ..exit(1) },
            Verdict::FailsAsBefore { exit: Some(1) },
            "fails as before (exit 1; no new failures)",
        ),
        (
            "new failures",
            Facts { new_failures: &new, ..exit(1) },
            Verdict::NewFailures { exit: Some(1), tests: &new },
            "fails (exit 1; new failures: t::a, t::b)",
        ),
        ("fails", exit(2), Verdict::Fails { exit: Some(2) }, "fails (exit 2)"),
        ("a signal", f, Verdict::Fails { exit: None }, "fails (killed by a signal)"),
        ("timed out", Facts { timed_out: true, ..f }, Verdict::TimedOut, "timed out"),
        ("cancelled", Facts { cancelled: true, ..f }, Verdict::Cancelled, "cancelled"),
        (
            "no report, exit 0",
            Facts { passed: true, junit_error: Some(report), ..exit(0) },
            Verdict::NoReport { exit: Some(0), error: report },
            "no test report (exit 0): the check wrote no JUnit file at out/junit.xml",
        ),
        (
            "no report, failing",
            Facts { junit_error: Some(report), ..exit(1) },
            Verdict::NoReport { exit: Some(1), error: report },
            "no test report (exit 1): the check wrote no JUnit file at out/junit.xml",
        ),
    ]);
}

/// Where more than one verdict would fit, the one precedence decides. Some facts never come
/// together from `run_check` and `judge` (marked); the verdict is still decided.
#[test]
fn where_more_than_one_verdict_fits_the_precedence_decides() {
    let (new, report) = (strings(&["t::a", "t::b"]), REPORT);
    let f = Facts::default();
    holds(vec![
        // Stopped first, whatever else the result says.
        (
            "cancelled and timed out (never both)",
            Facts { cancelled: true, timed_out: true, ..f },
            Verdict::Cancelled,
            "cancelled",
        ),
        (
            "timed out and accepted (never both)",
            Facts { timed_out: true, accepted: true, ..f },
            Verdict::TimedOut,
            "timed out",
        ),
        (
            "timed out with new failures",
            Facts { timed_out: true, new_failures: &new, ..f },
            Verdict::TimedOut,
            "timed out",
        ),
        (
            "timed out without a report",
            Facts { timed_out: true, junit_error: Some(report), ..f },
            Verdict::TimedOut,
            "timed out",
        ),
        // Then a missing report, even when accepted (never both: judge refuses it).
        (
            "no report but accepted (never both)",
            Facts { passed: true, accepted: true, junit_error: Some(report), ..exit(0) },
            Verdict::NoReport { exit: Some(0), error: report },
            "no test report (exit 0): the check wrote no JUnit file at out/junit.xml",
        ),
        // Acceptance is the verify module's: exit 0 passes even with failures in its report.
        (
            "exit 0 listing new failures",
            Facts { passed: true, accepted: true, new_failures: &new, ..exit(0) },
            Verdict::Pass,
            "pass",
        ),
        (
            "accepted with new failures (never both)",
            Facts { accepted: true, new_failures: &new, ..exit(1) },
            Verdict::FailsAsBefore { exit: Some(1) },
            "fails as before (exit 1; no new failures)",
        ),
        (
            "exit 0 not accepted (never both)",
            Facts { passed: true, ..exit(0) },
            Verdict::Fails { exit: Some(0) },
            "fails (exit 0)",
        ),
    ]);
}

#[test]
fn a_renderer_writes_the_names_and_the_reason_its_own_way_and_nothing_else() {
    let style = Style { name: |s| format!("<{s}>"), text: |s| format!("[{s}]") };
    let new = strings(&["t::a", "t::b"]);
    let v = Verdict::NewFailures { exit: None, tests: &new };
    assert_eq!(v.describe(style), "fails (killed by a signal; new failures: <t::a>, <t::b>)");
    let v = Verdict::NoReport { exit: Some(3), error: "the JUnit file j.xml is empty" };
    assert_eq!(v.describe(style), "no test report (exit 3): [the JUnit file j.xml is empty]");
    assert_eq!(Verdict::Fails { exit: Some(1) }.describe(style), "fails (exit 1)");
}

#[test]
fn the_event_carries_what_the_verdict_needs() {
    let mut r = result(Ending::Exit(1), Some(&["t::a"]), Expect::Pass);
    (r.new_failures, r.junit_error) = (strings(&["t::a"]), None);
    for (cancelled, junit_error) in [(false, None), (true, None), (false, Some("no JUnit file".to_string()))] {
        (r.cancelled, r.junit_error) = (cancelled, junit_error);
        let Event::VerifyCompleted {
            passed, accepted, timed_out, cancelled, exit_code, new_failures, junit_error, ..
        } = r.event()
        else {
            panic!("not a verify_completed event")
        };
        let facts = Facts {
            passed,
            accepted,
            timed_out,
            cancelled,
            exit_code,
            new_failures: &new_failures,
            junit_error: junit_error.as_deref(),
        };
        assert_eq!(Verdict::of(facts), r.verdict());
    }
}

/// How a command ended, as `exec` reports it: an exit code, or none when it was stopped.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Exit(i32),
    Signal,
    TimedOut,
    Cancelled,
}

/// A result as `run_check` makes it.
fn result(ending: Ending, failing: Option<&[&str]>, expect: Expect) -> CheckResult {
    let exit_code = match ending {
        Ending::Exit(c) => Some(c),
        _ => None,
    };
    let passed = exit_code == Some(0);
    CheckResult {
        expect,
        passed,
        accepted: passed,
        exit_code,
        timed_out: matches!(ending, Ending::TimedOut),
        cancelled: matches!(ending, Ending::Cancelled),
        failing_tests: failing.map(strings),
        ..crate::verify::example("t")
    }
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![(0..3i32).prop_map(Ending::Exit), Just(Ending::Signal), Just(Ending::TimedOut), Just(Ending::Cancelled)]
}

fn failing() -> impl Strategy<Value = Option<Vec<&'static str>>> {
    proptest::option::of(proptest::sample::subsequence(vec!["t::a", "t::b", "t::c"], 0..=3))
}

proptest! {
    #![proptest_config(crate::testutil::proptest_config(512))]

    /// Whatever a check and its baseline came to, the verdict accepts exactly what the verify
    /// module accepts, and never a check that was stopped or has no report.
    #[test]
    fn the_verdict_accepts_what_judge_accepts(
        now in (ending(), failing(), any::<bool>()),
        before in proptest::option::of((ending(), failing())),
        no_regression in any::<bool>(),
    ) {
        let expect = if no_regression { Expect::NoRegression } else { Expect::Pass };
        let base = before.map(|(e, f)| result(e, f.as_deref(), expect));
        let mut r = result(now.0, now.1.as_deref(), expect);
        if now.2 {
            r.junit_error = Some("the check wrote no JUnit file at j.xml".into());
        }
        super::super::judge(&mut r, base.as_ref());
        let v = r.verdict();
        prop_assert_eq!(v.accepted(), r.accepted, "{:?}", v);
        if r.timed_out || r.cancelled || r.junit_error.is_some() {
            prop_assert!(!v.accepted());
        }
        if let Verdict::FailsAsBefore { .. } = v {
            prop_assert!(r.new_failures.is_empty());
        }
    }
}
