//! `gl-code-quality.json`: the positions failing checks name, as a GitLab Code Quality report
//! (`artifacts:reports:codequality`), so that the merge request widget and diff show them.
//!
//! The format is GitLab's subset of the Code Climate spec (GitLab's `doc/ci/testing/code_quality.md`,
//! "Implement a custom tool"): a JSON array of issues with `description`, `check_name`,
//! `fingerprint`, `severity` (`info`, `minor`, `major`, `critical` or `blocker`), `location.path`
//! (relative to the repository root) and `location.lines.begin`; no byte order mark. A clean run
//! writes `[]`.

use super::findings::{Finding, findings};
use crate::record::RunRecord;
use crate::redact::Redactor;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;

/// At most this many issues: a check's output tail is short, but a report is for people.
const MAX_ISSUES: usize = 1000;
/// Characters of a description.
const MAX_DESCRIPTION: usize = 1000;

/// One Code Quality issue, as GitLab reads it.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Issue {
    pub description: String,
    pub check_name: String,
    pub fingerprint: String,
    pub severity: &'static str,
    pub location: Location,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub lines: Lines,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Lines {
    pub begin: u32,
}

/// The issues for a run: one per position a failing check's output names in the repository at
/// `repo_root` (none before the repository is known). Every text is redacted first, and the
/// fingerprint is taken of the redacted texts, so it never encodes a secret.
pub fn issues(r: &RunRecord, repo_root: Option<&Path>, redactor: &Redactor) -> Vec<Issue> {
    let Some(root) = repo_root else { return Vec::new() };
    let mut out: Vec<Issue> = Vec::new();
    for f in findings(r, root).into_iter().take(MAX_ISSUES) {
        let issue = issue(&f, redactor);
        // Redaction can make two findings one; GitLab wants each fingerprint once.
        if !out.iter().any(|i| i.fingerprint == issue.fingerprint) {
            out.push(issue);
        }
    }
    out
}

/// A finding as an issue. A failing check's finding is `major`: it fails the job's own check
/// (what the repository requires to pass), more than advice (`minor`), but hone does not know
/// that it stops a release or a merge the way `critical` and `blocker` say.
fn issue(f: &Finding<'_>, redactor: &Redactor) -> Issue {
    let check_name = redactor.apply(f.check);
    let path = redactor.apply(&f.path);
    let message = redactor.apply(f.message);
    let description: String = if message.chars().count() > MAX_DESCRIPTION {
        message.chars().take(MAX_DESCRIPTION - 1).chain(['…']).collect()
    } else {
        message.clone()
    };
    Issue {
        fingerprint: fingerprint(&check_name, &path, f.line, &message),
        description,
        check_name,
        severity: "major",
        location: Location { path, lines: Lines { begin: f.line } },
    }
}

/// The SHA-256 of the check's name, the path, the line and the message (NUL-separated, so no two
/// different findings spell the same input), as 32 hex digits: the same finding gets the same
/// fingerprint on every run, and two different ones differ.
pub fn fingerprint(check: &str, path: &str, line: u32, message: &str) -> String {
    let mut h = Sha256::new();
    for part in [check, path, &line.to_string(), message] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The report's text: a JSON array, `[]` when there is nothing to show.
pub fn render(r: &RunRecord, repo_root: Option<&Path>, redactor: &Redactor) -> std::io::Result<String> {
    serde_json::to_string_pretty(&issues(r, repo_root, redactor)).map_err(std::io::Error::other)
}

#[cfg(test)]
#[path = "code_quality_tests.rs"]
mod tests;
