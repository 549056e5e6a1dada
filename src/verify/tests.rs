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
        command: "c".into(),
        expect,
        passed,
        accepted: passed,
        exit_code: Some(if passed { 0 } else { 1 }),
        duration_ms: 0,
        failing_tests: failing.map(|f| f.iter().map(|s| s.to_string()).collect()),
        ..super::example("t")
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
    // A check that passes is accepted, whatever it expects and whatever the baseline did.
    for expect in [Pass, NoRegression] {
        for baseline in [None, Some(&base), Some(&result(true, expect, None))] {
            let mut r = result(true, expect, None);
            judge(&mut r, baseline);
            assert!(r.accepted, "{expect:?} against {baseline:?}");
        }
    }
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
fn a_missing_or_broken_junit_file_is_named_and_is_a_check_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_junit(&dir.path().join("out/junit.xml"), dir.path()).unwrap_err();
    assert_eq!((e.code(), e.to_string().as_str()), (Code::Check, "the check wrote no JUnit file at out/junit.xml"));
    std::fs::write(dir.path().join("junit.xml"), "<unclosed").unwrap();
    let e = read_junit(&dir.path().join("junit.xml"), dir.path()).unwrap_err();
    assert!(e.to_string().starts_with("the JUnit file junit.xml is not valid XML: "), "{e}");
    assert_eq!(HoneError::from(e).code, Code::Check);
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

#[test]
fn a_check_that_timed_out_or_was_cancelled_is_refused_even_when_the_baseline_failed() {
    use Expect::NoRegression;
    for detail in [None, Some(&["a::old"][..])] {
        let base = result(false, NoRegression, detail);
        // Finished with the baseline's failures: no regression.
        let mut r = result(false, NoRegression, detail);
        judge(&mut r, Some(&base));
        assert!(r.accepted, "{detail:?}");
        // Cut short: it proved nothing, whatever it failed with.
        for (timed_out, cancelled) in [(true, false), (false, true)] {
            let mut r = result(false, NoRegression, detail);
            (r.timed_out, r.cancelled) = (timed_out, cancelled);
            judge(&mut r, Some(&base));
            assert!(!r.accepted, "{detail:?} timed_out={timed_out} cancelled={cancelled}");
        }
    }
    // Without a baseline, a failing no-regression check has nothing to be no worse than.
    let mut r = result(false, NoRegression, None);
    judge(&mut r, None);
    assert!(!r.accepted);
}

/// A failed check named `name`.
fn failed(name: &str, expect: Expect, failing: Option<&[&str]>) -> CheckResult {
    CheckResult { name: name.into(), command: format!("run {name}"), ..result(false, expect, failing) }
}

#[test]
fn feedback_names_the_new_failures_else_the_failing_tests_and_how_each_check_ended() {
    let base = result(false, Expect::NoRegression, Some(&["a::old"]));
    let mut unit = failed("unit", Expect::NoRegression, Some(&["a::old", "b::new"]));
    judge(&mut unit, Some(&base));
    let mut strict = failed("strict", Expect::Pass, Some(&["a::old"]));
    judge(&mut strict, Some(&base));
    let mut slow = failed("slow", Expect::Pass, None);
    (slow.timed_out, slow.exit_code, slow.output_tail) = (true, None, "tick\ntock".into());
    let killed = CheckResult { exit_code: None, ..failed("killed", Expect::Pass, Some(&[])) };
    let fb = feedback(&[unit, strict, slow, killed], 2, 3);
    assert!(fb.contains("(fix attempt 2 of 3)"), "{fb}");
    assert!(
        fb.contains(
            "\n## check `unit` exited with 1\n$ run unit\nTests that fail now but passed before your change: b::new\nLast lines of output:\n\n"
        ),
        "{fb}"
    );
    assert!(fb.contains("\n## check `strict` exited with 1\n$ run strict\nFailing tests: a::old\n"), "{fb}");
    assert!(fb.contains("\n## check `slow` timed out\n$ run slow\nLast lines of output:\ntick\ntock\n"), "{fb}");
    // An empty list of failing tests is not announced.
    assert!(fb.ends_with("\n## check `killed` was killed\n$ run killed\nLast lines of output:\n\n"), "{fb}");
}

