//! The Code Quality report: GitLab's shape, stable and unique fingerprints, secrets redacted
//! before hashing, and only paths inside the repository.

use super::*;
use crate::record::RunRecord;
use crate::verify::CheckResult;
use serde_json::{Value, json};

fn failing(name: &str, attempt: u32, tail: &str) -> CheckResult {
    CheckResult { attempt, output_tail: tail.into(), ..crate::verify::example(name) }
}

/// A repository with `src/x.py` and `lib/index.js`, and a record whose last round's `lint` check
/// printed `tail`.
fn setup(tail: &str) -> (tempfile::TempDir, std::path::PathBuf, RunRecord) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    for f in ["src/x.py", "lib/index.js"] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), "x\n").unwrap();
    }
    let mut r = RunRecord::new("j", "r", String::new());
    r.verify.push(failing("lint", 1, "older round: lib/index.js:1:1: gone"));
    r.verify.push(failing("lint", 2, tail));
    (d, root, r)
}

fn render_value(r: &RunRecord, root: Option<&Path>, redactor: &Redactor) -> Value {
    let text = render(r, root, redactor).unwrap();
    assert!(!text.starts_with('\u{feff}'), "GitLab's parser refuses a byte order mark");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_failing_checks_positions_are_issues_in_gitlabs_shape() {
    let (_d, root, r) = setup("src/x.py:3:1: E999 SyntaxError: invalid syntax\nFound 1 error.\n");
    let v = render_value(&r, Some(&root), &Redactor::new());
    // The shape of the example in GitLab's documentation ("Implement a custom tool").
    assert_eq!(
        v,
        json!([{
            "description": "E999 SyntaxError: invalid syntax",
            "check_name": "lint",
            "fingerprint": fingerprint("lint", "src/x.py", 3, "E999 SyntaxError: invalid syntax"),
            "severity": "major",
            "location": { "path": "src/x.py", "lines": { "begin": 3 } },
        }])
    );
    let fp = v[0]["fingerprint"].as_str().unwrap();
    assert!(fp.len() == 32 && fp.bytes().all(|b| b.is_ascii_hexdigit()), "{fp}");
}

#[test]
fn a_clean_run_and_a_run_without_a_repository_write_an_empty_array() {
    let mut r = RunRecord::new("j", "r", String::new());
    let root = tempfile::tempdir().unwrap();
    assert_eq!(render(&r, Some(root.path()), &Redactor::new()).unwrap(), "[]");
    r.verify.push(CheckResult { accepted: true, passed: true, ..failing("lint", 1, "src/x.py:1: fine") });
    assert_eq!(render(&r, Some(root.path()), &Redactor::new()).unwrap(), "[]");
    let (_d, _root, failed) = setup("src/x.py:3:1: E999");
    assert_eq!(render(&failed, None, &Redactor::new()).unwrap(), "[]");
}

#[test]
fn fingerprints_are_stable_and_differ_for_every_part() {
    let base = fingerprint("lint", "src/x.py", 3, "E1");
    assert_eq!(base, fingerprint("lint", "src/x.py", 3, "E1"));
    let others = [
        fingerprint("test", "src/x.py", 3, "E1"),
        fingerprint("lint", "src/y.py", 3, "E1"),
        fingerprint("lint", "src/x.py", 4, "E1"),
        fingerprint("lint", "src/x.py", 3, "E2"),
        // The parts are separated: moving text from one to the next is another finding.
        fingerprint("lin", "tsrc/x.py", 3, "E1"),
    ];
    for o in &others {
        assert_ne!(&base, o);
    }
    // Two positions in one output, and the same position printed twice: two issues, not three.
    let (_d, root, r) = setup("src/x.py:3:1: E1\nsrc/x.py:4:1: E1\nsrc/x.py:3:1: E1\n");
    let issues = issues(&r, Some(&root), &Redactor::new());
    assert_eq!(issues.iter().map(|i| i.location.lines.begin).collect::<Vec<_>>(), [3, 4]);
    assert_ne!(issues[0].fingerprint, issues[1].fingerprint);
}

#[test]
fn hostile_paths_are_dropped() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("passwd.txt"), "x").unwrap();
    let tail = format!(
        "/etc/passwd:1: absolute\n{}:1: absolute outside\n../x.py:1: parent\nsrc/../src/x.py:2: parent inside\n\
         link/passwd.txt:1: through a symlink\nsrc/sub.d:1: a directory\nsrc/x.py:5: kept\n",
        outside.path().join("passwd.txt").display()
    );
    let (_d, root, r) = setup(&tail);
    std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
    std::fs::create_dir(root.join("src/sub.d")).unwrap();
    let v = render_value(&r, Some(&root), &Redactor::new());
    let paths: Vec<(&str, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["location"]["path"].as_str().unwrap(), i["location"]["lines"]["begin"].as_u64().unwrap()))
        .collect();
    assert_eq!(paths, [("src/x.py", 5)]);
}

#[test]
fn secrets_are_redacted_before_they_are_hashed() {
    let secret = "sk-live-0123456789abcdef";
    let (_d, root, r) = setup(&format!("src/x.py:3:1: token {secret} leaked\n"));
    let red = Redactor::new();
    red.add(secret);
    let text = render(&r, Some(&root), &red).unwrap();
    assert!(!text.contains(secret), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let description = v[0]["description"].as_str().unwrap();
    assert_ne!(v[0]["fingerprint"], fingerprint("lint", "src/x.py", 3, &format!("token {secret} leaked")));
    assert_eq!(v[0]["fingerprint"].as_str().unwrap(), fingerprint("lint", "src/x.py", 3, description));
}

#[test]
fn a_long_message_is_cut_and_line_zero_is_line_one() {
    let long = "E".repeat(5000);
    let (_d, root, r) = setup(&format!("src/x.py:0: {long}\n"));
    let issues = issues(&r, Some(&root), &Redactor::new());
    assert_eq!(issues[0].description.chars().count(), MAX_DESCRIPTION);
    assert_eq!(issues[0].location.lines.begin, 1);
}

#[test]
fn the_baseline_counts_when_the_run_never_verified() {
    let (_d, root, mut r) = setup("");
    r.verify.clear();
    r.baseline.push(failing("tests", 0, "  File \"src/x.py\", line 7, in test_x\n"));
    let issues = issues(&r, Some(&root), &Redactor::new());
    assert_eq!(issues.len(), 1);
    assert_eq!((issues[0].check_name.as_str(), issues[0].location.lines.begin), ("tests", 7));
}
