//! SUMMARIZING: what changed and why, how it was verified (baseline against final), the risks,
//! how to roll back, and, for a run that did not succeed, what blocked it and what a person
//! would do next. The text is the commit body and a section of `summary.md`. It is markdown
//! people see on GitHub: the model's words are made inert, every name, path, command and message
//! is escaped (`crate::markdown`).

use super::state::Run;
use crate::markdown as md;
use crate::record::Status;
use crate::spec::Job;
use std::fmt::Write as _;

/// A check's verdict (`verify::Verdict`, as every report says it), its test names as code.
fn verdict(c: &crate::verify::CheckResult) -> String {
    c.verdict().describe(crate::verify::Style { name: md::code, text: md::text })
}

/// The summary in Markdown. `status` is the outcome the run is heading for.
pub fn write(r: &Run, status: Status) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### What changed and why\n");
    let said = r.record.final_message.trim();
    let said = if said.is_empty() { "(the model gave no final message)".to_string() } else { md::inert(said) };
    let _ = writeln!(s, "{}\n", said.trim_end());
    if !r.record.files_changed.is_empty() {
        let (a, d): (usize, usize) =
            r.record.files_changed.iter().fold((0, 0), |(a, d), f| (a + f.added, d + f.removed));
        let names: Vec<String> = r.record.files_changed.iter().take(20).map(|f| md::code(&f.path)).collect();
        let more = if r.record.files_changed.len() > 20 {
            format!(" and {} more", r.record.files_changed.len() - 20)
        } else {
            String::new()
        };
        let _ =
            writeln!(s, "{} file(s) changed (+{a} −{d}): {}{more}.\n", r.record.files_changed.len(), names.join(", "));
    }
    let _ = writeln!(s, "### How it was verified\n");
    let last = r.record.final_checks();
    if last.is_empty() && r.record.baseline.is_empty() {
        let _ = writeln!(s, "No verify commands are configured: the change is unverified.\n");
    }
    for c in &r.record.baseline {
        let after = last.iter().find(|l| l.name == c.name).map_or("not run".to_string(), |l| verdict(l));
        let _ =
            writeln!(s, "- {} ({}): before: {}; after: {}", md::code(&c.name), md::code(&c.command), verdict(c), after);
    }
    if !r.record.rollbacks.is_empty() {
        let _ = writeln!(s, "- {} rollback(s) to a checkpoint during the run", r.record.rollbacks.len());
    }
    let _ = writeln!(s, "\n### Risks\n");
    let risk =
        r.record.plan.as_ref().map_or("not assessed (no plan)".to_string(), |p| format!("{:?}", p.risk).to_lowercase());
    let _ = writeln!(s, "- Risk stated in the plan: {risk}");
    let tolerated: Vec<String> = last
        .iter()
        .filter(|c| matches!(c.verdict(), crate::verify::Verdict::FailsAsBefore { .. }))
        .map(|c| md::code(&c.name))
        .collect();
    if !tolerated.is_empty() {
        let _ = writeln!(s, "- Still failing, as before the change (expect: no-regression): {}", tolerated.join(", "));
    }
    for w in &r.record.warnings {
        let _ = write!(s, "{}", md::nest(&md::message(w), "- ", "  "));
    }
    if r.record.policy.denied > 0 {
        let _ = writeln!(
            s,
            "- The policy denied {} action(s) during the run (see report.json `policy.denials`)",
            r.record.policy.denied
        );
    }
    let _ = writeln!(s, "\n### How to roll back\n");
    match status {
        Status::Success => {
            let _ = writeln!(
                s,
                "Revert the commit (`git revert <commit>`), or delete the branch {} and close its PR. Nothing else was changed.",
                md::code(&r.record.branch)
            );
        }
        _ => {
            let _ = writeln!(s, "Nothing was committed on a branch. The user's checkout was restored as it was.");
        }
    }
    if !matches!(status, Status::Success | Status::NoChange) {
        blocked(&mut s, r, &last);
    }
    s
}

