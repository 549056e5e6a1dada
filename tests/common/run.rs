//! What one run of hone left: its exit code and output, and the reports it wrote, with the
//! checks tests make on them (no secret anywhere, a valid JUnit file).

use super::require::Need;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report_dir: PathBuf,
}

impl Run {
    pub fn report(&self) -> Value {
        let text = std::fs::read_to_string(self.report_dir.join("report.json")).expect("report.json exists");
        serde_json::from_str(&text).expect("report.json is JSON")
    }

    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.report_dir.join("events.jsonl"))
            .expect("events.jsonl exists")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each event line is JSON"))
            .collect()
    }

    /// A report file hone must have written; a missing one fails the test.
    pub fn read(&self, name: &str) -> String {
        let p = self.report_dir.join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{} is missing: {e}", p.display()))
    }

    /// A report file hone writes only sometimes (pr.md, change.patch): empty when absent.
    pub fn read_optional(&self, name: &str) -> String {
        std::fs::read_to_string(self.report_dir.join(name)).unwrap_or_default()
    }

    /// Every file hone wrote, plus stdout and stderr: nothing may contain the key. The four
    /// reports must exist and hold something, so a missing report cannot pass as clean.
    pub fn assert_no_secret(&self, secret: &str) {
        for name in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
            let text = self.read(name);
            assert!(!text.trim().is_empty(), "{name} is empty");
            assert!(!text.contains(secret), "{name} leaks the secret");
        }
        for name in ["pr.md", "change.patch", "transcript.jsonl"] {
            assert!(!self.read_optional(name).contains(secret), "{name} leaks the secret");
        }
        assert!(!self.stdout.contains(secret), "stdout leaks the secret");
        assert!(!self.stderr.contains(secret), "stderr leaks the secret");
    }
}

/// Validate a JUnit file against the Jenkins junit-10 XSD with xmllint (installed by .ci/test).
pub fn assert_junit_valid(path: &Path) {
    require!(Need::Xmllint);
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema", xsd.to_str().unwrap(), path.to_str().unwrap()])
        .output()
        .expect("xmllint runs");
    assert!(out.status.success(), "junit.xml is not valid against the XSD: {}", String::from_utf8_lossy(&out.stderr));
}
