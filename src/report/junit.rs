//! `junit.xml`: one testsuite per run, a testcase per verify command per attempt, and one
//! testcase for the agent's outcome. Rendered with the `junit-report` crate (Jenkins XSD valid).

use super::{RunReport, Status};
use junit_report::{ReportBuilder, TestCase, TestCaseBuilder, TestSuiteBuilder};
use time::Duration;

pub fn render(r: &RunReport) -> std::io::Result<String> {
    let mut cases: Vec<TestCase> = Vec::new();
    for c in &r.verify {
        let name = format!("{} (attempt {})", c.name, c.attempt);
        let time = Duration::milliseconds(c.duration_ms as i64);
        let mut b = if c.passed {
            TestCaseBuilder::success(&name, time)
        } else {
            let why = if c.timed_out {
                "timed out".to_string()
            } else {
                c.exit_code.map_or("killed by a signal".into(), |e| format!("exit code {e}"))
            };
            let mut b = TestCaseBuilder::failure(&name, time, "verify", &format!("`{}` failed: {why}", c.command));
            b.set_trace(&c.output_tail);
            b
        };
        b.set_classname(&format!("hone.{}.verify", r.job)).set_system_out(&c.output_tail);
        cases.push(b.build());
    }
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
    let mut suite = TestSuiteBuilder::new(&format!("hone.{}", r.job));
    suite.add_testcases(cases);
    if let Ok(ts) = time::OffsetDateTime::parse(&r.started_at, &time::format_description::well_known::Rfc3339) {
        suite.set_timestamp(ts);
    }
    let report = ReportBuilder::new().add_testsuite(suite.build()).build();
    let mut buf = Vec::new();
    report.write_xml(&mut buf).map_err(std::io::Error::other)?;
    String::from_utf8(buf).map_err(std::io::Error::other)
}