/// For a run that did not succeed: what blocked it and what a person would do next.
fn blocked(s: &mut String, r: &Run, last: &[&crate::verify::CheckResult]) {
    let _ = writeln!(s, "\n### What blocked the run\n");
    error_items(s, &r.record.errors);
    for q in &r.record.clarification {
        let _ = writeln!(s, "- Question: {}", md::inline(q));
    }
    let _ = writeln!(s, "\nManual steps:");
    for c in last.iter().filter(|c| !c.accepted) {
        let _ = writeln!(s, "- Run {} and fix what fails ({}).", md::code(&c.command), verdict(c));
    }
    if let Some(saved) = &r.record.saved_ref {
        let _ = writeln!(
            s,
            "- Start from the unverified work: {} (compare with {}).",
            md::code(&format!("git checkout -b wip {saved}")),
            md::code(&format!("git diff {} {saved}", r.record.base_sha))
        );
    }
    if !r.record.clarification.is_empty() {
        let _ = writeln!(s, "- Answer the questions in the task and run the job again.");
    }
    let _ = writeln!(s, "- Or refine the task and the limits in the job spec, and run it again.");
}

/// Each error as a list item: its code, its first line as text, what follows (a command's
/// output) as a code block inside the item.
fn error_items(s: &mut String, errors: &[crate::error::HoneError]) {
    for e in errors {
        let _ = write!(s, "{}", md::nest(&md::message(&e.message), &format!("- {}: ", e.code), "  "));
    }
}

/// The summary of a run that stopped at intake: what blocked it, and what to do.
pub fn intake_failed(errors: &[crate::error::HoneError]) -> String {
    let mut s = String::from("### What blocked the run\n\nThe run stopped before the model was asked anything.\n\n");
    error_items(&mut s, errors);
    let _ = writeln!(s, "\nManual steps:\n- Fix what the error names, then run the job again.");
    s
}

