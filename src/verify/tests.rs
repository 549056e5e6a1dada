//! Tests for running checks, judging them against the baseline, and feedback.

use super::*;

fn check(name: &str, run: &str) -> VerifySpec {
    VerifySpec {
        name: name.into(),
        run: run.into(),
        expect: Expect::Pass,
        junit: None,
        timeout: Duration::from_secs(30),
    }
}

fn env() -> Vec<(String, String)> {
    vec![("PATH".to_string(), std::env::var("PATH").unwrap_or_default())]
}

#[tokio::test]
async fn failing_check_feedback_names_the_command_and_key_lines() {
    let dir = tempfile::tempdir().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let cancel = CancellationToken::new();
    let script = "for i in $(seq 1 100); do echo noise $i; done; echo 'AssertionError: 3 != 4'; for i in $(seq 1 100); do echo more $i; done; exit 1";
    let sb = Sandbox::default();
    let bad = run_check(&check("test", script), 1, dir.path(), &env(), deadline, &cancel, &sb).await;
    let good = run_check(&check("lint", "true"), 1, dir.path(), &env(), deadline, &cancel, &sb).await;
    assert!(!bad.accepted && good.accepted);
    assert_eq!(bad.output_tail.lines().count(), TAIL_LINES);
    let fb = feedback(&[good, bad], 1, 3);
    assert!(fb.contains("## check `test` exited with 1"), "{fb}");
    assert!(fb.contains("AssertionError: 3 != 4"));
    assert!(!fb.contains("`lint`"));
    assert!(!fb.contains("noise 50\n"));
}

#[tokio::test]
async fn the_deadline_cuts_a_check_short() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_check(
        &check("slow", "sleep 60"),
        1,
        dir.path(),
        &env(),
        Instant::now() + Duration::from_millis(300),
        &CancellationToken::new(),
        &Sandbox::default(),
    )
    .await;
    assert!(r.timed_out && !r.accepted);
}

fn result(passed: bool, expect: Expect, failing: Option<&[&str]>) -> CheckResult {
    CheckResult {
        attempt: 1,
        name: "t".into(),
        command: "c".into(),
        expect,
        passed,
        accepted: passed,
        exit_code: Some(if passed { 0 } else { 1 }),
        timed_out: false,
        cancelled: false,
        duration_ms: 0,
        failing_tests: failing.map(|f| f.iter().map(|s| s.to_string()).collect()),
        junit_error: None,
        new_failures: vec![],
        output_tail: String::new(),
        key_lines: vec![],
    }
}

#[test]
fn judging_against_the_baseline() {
    use Expect::*;
    let base = result(false, NoRegression, Some(&["a::old"]));
    // Same failure as before: no regression.
    let mut r = result(false, NoRegression, Some(&["a::old"]));
    judge(&mut r, Some(&base));
    assert!(r.accepted && r.new_failures.is_empty());
    // A new failure is named and refused.
    let mut r = result(false, NoRegression, Some(&["a::old", "b::new"]));
    judge(&mut r, Some(&base));
    assert!(!r.accepted);
    assert_eq!(r.new_failures, ["b::new"]);
    // `pass` refuses any failure, even one that was there before.
    let mut r = result(false, Pass, Some(&["a::old"]));
    judge(&mut r, Some(&base));
    assert!(!r.accepted);
    // Without JUnit detail: no worse than a failing baseline is accepted; a passing baseline is not.
    let mut r = result(false, NoRegression, None);
    judge(&mut r, Some(&result(false, NoRegression, None)));
    assert!(r.accepted);
    let mut r = result(false, NoRegression, None);
    judge(&mut r, Some(&result(true, NoRegression, None)));
    assert!(!r.accepted);
}