#[test]
fn key_lines_are_the_lines_that_look_like_a_cause_once_each_and_capped() {
    let out = "Compiling x\nsrc/a.rs:3: ERROR bad\nok 1\nE   x = 2\nthread 'm' panicked at src/a.rs:9\n\
               src/a.rs:3: ERROR bad\nwarning: unused\nwarnings are fine\nTraceback (most recent call last)\n";
    assert_eq!(
        key_lines(out),
        [
            "src/a.rs:3: ERROR bad",
            "E   x = 2",
            "thread 'm' panicked at src/a.rs:9",
            "warning: unused",
            "Traceback (most recent call last)"
        ]
    );
    let long = format!("error: {}", "é".repeat(400));
    let kept: String = long.chars().take(300).collect();
    assert_eq!(key_lines(&format!("{long}\n{long}\n")), [kept]);
    let many: String = (0..50).map(|i| format!("test {i} FAILED\n")).collect();
    let k = key_lines(&many);
    assert_eq!((k.len(), k[0].as_str(), k[29].as_str()), (30, "test 0 FAILED", "test 29 FAILED"));
    // The key lines reach the model.
    let r = CheckResult { key_lines: key_lines(out), ..failed("t", Expect::Pass, None) };
    assert!(feedback(&[r], 1, 3).contains("Lines that look relevant:\nsrc/a.rs:3: ERROR bad\nE   x = 2\n"));
}

#[test]
fn feedback_longer_than_its_cap_is_cut_and_says_so() {
    const CUT: &str = "\n[... cut; run the failing command with run_cmd to see more ...]";
    let r = failed("t", Expect::Pass, None);
    let head = feedback(std::slice::from_ref(&r), 1, 3).chars().count();
    // Exactly at the cap (counted in characters, not bytes): whole.
    let fits = CheckResult { output_tail: "é".repeat(FEEDBACK_CHARS - head), ..r.clone() };
    let fb = feedback(&[fits], 1, 3);
    assert_eq!(fb.chars().count(), FEEDBACK_CHARS);
    assert!(!fb.contains(CUT));
    let over = CheckResult { output_tail: "é".repeat(FEEDBACK_CHARS), ..r };
    let fb = feedback(&[over], 1, 3);
    assert!(fb.ends_with(CUT), "{fb}");
    assert_eq!(fb.chars().count(), FEEDBACK_CHARS + CUT.chars().count());
}

#[test]
fn the_failure_summary_says_how_each_refused_check_failed() {
    use Expect::Pass;
    let ok = CheckResult { accepted: true, ..result(true, Pass, None) };
    assert_eq!(failure_summary(&[]), "no check failed");
    assert_eq!(failure_summary(std::slice::from_ref(&ok)), "no check failed");
    let junit = CheckResult { junit_error: Some("no JUnit file".into()), timed_out: true, ..failed("a", Pass, None) };
    let slow = CheckResult { timed_out: true, new_failures: vec!["x::0".into()], ..failed("b", Pass, None) };
    let new = CheckResult { new_failures: vec!["x::1".into(), "x::2".into()], ..failed("c", Pass, None) };
    let killed = CheckResult { exit_code: None, ..failed("e", Pass, None) };
    assert_eq!(
        failure_summary(&[ok, junit, slow, new, failed("d", Pass, None), killed]),
        "`a` (no JUnit file), `b` (timed out), `c` (new failures: x::1, x::2), `d` (exit 1), `e` (killed)"
    );
}