/// First line: a summary of the change; body: the run's summary and the trailers. Nothing in
/// it mentions anyone or references an issue (`references::plain`).
pub fn commit_message(job: &Job, report: &Run) -> String {
    let first = report.record.final_message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let first = md::visible(first.trim_start_matches(['#', '*', '-', ' ']));
    let mut subject: String = if first.is_empty() { format!("hone: {}", job.name) } else { format!("hone: {first}") };
    if subject.chars().count() > 72 {
        subject = subject.chars().take(69).collect::<String>() + "...";
    }
    let checks: Vec<String> = report
        .record
        .final_checks()
        .iter()
        .map(|c| format!("- {}: {}: {}", md::text(&c.name), md::code(&c.command), verdict(c)))
        .collect();
    let task = job.task.trim().lines().next().unwrap_or("");
    // A commit message is plain text to the forge: its mentions and references are broken, so
    // that the commit, once merged, notifies and closes nothing.
    let said =
        format!("{subject}\n\n{}\nChecks:\n{}\n\nTask: {task}", report.record.summary.trim_end(), checks.join("\n"));
    format!("{}\n\nHone-Job: {}\nHone-Run: {}\n", crate::references::plain(&said), job.name, report.record.run_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::HoneError;

    #[test]
    fn a_failed_run_says_what_blocked_it_and_what_to_do() {
        let mut r = Run::new(crate::run::state::test_record("j"), tokio::time::Instant::now());
        r.record.final_message = "Tried.".into();
        r.record.errors.push(HoneError::new(crate::error::Code::BuildFail, "checks still failing"));
        r.record.saved_ref = Some("refs/hone/j/failed".into());
        let s = write(&r, Status::Failed);
        assert!(s.contains("### What blocked the run") && s.contains("E_BUILD_FAIL: checks still failing"), "{s}");
        assert!(s.contains("git checkout -b wip refs/hone/j/failed"));
        assert!(s.contains("Nothing was committed"));
        let ok = write(&r, Status::Success);
        assert!(!ok.contains("What blocked") && ok.contains("git revert"));
    }

    /// The model's message ends in a block (raw HTML, a code block it did not close): hone's
    /// sections after it are still sections, not text inside that block.
    #[test]
    fn the_models_message_cannot_take_in_the_sections_after_it() {
        use pulldown_cmark::{Event, HeadingLevel, Parser, Tag};
        for said in ["Done.\n\n<details><summary>x</summary>", "Done.\n\n```\nfn f() {}"] {
            let mut r = Run::new(crate::run::state::test_record("j"), tokio::time::Instant::now());
            r.record.final_message = said.into();
            let s = write(&r, Status::Success);
            let headings = Parser::new(&s)
                .filter(|e| matches!(e, Event::Start(Tag::Heading { level: HeadingLevel::H3, .. })))
                .count();
            assert_eq!(headings, 4, "{s}");
        }
    }

    use crate::testutil::Mem as Sink;

    /// The four places that show a check's result say the same verdict in the same words: this
    /// summary, the checks table in summary.md, junit.xml and the progress line.
    #[test]
    fn every_renderer_says_the_one_verdict_in_the_same_words() {
        use crate::verify::{CheckResult, Style, Verdict};
        let base = CheckResult {
            command: "sh c.sh".into(),
            expect: crate::spec::Expect::NoRegression,
            output_tail: "tail".into(),
            ..crate::verify::example("c")
        };
        let cases = [
            CheckResult { passed: true, accepted: true, exit_code: Some(0), ..base.clone() },
            CheckResult { accepted: true, ..base.clone() },
            CheckResult { new_failures: vec!["t::a".into(), "t::b".into()], ..base.clone() },
            CheckResult { exit_code: Some(2), ..base.clone() },
            CheckResult { exit_code: None, ..base.clone() },
            CheckResult { exit_code: None, timed_out: true, accepted: false, ..base.clone() },
            CheckResult { exit_code: None, cancelled: true, ..base.clone() },
            CheckResult {
                passed: true,
                exit_code: Some(0),
                junit_error: Some("no JUnit file at j.xml".into()),
                ..base.clone()
            },
        ];
        for c in cases {
            let v = c.verdict();
            let mut r = Run::new(crate::run::state::test_record("j"), tokio::time::Instant::now());
            r.record.baseline.push(CheckResult { attempt: 0, ..base.clone() });
            r.record.verify.push(c.clone());
            let text = write(&r, Status::Failed);
            let md_words = v.describe(Style { name: md::code, text: md::text });
            assert!(text.contains(&format!("before: fails (exit 1); after: {md_words}\n")), "{v:?}: {text}");
            let table = crate::output::summary::render(&r.record);
            let cell_words = v.describe(Style { name: md::code_cell, text: md::text });
            assert!(table.contains(&format!(" {cell_words} | 1 |")), "{v:?}: {table}");
            let xml = crate::output::junit::render(&r.record).unwrap();
            let doc = roxmltree::Document::parse(&xml).unwrap();
            let case = doc.descendants().find(|n| n.attribute("name") == Some("c (attempt 1)")).unwrap();
            let failure = case.children().find(|n| n.has_tag_name("failure")).and_then(|n| n.attribute("message"));
            let out = case.children().find(|n| n.has_tag_name("system-out")).and_then(|n| n.text()).unwrap_or("");
            match v {
                Verdict::Pass => assert_eq!((failure, out), (None, "tail")),
                Verdict::FailsAsBefore { .. } => assert!(failure.is_none() && out.contains(&v.to_string()), "{xml}"),
                _ => assert_eq!(failure, Some(format!("`sh c.sh`: {v}").as_str()), "{xml}"),
            }
            let sink = Sink::default();
            let mut progress = crate::progress::Progress::new(Box::new(sink.clone()), false);
            progress.on(&c.event(), &crate::redact::Redactor::new());
            let line = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
            assert!(line.starts_with(&format!("check `c` (attempt 1): {v} (")), "{v:?}: {line}");
        }
    }
}
