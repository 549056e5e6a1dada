//! A job's tries (`attempts:`) as the summary, the PR body and JUnit show them: a table of the
//! tries (model, outcome, checks, new failures, size, tokens, cost, time) with why the winner
//! won; and a JUnit testsuite with a case per try and per try's check.

use crate::markdown as md;
use crate::record::RunRecord;
use crate::record::tries::{TryOutcome, TryRecord};
use junit_report::{TestCase, TestCaseBuilder, TestSuite, TestSuiteBuilder};
use std::fmt::Write as _;

fn outcome(t: &TryRecord) -> String {
    let how = t.status.map(|s| s.as_str()).unwrap_or("never started");
    match t.outcome {
        TryOutcome::Chosen => format!("🏆 chosen ({how})"),
        TryOutcome::NotChosen => format!("not chosen ({how})"),
        TryOutcome::Refused => "🚫 refused by a guard".into(),
        TryOutcome::Stopped => "⏹️ stopped: another try passed".into(),
        TryOutcome::NotStarted => "not started".into(),
    }
}

fn checks(t: &TryRecord) -> String {
    if t.checks.is_empty() {
        return "—".into();
    }
    t.checks
        .iter()
        .map(|c| format!("{} {}", md::code_cell(&c.name), super::summary::cell(c)))
        .collect::<Vec<_>>()
        .join("<br>")
}

/// The tries table under `heading` (none for a job of one try).
pub fn table(r: &RunRecord, heading: &str) -> Option<String> {
    if r.tries.is_empty() {
        return None;
    }
    let mut s = format!("\n{heading} Tries\n\n");
    match r.chosen {
        Some(c) => {
            let _ = writeln!(s, "Try {} was chosen: {}.\n", c.number, c.why.words());
        }
        None => s.push_str("No try's change could land.\n\n"),
    }
    s.push_str("| Try | Model | Outcome | Checks | New failures | Lines | Tokens | Cost | Time |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for t in &r.tries {
        let cost = t.cost_usd.map_or("—".into(), crate::spec::pricing::dollars);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} ({} file(s)) | {} | {cost} | {:.1}s |",
            t.number,
            md::code_cell(&format!("{}/{}", t.provider, t.model)),
            outcome(t),
            checks(t),
            t.new_failures,
            t.lines_changed,
            t.files_changed,
            t.usage.total_tokens,
            t.duration_ms as f64 / 1000.0
        );
    }
    for t in r.tries.iter().filter(|t| t.outcome != TryOutcome::Chosen) {
        if let Some(e) = t.errors.first() {
            let _ = writeln!(s, "\nTry {}: {}", t.number, md::inline(&e.message));
        }
    }
    Some(s)
}

/// The tries as a testsuite `hone.<job>.tries`: a case per try (a failure when its checks were
/// not all met, skipped when it never started) and a `try-<k>.<check>` case per check.
pub fn suite(r: &RunRecord) -> Option<TestSuite> {
    if r.tries.is_empty() {
        return None;
    }
    let mut cases: Vec<TestCase> = Vec::new();
    for t in &r.tries {
        let name = format!("try-{}", t.number);
        let time = time::Duration::milliseconds(t.duration_ms as i64);
        let mut b = match t.outcome {
            TryOutcome::NotStarted => TestCaseBuilder::skipped_with_cause(
                &name,
                "not_started",
                &t.errors.first().map(|e| e.message.clone()).unwrap_or_default(),
            ),
            _ if t.accepted && t.outcome != TryOutcome::Refused => TestCaseBuilder::success(&name, time),
            _ => TestCaseBuilder::failure(&name, time, "try", &outcome(t)),
        };
        b.set_classname(&format!("hone.{}.tries", r.job)).set_system_out(&format!(
            "model: {}/{}\noutcome: {}\nnew failures: {}\nlines changed: {}\ntokens: {}",
            t.provider,
            t.model,
            outcome(t),
            t.new_failures,
            t.lines_changed,
            t.usage.total_tokens
        ));
        cases.push(b.build());
        for c in &t.checks {
            let case = format!("try-{}.{}", t.number, c.name);
            let time = time::Duration::milliseconds(c.duration_ms as i64);
            let mut b = if c.accepted {
                TestCaseBuilder::success(&case, time)
            } else {
                TestCaseBuilder::failure(&case, time, "verify", &format!("`{}`: {}", c.command, c.verdict()))
            };
            b.set_classname(&format!("hone.{}.tries", r.job)).set_system_out(&c.output_tail);
            cases.push(b.build());
        }
    }
    let mut s = TestSuiteBuilder::new(&format!("hone.{}.tries", r.job));
    s.add_testcases(cases);
    Some(s.build())
}
