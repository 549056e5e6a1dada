//! What `hone eval run` leaves in its out dir: `eval.json` (every task with every job),
//! `eval-junit.xml` (a suite per job, a case per task: passed when resolved, failed when not, an
//! error when it could not be run or graded), `eval.md` (per job: resolved, rate, errors, tokens,
//! cost, time; charts of the resolve rate, of the cost, and of the one against the other), and
//! the journal `eval.state.jsonl` that `--resume` reads (a line per finished task and job, keyed
//! by the job spec's digest).

use super::running::{Outcome, Verdict};
use crate::markdown as md;
use std::fmt::Write as _;
use std::path::Path;

/// One job's totals.
struct Totals<'a> {
    config: &'a str,
    tasks: usize,
    resolved: usize,
    errors: usize,
    tokens: u64,
    cost: Option<f64>,
    ms: u64,
}

fn totals<'a>(config: &'a str, all: &[Outcome]) -> Totals<'a> {
    let mine: Vec<&Outcome> = all.iter().filter(|o| o.config == config).collect();
    let costs: Vec<f64> = mine.iter().filter_map(|o| o.cost_usd).collect();
    Totals {
        config,
        tasks: mine.len(),
        resolved: mine.iter().filter(|o| o.verdict == Verdict::Resolved).count(),
        errors: mine.iter().filter(|o| o.verdict == Verdict::Error).count(),
        tokens: mine.iter().map(|o| o.tokens).sum(),
        cost: (costs.len() == mine.len() && !mine.is_empty()).then(|| costs.iter().sum()),
        ms: mine.iter().map(|o| o.duration_ms).sum(),
    }
}

/// The jobs, in the order first seen.
fn configs(all: &[Outcome]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for o in all {
        if !seen.contains(&o.config.as_str()) {
            seen.push(&o.config);
        }
    }
    seen
}

/// `eval.md`.
pub fn markdown(all: &[Outcome]) -> String {
    let mut s = String::from(
        "## hone eval\n\n| Job | Tasks | Resolved | Rate | Errors | Tokens | Cost | Time |\n|---|---|---|---|---|---|---|---|\n",
    );
    let rows: Vec<Totals<'_>> = configs(all).into_iter().map(|c| totals(c, all)).collect();
    for t in &rows {
        let graded = t.tasks - t.errors;
        let rate = if graded == 0 { 0.0 } else { 100.0 * t.resolved as f64 / graded as f64 };
        let cost = t.cost.map_or("—".into(), crate::spec::pricing::dollars);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {rate:.0}% | {} | {} | {cost} | {:.0}s |",
            md::code_cell(t.config),
            t.tasks,
            t.resolved,
            t.errors,
            t.tokens,
            t.ms as f64 / 1000.0
        );
    }
    let rate: Vec<(&str, f64)> = rows
        .iter()
        .map(|t| {
            (t.config, if t.tasks > t.errors { 100.0 * t.resolved as f64 / (t.tasks - t.errors) as f64 } else { 0.0 })
        })
        .collect();
    if let Some(chart) = crate::output::chart::bars("Resolved, % of graded tasks", "%", &rate) {
        let _ = write!(s, "\n{chart}");
    }
    let cost: Vec<(&str, f64)> = rows.iter().filter_map(|t| t.cost.map(|c| (t.config, c))).collect();
    if let Some(chart) = crate::output::chart::bars("Cost of all tasks", "USD", &cost) {
        let _ = write!(s, "\n{chart}");
    }
    // Resolve rate against cost, a point per job that has a cost: up and to the left is better.
    let against: Vec<(&str, f64, f64)> =
        rate.iter().zip(&rows).filter_map(|((config, r), t)| t.cost.map(|c| (*config, c, r / 100.0))).collect();
    if let Some(chart) = crate::output::chart::points("Resolved against cost", "USD", "resolved", &against) {
        let _ = write!(s, "\n{chart}");
    }
    s
}

/// `eval-junit.xml`.
pub fn junit(all: &[Outcome]) -> std::io::Result<String> {
    use junit_report::{ReportBuilder, TestCaseBuilder, TestSuiteBuilder};
    let mut report = ReportBuilder::new();
    for config in configs(all) {
        let mut suite = TestSuiteBuilder::new(&format!("hone.eval.{config}"));
        for o in all.iter().filter(|o| o.config == config) {
            let time = time::Duration::milliseconds(o.duration_ms as i64);
            let case = match o.verdict {
                Verdict::Resolved => TestCaseBuilder::success(&o.instance_id, time),
                Verdict::Unresolved => TestCaseBuilder::failure(&o.instance_id, time, "unresolved", "not resolved"),
                Verdict::Error => {
                    TestCaseBuilder::error(&o.instance_id, time, "error", o.error.as_deref().unwrap_or("error"))
                }
            };
            suite.add_testcase(case.build());
        }
        report.add_testsuite(suite.build());
    }
    crate::output::junit::xml(report)
}

/// Write the three reports into `dir`, each by descriptor (a link planted in a report's place
/// is replaced, never written through).
pub fn write(dir: &Path, all: &[Outcome]) -> std::io::Result<()> {
    let d = std::fs::File::open(dir)?;
    let json = serde_json::to_string_pretty(all).unwrap_or_default();
    crate::safe_fs::write_at(&d, "eval.json", json.as_bytes(), 0o644)?;
    crate::safe_fs::write_at(&d, "eval-junit.xml", junit(all)?.as_bytes(), 0o644)?;
    crate::safe_fs::write_at(&d, "eval.md", markdown(all).as_bytes(), 0o644)
}
