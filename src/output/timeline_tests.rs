//! The timeline: every state, turn and check on the run's clock; long runs in few rows.

use super::*;
use crate::protocol::State::*;

fn span(state: State, entered_ms: u64, duration_ms: u64) -> StateSpan {
    StateSpan { state, entered_ms, duration_ms, reason: String::new() }
}

fn check(name: &str, attempt: u32, started: u64, ok: bool) -> CheckResult {
    CheckResult {
        attempt,
        started_ms: Some(started),
        duration_ms: 100,
        passed: ok,
        accepted: ok,
        ..crate::verify::example(name)
    }
}

/// A run: setup, a failing baseline, two turns, a failed round, a turn, a passing round.
fn record() -> RunRecord {
    let mut r = RunRecord::new("j", "run", String::new());
    r.started_at = "2026-01-01T00:00:00Z".into();
    r.duration_ms = 3000;
    r.states = vec![
        span(Intake, 0, 100),
        span(ContextBuilding, 100, 400),
        span(Executing, 500, 1000),
        span(Verifying, 1500, 200),
        span(Recovering, 1700, 10),
        span(Executing, 1710, 790),
        span(Verifying, 2500, 200),
        span(Summarizing, 2700, 300),
        span(Done, 3000, 0),
    ];
    r.turn_started_ms = vec![500, 900, 1710];
    r.setup = vec![check("deps", 0, 120, true)];
    r.baseline = vec![check("tests", 0, 300, false)];
    r.verify = vec![check("tests", 1, 1550, false), check("tests", 2, 2550, true)];
    r
}

const T0: i64 = 1_767_225_600_000;

#[test]
fn states_turns_and_checks_are_on_the_runs_clock() {
    let md = render(&record()).unwrap();
    let at = |ms: i64| T0 + ms;
    let rows = [
        "    section States".to_string(),
        format!("    INTAKE :t1, {}, {}", at(0), at(100)),
        format!("    CONTEXT_BUILDING :t2, {}, {}", at(100), at(500)),
        format!("    EXECUTING :t3, {}, {}", at(500), at(1500)),
        format!("    VERIFYING :t4, {}, {}", at(1500), at(1700)),
        format!("    RECOVERING :crit, t5, {}, {}", at(1700), at(1710)),
        format!("    EXECUTING :t6, {}, {}", at(1710), at(2500)),
        format!("    VERIFYING :t7, {}, {}", at(2500), at(2700)),
        format!("    SUMMARIZING :t8, {}, {}", at(2700), at(3000)),
        format!("    DONE :milestone, t9, {}, {}", at(3000), at(3000)),
        "    section Turns".to_string(),
        format!("    turn 1 :t10, {}, {}", at(500), at(900)),
        format!("    turn 2 :t11, {}, {}", at(900), at(1500)),
        format!("    turn 3 :t12, {}, {}", at(1710), at(2500)),
        "    section Checks".to_string(),
        format!("    setup deps :t13, {}, {}", at(120), at(220)),
        format!("    baseline tests :crit, t14, {}, {}", at(300), at(400)),
        format!("    round 1 tests :crit, t15, {}, {}", at(1550), at(1650)),
        format!("    round 2 tests :t16, {}, {}", at(2550), at(2650)),
    ];
    let expected = format!(
        "```mermaid\ngantt\n    title Timeline\n    dateFormat x\n    axisFormat %H:%M:%S\n{}\n```\n\n",
        rows.join("\n")
    );
    assert_eq!(md, expected);
}

#[test]
fn a_long_run_keeps_few_rows() {
    let mut r = record();
    r.turn_started_ms = (0..200).map(|i| 500 + i * 5).collect();
    r.verify = (1..=12u32)
        .flat_map(|a| ["lint", "tests", "build"].map(|n| check(n, a, 1500 + u64::from(a), a == 12)))
        .collect();
    let md = render(&r).unwrap();
    let turns: Vec<&str> = md.lines().filter(|l| l.starts_with("    turn")).collect();
    assert_eq!(turns.len(), 29, "{md}");
    assert!(turns[0].starts_with("    turns 1-7 :"), "{}", turns[0]);
    assert!(turns[28].starts_with("    turns 197-200 :"), "{}", turns[28]);
    let rounds: Vec<&str> = md.lines().filter(|l| l.starts_with("    round")).collect();
    assert_eq!(rounds.len(), 12, "{md}");
    assert!(rounds[0].starts_with("    round 1 (3 checks) :crit,"), "{}", rounds[0]);
    assert!(rounds[11].starts_with("    round 12 (3 checks) :t"), "{}", rounds[11]);
    assert!(md.contains("    setup (1 checks) :") && md.contains("    baseline (1 checks) :crit,"), "{md}");
}

#[test]
fn hostile_check_names_stay_inside_their_row() {
    let mut r = record();
    r.baseline = vec![check("excludes\n```\n<img>", 0, 300, true)];
    let md = render(&r).unwrap();
    assert!(md.contains("\n    baseline excludes ___ _img_ :t14, "), "{md}");
    assert_eq!(md.matches("```").count(), 2, "{md}");
}

#[test]
fn a_run_without_timings_has_no_timeline() {
    let r = RunRecord::new("j", "run", String::new());
    assert_eq!(render(&r), None);
    // Checks from a record without start times (an older report) are left out, not misplaced.
    let mut r = record();
    r.verify.iter_mut().for_each(|c| c.started_ms = None);
    assert!(!render(&r).unwrap().contains("round"));
}