#[test]
fn a_baseline_check_that_cannot_run_is_named_with_the_reason() {
    use crate::error::Code;
    let ran = failed("lint", Expect::Pass, None);
    assert_eq!(unrunnable(std::slice::from_ref(&ran)), None, "a check that ran and failed can run");
    let with = |exit: i32, tail: &str| CheckResult {
        exit_code: Some(exit),
        output_tail: tail.into(),
        ..failed("test", Expect::Pass, None)
    };
    let (code, msg) = unrunnable(&[ran.clone(), with(127, "sh: 1: pytset: not found")]).unwrap();
    assert_eq!(code, Code::Check);
    assert_eq!(
        msg,
        "the check `test` cannot run: `run test` exited with 127 (a command in it was not found)\n\
         Last lines of its output:\nsh: 1: pytset: not found\n  = help: fix the command in the spec's `verify`, \
         or install what it needs before hone runs (for example in an earlier workflow step)"
    );
    let (_, msg) = unrunnable(&[with(126, "")]).unwrap();
    assert!(msg.contains("`run test` exited with 126 (a command in it is not executable)"), "{msg}");
    let no_module = CheckResult { command: "python3 -m pytest -q".into(), ..with(1, "No module named pytest") };
    let (_, msg) = unrunnable(&[no_module]).unwrap();
    assert!(msg.contains("`python3 -m pytest -q` needs the Python module `pytest`, which is not installed"), "{msg}");
    // A missing JUnit file: the help is about the `junit:` path, unless the command itself is missing.
    let junit = |exit| CheckResult { junit_error: Some("no JUnit file at r.xml".into()), ..with(exit, "") };
    let (_, msg) = unrunnable(&[ran.clone(), junit(1)]).unwrap();
    assert!(msg.contains("cannot run: `run test`: no JUnit file at r.xml\n"), "{msg}");
    assert!(msg.contains("= help: fix the command or the `junit:` path"), "{msg}");
    let (_, msg) = unrunnable(&[junit(127)]).unwrap();
    assert!(msg.contains("exited with 127") && msg.contains("= help: fix the command in the spec's"), "{msg}");
    // hone's own jail failing is hone's problem, not the check's.
    let jailed = with(1, "before\nhone: jail: cannot unshare: EPERM\nafter");
    let (code, msg) = unrunnable(&[with(127, ""), jailed]).unwrap();
    assert_eq!(code, Code::Policy);
    assert!(msg.starts_with("hone's jail could not start the checks: cannot unshare: EPERM\n  = help: "), "{msg}");
}

#[test]
fn a_missing_python_module_is_read_from_the_output() {
    let m = |cmd: &str, out: &str| missing_python_module(cmd, out);
    assert_eq!(m("python -m pytest -q", "x\nNo module named pytest\n").as_deref(), Some("pytest"));
    assert_eq!(m("/usr/bin/python3.12 -m pkg.sub", "No module named 'pkg'").as_deref(), Some("pkg.sub"));
    assert_eq!(m("uv run python3 -m mypy src", "No module named mypy.main").as_deref(), Some("mypy"));
    assert_eq!(m("python -m pytest", "1 failed"), None);
    assert_eq!(m("python -m pytest", "No module named 'yaml'"), None, "another module is the test's problem");
    assert_eq!(m("node -m pytest", "No module named pytest"), None);
    assert_eq!(m("-m pytest", "No module named pytest"), None);
    assert_eq!(m("python -m", "No module named pytest"), None);
    assert_eq!(m("pytest -q", "No module named pytest"), None);
}

#[test]
fn tail_lines_keeps_the_last_lines() {
    assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
    assert_eq!(tail_lines("a\nb", 5), "a\nb");
    assert_eq!(tail_lines("", 3), "");
}

#[tokio::test]
async fn a_check_keeps_at_most_64_kib_of_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let c = check("loud", "head -c 200000 /dev/zero | tr '\\0' x; exit 1");
    let deadline = Instant::now() + Duration::from_secs(30);
    let r = run_check(&c, 1, dir.path(), &env(), deadline, &CancellationToken::new(), &Sandbox::default()).await;
    let kept = r.output_tail.matches('x').count();
    assert!(kept <= 64 * 1024 && kept > 63 * 1024, "kept {kept} of 200000 bytes");
}
