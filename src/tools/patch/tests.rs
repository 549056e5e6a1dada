//! Tests for the lenient patch parser and applier.

use super::*;
use crate::tools::dispatch;
use crate::tools::testutil::{call, ctx};

const FILE: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

#[test]
fn applies_an_exact_patch() {
    let p = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";
    let f = parse(p).unwrap();
    assert_eq!(f[0].old_path.as_deref(), Some("calc.py"));
    assert_eq!(apply_hunks(FILE, &f[0].hunks).unwrap(), FILE.replace("a - b", "a + b"));
}

#[test]
fn tolerates_wrong_line_numbers_counts_and_stripped_context_spaces() {
    let p = "--- calc.py\n+++ calc.py\n@@ -40,9 +40,9 @@\n\ndef mul(a, b):\n-    return a * b\n+    return b * a\n";
    let f = parse(p).unwrap();
    assert_eq!(apply_hunks(FILE, &f[0].hunks).unwrap(), FILE.replace("a * b", "b * a"));
}

#[test]
fn ambiguous_context_picks_the_nearest_to_the_stated_line() {
    let text = "x\ny\nx\ny\n";
    let p = "--- f\n+++ f\n@@ -3,2 +3,2 @@\n x\n-y\n+z\n";
    assert_eq!(apply_hunks(text, &parse(p).unwrap()[0].hunks).unwrap(), "x\ny\nx\nz\n");
}

#[test]
fn mismatch_is_a_conflict_with_a_hint() {
    let p = "--- f\n+++ f\n@@ -1 +1 @@\n-nothing like this\n+x\n";
    let e = apply_hunks(FILE, &parse(p).unwrap()[0].hunks).unwrap_err();
    assert_eq!(e, Mismatch { hunk: 1, first: "nothing like this".into() });
    assert_eq!(
        e.to_string(),
        "hunk 1 does not match the file (looked for the lines starting with \"nothing like this\"); re-read the file and make the patch from its current content"
    );
}

#[test]
fn parse_errors() {
    assert!(parse("just text").is_err());
    assert!(parse("@@ -1 +1 @@\n-a\n+b\n").is_err());
}

#[tokio::test]
async fn multi_file_patch_creates_edits_and_deletes_atomically_and_undoes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), FILE).unwrap();
    std::fs::write(dir.path().join("old.txt"), "bye\n").unwrap();
    let c = ctx(dir.path());
    let p = "diff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n--- /dev/null\n+++ b/new/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let out = dispatch(&c, &call("apply_patch", serde_json::json!({"patch": p}))).await;
    assert!(out.ok, "{}", out.content);
    assert!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap().contains("a + b"));
    assert_eq!(std::fs::read_to_string(dir.path().join("new/n.txt")).unwrap(), "one\ntwo\n");
    assert!(!dir.path().join("old.txt").exists());
    let out = dispatch(&c, &call("undo_patch", serde_json::json!({}))).await;
    assert!(out.ok, "{}", out.content);
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), FILE);
    assert!(!dir.path().join("new/n.txt").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("old.txt")).unwrap(), "bye\n");
}

#[tokio::test]
async fn a_failing_file_leaves_every_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), FILE).unwrap();
    let c = ctx(dir.path());
    let p = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n--- a/missing.py\n+++ b/missing.py\n@@ -1 +1 @@\n-a\n+b\n";
    let out = dispatch(&c, &call("apply_patch", serde_json::json!({"patch": p}))).await;
    assert_eq!(out.code, Some(Code::NotFound), "{}", out.content);
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), FILE);
}