#[tokio::test]
async fn junit_files_are_read_and_stale_ones_removed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("junit.xml"),
        "<testsuite><testcase name=\"stale\"><failure/></testcase></testsuite>",
    )
    .unwrap();
    let mut c = check(
        "t",
        "printf '<testsuite><testcase classname=\"m\" name=\"x\"><failure/></testcase></testsuite>' > junit.xml; exit 1",
    );
    c.junit = Some("junit.xml".into());
    let r = run_check(
        &c,
        1,
        dir.path(),
        &env(),
        Instant::now() + Duration::from_secs(30),
        &CancellationToken::new(),
        &Sandbox::default(),
    )
    .await;
    assert_eq!(r.failing_tests.as_deref(), Some(&["m::x".to_string()][..]));
    let mut c = check("t", "true");
    c.junit = Some("junit.xml".into());
    let r = run_check(
        &c,
        1,
        dir.path(),
        &env(),
        Instant::now() + Duration::from_secs(30),
        &CancellationToken::new(),
        &Sandbox::default(),
    )
    .await;
    assert!(r.failing_tests.is_none() && r.output_tail.contains("wrote no JUnit file"), "{}", r.output_tail);
    assert!(r.junit_error.is_some());
    let mut judged = r.clone();
    judge(&mut judged, None);
    assert!(!judged.accepted, "a check whose JUnit file is missing is never accepted, even when it exits 0");
}

#[test]
fn a_check_that_timed_out_or_was_cancelled_proves_nothing_even_against_a_failing_baseline() {
    use Expect::NoRegression;
    // With and without test-case detail, the baseline failed: "no worse" would accept a plain
    // failure. A check that never finished must not be accepted in its place.
    for failing in [None, Some(&["a::old"][..])] {
        let base = result(false, NoRegression, failing);
        let mut control = result(false, NoRegression, failing);
        judge(&mut control, Some(&base));
        assert!(control.accepted, "the control: the same failure as before is no regression");
        for (timed_out, cancelled) in [(true, false), (false, true)] {
            let mut r = CheckResult { timed_out, cancelled, ..result(false, NoRegression, failing) };
            judge(&mut r, Some(&base));
            assert!(!r.accepted, "timed_out={timed_out} cancelled={cancelled} failing={failing:?}");
        }
    }
}

#[test]
fn key_lines_are_the_marked_lines_once_each_and_bounded() {
    let out = "noise 1\nTraceback (most recent call last):\nnoise 2\nE   assert 3 == 4\nFAILED test_x\nFAILED test_x\nplain\n";
    assert_eq!(key_lines(out), ["Traceback (most recent call last):", "E   assert 3 == 4", "FAILED test_x"]);
    assert!(key_lines("all good\nnothing here\n").is_empty());
    let many: String = (0..100).map(|i| format!("error {i}\n")).collect();
    let k = key_lines(&many);
    assert_eq!((k.len(), k[29].as_str()), (30, "error 29"));
    let long = format!("error: {}", "x".repeat(1000));
    assert_eq!(key_lines(&long)[0].chars().count(), 300);
}

#[test]
fn feedback_says_what_failed_from_the_results_not_from_the_command() {
    let mut r = result(false, Expect::NoRegression, Some(&["t::a", "t::new"]));
    (r.command, r.key_lines, r.output_tail) = ("make check".into(), vec!["KEY LINE 42".into()], "TAIL".into());
    r.new_failures = vec!["t::new".into()];
    let fb = feedback(&[r.clone()], 2, 3);
    assert!(fb.contains("fix attempt 2 of 3"), "{fb}");
    assert!(fb.contains("## check `t` exited with 1\n$ make check\n"), "{fb}");
    assert!(fb.contains("Tests that fail now but passed before your change: t::new\n"), "{fb}");
    assert!(
        fb.contains("Lines that look relevant:\nKEY LINE 42\n") && fb.contains("Last lines of output:\nTAIL"),
        "{fb}"
    );
    r.new_failures.clear();
    let fb = feedback(&[r.clone()], 1, 3);
    assert!(fb.contains("Failing tests: t::a, t::new\n") && !fb.contains("passed before"), "{fb}");
    r.timed_out = true;
    assert!(feedback(&[r.clone()], 1, 3).contains("## check `t` timed out"));
    r.output_tail = "y".repeat(20_000);
    let fb = feedback(&[r], 1, 3);
    assert!(fb.ends_with("[... cut; run the failing command with run_cmd to see more ...]"), "cut");
    assert!(fb.chars().count() < FEEDBACK_CHARS + 100);
}
