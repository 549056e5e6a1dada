//! What a candidate's test runs make of it (mining's second stage, pure): its tests were run
//! twice without its source change (its test change applied) and twice with it. A task is the
//! tests that fail without the fix and pass with it (`FAIL_TO_PASS`, never empty) and those that
//! pass both ways (`PASS_TO_PASS`); a candidate whose tests never fail first, whose fix does not
//! make them pass, or whose results differ between two runs of the same tree is dropped, with
//! the tests that say so. The same judgement grades an agent's try: `resolved`.

use crate::verify::junit_in::Outcomes;
use std::collections::BTreeSet;

/// Two runs of the tests without the candidate's source change, and two with it.
#[derive(Debug, Clone)]
pub struct Runs {
    pub without: [Outcomes; 2],
    pub with: [Outcomes; 2],
}

/// What grades a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graded {
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
}

/// Why a candidate is not a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// The runs reported no test case at all (no JUnit report, or an empty one).
    NoTests,
    /// These tests gave different results in two runs of the same tree.
    Flaky(Vec<String>),
    /// No test fails without the fix: nothing tells a fix from no fix.
    NeverFailsFirst,
    /// Tests fail without the fix, but the fix does not make any of them pass.
    FixDoesNotPass(Vec<String>),
}

impl Dropped {
    /// The reason in words, for the mining report.
    pub fn words(&self) -> String {
        let some = |ids: &[String]| ids.iter().take(5).map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ");
        match self {
            Dropped::NoTests => "its tests reported no test case".into(),
            Dropped::Flaky(ids) => format!("flaky: {} gave different results in two runs", some(ids)),
            Dropped::NeverFailsFirst => "no test fails without its source change".into(),
            Dropped::FixDoesNotPass(ids) => format!("its source change does not make {} pass", some(ids)),
        }
    }
}

/// The tests whose results differ between two runs.
fn differing(a: &Outcomes, b: &Outcomes) -> BTreeSet<String> {
    let mut d: BTreeSet<String> = a.passed.symmetric_difference(&b.passed).cloned().collect();
    d.extend(a.failed.symmetric_difference(&b.failed).cloned());
    d
}

/// The candidate's runs judged: a task's grading, or why it is dropped.
pub fn judge(r: &Runs) -> Result<Graded, Dropped> {
    let all = r.without.iter().chain(&r.with);
    if all.clone().all(|o| o.passed.is_empty() && o.failed.is_empty()) {
        return Err(Dropped::NoTests);
    }
    let mut flaky = differing(&r.without[0], &r.without[1]);
    flaky.extend(differing(&r.with[0], &r.with[1]));
    if !flaky.is_empty() {
        return Err(Dropped::Flaky(flaky.into_iter().collect()));
    }
    let (without, with) = (&r.without[0], &r.with[0]);
    if without.failed.is_empty() {
        return Err(Dropped::NeverFailsFirst);
    }
    let fail_to_pass: Vec<String> = without.failed.intersection(&with.passed).cloned().collect();
    if fail_to_pass.is_empty() {
        return Err(Dropped::FixDoesNotPass(without.failed.iter().cloned().collect()));
    }
    let pass_to_pass = without.passed.intersection(&with.passed).cloned().collect();
    Ok(Graded { fail_to_pass, pass_to_pass })
}

/// Whether a try resolved a task: every `FAIL_TO_PASS` test passes now, and every
/// `PASS_TO_PASS` test still does (a test missing from the report counts as not passing).
pub fn resolved(g: &Graded, after: &Outcomes) -> bool {
    g.fail_to_pass.iter().chain(&g.pass_to_pass).all(|t| after.passed.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(passed: &[&str], failed: &[&str]) -> Outcomes {
        Outcomes {
            passed: passed.iter().map(|s| s.to_string()).collect(),
            failed: failed.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn runs(without: Outcomes, with: Outcomes) -> Runs {
        Runs { without: [without.clone(), without], with: [with.clone(), with] }
    }

    #[test]
    fn a_fix_with_its_tests_is_a_task_and_the_others_are_dropped_saying_why() {
        let fix = runs(o(&["t_mul"], &["t_add"]), o(&["t_mul", "t_add"], &[]));
        assert_eq!(judge(&fix), Ok(Graded { fail_to_pass: vec!["t_add".into()], pass_to_pass: vec!["t_mul".into()] }));
        assert_eq!(judge(&runs(o(&["t_add"], &[]), o(&["t_add"], &[]))), Err(Dropped::NeverFailsFirst));
        assert_eq!(
            judge(&runs(o(&[], &["t_add"]), o(&[], &["t_add"]))),
            Err(Dropped::FixDoesNotPass(vec!["t_add".into()]))
        );
        assert_eq!(judge(&runs(o(&[], &[]), o(&[], &[]))), Err(Dropped::NoTests));
        let flaky = Runs { without: [o(&[], &["t_x"]), o(&["t_x"], &[])], with: [o(&["t_x"], &[]), o(&["t_x"], &[])] };
        assert_eq!(judge(&flaky), Err(Dropped::Flaky(vec!["t_x".into()])));
    }

    #[test]
    fn a_try_resolves_a_task_only_when_every_graded_test_passes() {
        let g = Graded { fail_to_pass: vec!["t_add".into()], pass_to_pass: vec!["t_mul".into()] };
        assert!(resolved(&g, &o(&["t_add", "t_mul", "t_other"], &[])));
        assert!(!resolved(&g, &o(&["t_add"], &["t_mul"])), "a test that passed before broke");
        assert!(!resolved(&g, &o(&["t_mul"], &[])), "a graded test is missing from the report");
    }
}
