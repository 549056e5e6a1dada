//! Verification against the baseline: `expect: no-regression` with JUnit test cases.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

/// A test runner that writes JUnit XML: `test_legacy` always fails (it fails before hone
/// starts), `test_status` passes when status.txt says fixed, `test_math` passes while
/// math.txt says 4.
const RUNNER: &str = r#"#!/bin/sh
mkdir -p reports
fails=0
tc() { if [ "$2" = ok ]; then echo "<testcase classname=\"suite\" name=\"$1\"/>"; else fails=$((fails+1)); echo "<testcase classname=\"suite\" name=\"$1\"><failure message=\"$1 failed\"/></testcase>"; fi; }
{
  echo '<testsuite name="suite">'
  tc test_legacy bad
  if grep -qx fixed status.txt; then tc test_status ok; else tc test_status bad; fi
  if grep -qx 4 math.txt; then tc test_math ok; else tc test_math bad; fi
  echo '</testsuite>'
} > reports/junit.xml
echo "$fails failing"
[ $fails -eq 0 ]
"#;

fn repo() -> TestRepo {
    TestRepo::new(&[("status.txt", "broken\n"), ("math.txt", "4\n"), ("run_tests.sh", RUNNER)])
}

fn yaml(name: &str, url: &str) -> String {
    job_yaml(name, url, false).replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        r#"  - { name: tests, run: "sh run_tests.sh", expect: no-regression, junit: reports/junit.xml, timeout: 30s }"#,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_existing_failure_is_tolerated_when_nothing_new_fails() {
    let repo = repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let run = run_job(&repo, &yaml("noregress", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["baseline"][0]["failing_tests"], json!(["suite::test_legacy", "suite::test_status"]));
    assert_eq!(report["verify"][0]["passed"], false);
    assert_eq!(report["verify"][0]["accepted"], true);
    assert_eq!(report["verify"][0]["failing_tests"], json!(["suite::test_legacy"]));
    assert!(report["commit"]["message"].as_str().unwrap().contains("no new failures"));
    let junit = run.read("junit.xml");
    assert!(junit.contains("hone.noregress.baseline") && junit.contains("failed before any change"), "{junit}");
    assert_junit_valid(&run.report_dir.join("junit.xml"));
    let summary = run.read("summary.md");
    assert!(
        summary.contains(
            "| `tests` | no-regression | ❌ fails (exit 1); 2 failing | ➖ fails as before (exit 1; no new failures); 1 failing | 1 |"
        ),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_failure_fails_the_run_and_is_named() {
    let repo = repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "math.txt", "content": "5\n"})), false).turn(text("done"), false);
    let y = yaml("regress", &mock.base_url).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["verify"][0]["new_failures"], json!(["suite::test_math"]));
    assert_eq!(report["verify"][0]["accepted"], false);
    assert!(report["commit"].is_null());
    let junit = run.read("junit.xml");
    assert!(junit.contains("new failures: suite::test_math"), "{junit}");
    assert_junit_valid(&run.report_dir.join("junit.xml"));
}
