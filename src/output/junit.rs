//! `junit.xml`: one testsuite for the run, with a testcase per verify command per attempt and one
//! for the agent's outcome, plus a `baseline` testsuite with the checks as they were before any
//! change. Rendered with the `junit-report` crate (valid against the Jenkins junit-10 XSD).

use crate::record::{RunRecord, Status};
use crate::verify::{CheckResult, Verdict};
use junit_report::{ReportBuilder, TestCase, TestCaseBuilder, TestSuiteBuilder};
use time::Duration;

/// A verify check: a success when its verdict accepts it (with a note when it still fails as at
/// the baseline), else a failure whose message is the verdict.
fn check_case(job: &str, c: &CheckResult) -> TestCase {
    let name = format!("{} (attempt {})", c.name, c.attempt);
    let time = Duration::milliseconds(c.duration_ms as i64);
    let verdict = c.verdict();
    let mut b = if verdict.accepted() {
        TestCaseBuilder::success(&name, time)
    } else {
        let mut b = TestCaseBuilder::failure(&name, time, "verify", &format!("`{}`: {verdict}", c.command));
        b.set_trace(&c.output_tail);
        b
    };
    let out = match verdict {
        Verdict::FailsAsBefore { .. } => {
            format!("[hone: accepted (expect: no-regression): {verdict}]\n{}", c.output_tail)
        }
        _ => c.output_tail.clone(),
    };
    b.set_classname(&format!("hone.{job}.verify")).set_system_out(&out);
    b.build()
}

/// A baseline check: one that did not pass is skipped, with its verdict: a failure that
/// predates the run is recorded, not blamed on it.
fn baseline_case(job: &str, c: &CheckResult) -> TestCase {
    let name = format!("{} (baseline)", c.name);
    let mut b = match c.verdict() {
        Verdict::Pass => TestCaseBuilder::success(&name, Duration::milliseconds(c.duration_ms as i64)),
        v => TestCaseBuilder::skipped_with_cause(&name, "baseline", &format!("failed before any change: {v}")),
    };
    b.set_classname(&format!("hone.{job}.baseline")).set_system_out(&c.output_tail);
    b.build()
}

/// A setup command: a failure is a failure (it stopped the run).
fn setup_case(job: &str, c: &CheckResult) -> TestCase {
    let time = Duration::milliseconds(c.duration_ms as i64);
    let mut b = match c.verdict() {
        Verdict::Pass => TestCaseBuilder::success(&c.name, time),
        v => TestCaseBuilder::failure(&c.name, time, "setup", &v.to_string()),
    };
    b.set_classname(&format!("hone.{job}.setup")).set_system_out(&c.output_tail);
    b.build()
}

/// junit-report prints times as `f64` seconds, and a sum like 3 + 0.361 prints as
/// `3.3609999999999998`, which the junit-10 XSD rejects (at most 3 decimals). Rewrite every
/// `time="…"` attribute with exactly three decimals.
pub fn fix_times(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(i) = rest.find(" time=\"") {
        let (head, tail) = rest.split_at(i + 7);
        out.push_str(head);
        let end = tail.find('"').unwrap_or(tail.len());
        match tail[..end].parse::<f64>() {
            Ok(v) if v.is_finite() => out.push_str(&format!("{v:.3}")),
            _ => out.push_str(&tail[..end]),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

pub fn render(r: &RunRecord) -> std::io::Result<String> {
    let mut cases: Vec<TestCase> = r.verify.iter().map(|c| check_case(&r.job, c)).collect();
    let time = Duration::milliseconds(r.duration_ms as i64);
    let mut outcome = match r.status {
        Status::Success | Status::NoChange => TestCaseBuilder::success("outcome", time),
        other => {
            let first_error = r.errors.first().map(|e| format!("{}: {}", e.code, e.message)).unwrap_or_default();
            TestCaseBuilder::failure(
                "outcome",
                time,
                other.as_str(),
                &format!("the task ended `{}`. {first_error}", other.as_str()),
            )
        }
    };
    let out = format!(
        "status: {}\nturns: {}\ntokens: {}\nfiles changed: {}\ncommit: {}\n\n{}",
        r.status.as_str(),
        r.turns,
        r.usage.total_tokens,
        r.files_changed.len(),
        r.commit.as_ref().map_or("none", |c| c.sha.as_str()),
        r.final_message
    );
    outcome.set_classname(&format!("hone.{}.agent", r.job)).set_system_out(&out);
    cases.push(outcome.build());
    let ts = time::OffsetDateTime::parse(&r.started_at, &time::format_description::well_known::Rfc3339).ok();
    let mut suite = TestSuiteBuilder::new(&format!("hone.{}", r.job));
    suite.add_testcases(cases);
    let mut report = ReportBuilder::new();
    // The setup commands and the baseline, each a testsuite of its own when there are any.
    let parts = [
        ("setup", r.setup.iter().map(|c| setup_case(&r.job, c)).collect::<Vec<_>>()),
        ("baseline", r.baseline.iter().map(|c| baseline_case(&r.job, c)).collect()),
    ];
    for (part, cases) in parts.into_iter().filter(|(_, c)| !c.is_empty()) {
        let mut s = TestSuiteBuilder::new(&format!("hone.{}.{part}", r.job));
        s.add_testcases(cases);
        if let Some(ts) = ts {
            s.set_timestamp(ts);
        }
        report.add_testsuite(s.build());
    }
    if let Some(ts) = ts {
        suite.set_timestamp(ts);
    }
    report.add_testsuite(suite.build());
    if let Some(tries) = super::tries::suite(r) {
        report.add_testsuite(tries);
    }
    xml(report)
}

/// A report as the XML hone writes: its times with three decimals, its text in XML's characters
/// (every JUnit file hone writes goes through here: a run's, a fleet's, an evaluation's).
pub fn xml(report: junit_report::ReportBuilder) -> std::io::Result<String> {
    let mut buf = Vec::new();
    report.build().write_xml(&mut buf).map_err(std::io::Error::other)?;
    String::from_utf8(buf).map(|x| valid_chars(&fix_times(&x))).map_err(std::io::Error::other)
}

/// Characters XML 1.0 does not allow anywhere (most C0 controls: a test's colours, a NUL in its
/// output) shown as visible escapes, so that CI parsers accept the file. The writer's own markup
/// holds none, so only text a check or the model wrote is touched.
pub fn valid_chars(xml: &str) -> String {
    let bad = |c: char| (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}');
    if !xml.contains(bad) {
        return xml.to_string();
    }
    let mut out = String::with_capacity(xml.len() + 64);
    for c in xml.chars() {
        if bad(c) { out.extend(c.escape_default()) } else { out.push(c) }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_output_keep_the_file_valid_xml() {
        let xml = "<t a=\"x\u{1b}[31m\">red\u{0}\u{7}\tok</t>";
        let fixed = valid_chars(xml);
        assert!(roxmltree::Document::parse(xml).is_err(), "the input is not XML 1.0");
        let doc = roxmltree::Document::parse(&fixed).unwrap();
        assert_eq!(doc.root_element().text(), Some("red\\u{0}\\u{7}\tok"));
    }

    #[test]
    fn times_get_three_decimals() {
        let x = r#"<testsuite name="a" time="3.3609999999999998"><testcase name="b" time="0.1"/><testcase time="x"/></testsuite>"#;
        assert_eq!(
            fix_times(x),
            r#"<testsuite name="a" time="3.361"><testcase name="b" time="0.100"/><testcase time="x"/></testsuite>"#
        );
    }
}
