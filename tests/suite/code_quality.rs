//! `gl-code-quality.json`: every run writes it, in the format GitLab documents for Code Quality
//! reports (`doc/ci/testing/code_quality.md`, "Implement a custom tool"): the positions a failing
//! check names in the repository, and nothing a check's output points at outside it.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

const REPORT: &str = "gl-code-quality.json";

/// What GitLab reads, as its documentation's table says: a JSON array (no byte order mark) of
/// objects with a `description`, a `check_name`, a `fingerprint` (unique in the report), a
/// `severity` among five, a relative `location.path` and a `location.lines.begin`. Returns every
/// way `text` departs from it.
fn gitlab_violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    if text.starts_with('\u{feff}') {
        bad.push("a byte order mark".to_string());
    }
    let Ok(Value::Array(issues)) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) else {
        return vec![format!("not a JSON array: {text}")];
    };
    let mut fingerprints = std::collections::HashSet::new();
    for (i, issue) in issues.iter().enumerate() {
        let s = |p: &str| issue.pointer(p).and_then(Value::as_str);
        for p in ["/description", "/check_name", "/fingerprint", "/location/path"] {
            if s(p).is_none_or(str::is_empty) {
                bad.push(format!("issue {i}: {p} is not a non-empty string"));
            }
        }
        if !matches!(s("/severity"), Some("info" | "minor" | "major" | "critical" | "blocker")) {
            bad.push(format!("issue {i}: severity {:?}", issue.get("severity")));
        }
        if let Some(path) = s("/location/path")
            && (path.starts_with('/') || path.split('/').any(|c| c == ".." || c == "." || c.is_empty()))
        {
            bad.push(format!("issue {i}: {path} is not a relative path inside the repository"));
        }
        let line = issue.pointer("/location/lines/begin").or_else(|| issue.pointer("/location/positions/begin/line"));
        if line.and_then(Value::as_u64).is_none_or(|l| l < 1) {
            bad.push(format!("issue {i}: no line (location.lines.begin)"));
        }
        if let Some(fp) = s("/fingerprint")
            && !fingerprints.insert(fp.to_string())
        {
            bad.push(format!("issue {i}: fingerprint {fp} repeats"));
        }
    }
    bad
}

#[test]
fn the_format_check_accepts_gitlabs_example_and_refuses_what_gitlab_would() {
    // The example in GitLab's documentation.
    let example = json!([{
        "description": "'unused' is assigned a value but never used.",
        "check_name": "no-unused-vars",
        "fingerprint": "7815696ecbf1c96e6894b779456d330e",
        "severity": "minor",
        "location": { "path": "lib/index.js", "lines": { "begin": 42 } }
    }]);
    assert_eq!(gitlab_violations(&example.to_string()), Vec::<String>::new());
    assert_eq!(gitlab_violations("[]"), Vec::<String>::new());
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut v = example.clone();
        edit(&mut v[0]);
        gitlab_violations(&v.to_string())
    };
    assert!(!broken(&|i| i["severity"] = json!("error")).is_empty());
    assert!(!broken(&|i| i["location"]["path"] = json!("/etc/passwd")).is_empty());
    assert!(!broken(&|i| i["location"]["path"] = json!("../x.js")).is_empty());
    assert!(!broken(&|i| i["location"]["lines"] = json!({})).is_empty());
    assert!(!broken(&|i| i.as_object_mut().unwrap().retain(|k, _| k != "fingerprint")).is_empty());
    assert!(!gitlab_violations(&format!("[{}, {}]", example[0], example[0])).is_empty(), "a repeated fingerprint");
    assert!(!gitlab_violations(&format!("\u{feff}{example}")).is_empty());
    assert!(!gitlab_violations("{}").is_empty());
}

/// A lint check that fails on `src/x.py` line 3, and also names places outside the repository,
/// through a committed symlink, and a file that is not there.
const LINT_SH: &str = r#"echo 'src/x.py:3:1: E999 SyntaxError: invalid syntax'
echo '/etc/hosts.allow:1:1: E1 outside'
echo '../outside.py:1:1: E2 parent'
echo 'escape/passwd.txt:1:1: E3 through a symlink'
echo 'src/missing.py:1:1: E4 no such file'
echo 'Found 5 errors.'
exit 1
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_that_names_a_file_and_line_is_a_finding_there() {
    let mock = MockModel::start().await;
    let spec = user_spec("cq", &mock.base_url).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("passwd.txt"), "secret\n").unwrap();
    let repo = user_repo("job.yaml", &spec, &[("check.sh", LINT_SH), ("src/x.py", "import os\n\ndef f(:\n")]);
    std::os::unix::fs::symlink(outside.path(), repo.path.join("escape")).unwrap();
    repo.git(&["add", "escape"]);
    repo.git(&["commit", "-qm", "a symlink out of the repository"]);
    mock.turn(text("I changed nothing."), false);
    let run = run_in(&repo.path, &["run", "job.yaml"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.read(REPORT);
    assert_eq!(gitlab_violations(&report), Vec::<String>::new(), "{report}");
    let issues: Value = serde_json::from_str(&report).unwrap();
    let issues = issues.as_array().unwrap();
    assert_eq!(issues.len(), 1, "only the place inside the repository: {report}");
    assert_eq!(issues[0]["location"], json!({ "path": "src/x.py", "lines": { "begin": 3 } }));
    assert_eq!(issues[0]["check_name"], "check");
    assert_eq!(issues[0]["severity"], "major");
    assert!(issues[0]["description"].as_str().unwrap().contains("E999 SyntaxError"), "{report}");
    // The same failure on a re-run is the same finding: GitLab compares fingerprints.
    mock.turn(text("Still nothing."), false);
    let again = run_in(&repo.path, &["run", "job.yaml"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    let second: Value = serde_json::from_str(&again.read(REPORT)).unwrap();
    assert_eq!(second[0]["fingerprint"], issues[0]["fingerprint"]);
    // A run that stops at intake (an invalid spec) leaves no earlier run's findings: `[]`.
    std::fs::write(repo.path.join("bad.yaml"), spec.replace("max_turns: 10", "max_turn: 10")).unwrap();
    let bad = run_in(&repo.path, &["run", "bad.yaml"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(bad.read(REPORT), "[]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_run_writes_an_empty_report() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("cqok", &mock.base_url), &[]);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let run = run_in(&repo.path, &["run", "job.yaml"], &[("RUST_LOG", "")], repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.read(REPORT), "[]");
}
