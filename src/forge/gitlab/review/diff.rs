//! A merge request's latest diff as GitLab gives it: its version's shas, the lines a note may be
//! anchored to, and each new line's old line (GitLab's line code needs both on an unchanged line).

use super::super::{GitLab, pr::check};
use crate::error::{Code, HoneError, Result};
use crate::forge::review::anchors::Commentable;
use serde_json::Value;
use std::collections::BTreeMap;

/// Files read a page (GitLab's most).
const PER_PAGE: usize = 100;
/// The most pages of a merge request's diff hone reads (files beyond are not commentable).
const DIFF_PAGES: u32 = 30;

/// The merge request version a review is anchored to, and its diff's lines by new path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffRefs {
    pub base_sha: String,
    pub start_sha: String,
    pub head_sha: String,
    files: BTreeMap<String, FileLines>,
}

/// One file of the diff: its old path and, per new-side line of its hunks, the old-side line
/// (`None` for an added line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FileLines {
    old_path: String,
    lines: BTreeMap<u32, Option<u32>>,
}

impl DiffRefs {
    /// The refs of a version, without files (for tests and for the version check).
    pub fn new(base_sha: &str, start_sha: &str, head_sha: &str) -> DiffRefs {
        let (base_sha, start_sha, head_sha) = (base_sha.into(), start_sha.into(), head_sha.into());
        DiffRefs { base_sha, start_sha, head_sha, files: BTreeMap::new() }
    }

    /// Add a file's hunks (GitLab's `diff` text: hunks, no file headers).
    pub fn add(&mut self, old_path: &str, new_path: &str, patch: &str) {
        let file = self.files.entry(new_path.to_string()).or_default();
        file.old_path = old_path.to_string();
        file.lines.extend(line_map(patch));
    }

    /// The position of a note on line `line` of `path` on the new side, as GitLab's API takes it;
    /// `None` when the line is not in the diff.
    pub fn position(&self, path: &str, line: u32) -> Option<Value> {
        let file = self.files.get(path)?;
        let old = *file.lines.get(&line)?;
        let mut p = serde_json::json!({
            "position_type": "text",
            "base_sha": self.base_sha, "start_sha": self.start_sha, "head_sha": self.head_sha,
            "old_path": file.old_path, "new_path": path, "new_line": line,
        });
        if let Some(old) = old {
            // An unchanged line: GitLab finds it by both numbers.
            p["old_line"] = old.into();
        }
        Some(p)
    }
}

/// Per new-side line of `patch`'s hunks, its old-side line (`None` when added).
fn line_map(patch: &str) -> Vec<(u32, Option<u32>)> {
    let mut out = Vec::new();
    let (mut old, mut new) = (0u32, 0u32);
    let mut in_hunk = false;
    for line in patch.lines() {
        if let Some((o, n)) = hunk_start(line) {
            (old, new, in_hunk) = (o, n, true);
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b' ') | None => {
                out.push((new, Some(old)));
                (old, new) = (old.saturating_add(1), new.saturating_add(1));
            }
            Some(b'+') => {
                out.push((new, None));
                new = new.saturating_add(1);
            }
            Some(b'-') => old = old.saturating_add(1),
            _ => {}
        }
    }
    out.retain(|&(n, _)| n >= 1);
    out
}

/// The first old and new line of a hunk header `@@ -a[,b] +c[,d] @@…`.
fn hunk_start(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let first = |r: &str| r.split(',').next().and_then(|s| s.parse::<u32>().ok());
    Some((first(old)?, first(new)?))
}

/// A full commit id, as GitLab writes one.
fn sha(v: &Value) -> Option<String> {
    v.as_str().filter(|s| s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit())).map(str::to_ascii_lowercase)
}

/// The latest version of merge request `iid` (GitLab lists the newest first).
pub async fn latest_version(gl: &GitLab, iid: u64) -> Result<DiffRefs> {
    let a = gl.get(&gl.project_path(&format!("/merge_requests/{iid}/versions?per_page=1"))).await?;
    check(&a, || format!("reading the versions of merge request !{iid}"))?;
    let v = a.body.as_array().and_then(|l| l.first()).unwrap_or(&Value::Null);
    match (sha(&v["base_commit_sha"]), sha(&v["start_commit_sha"]), sha(&v["head_commit_sha"])) {
        (Some(b), Some(s), Some(h)) => Ok(DiffRefs::new(&b, &s, &h)),
        _ => {
            Err(HoneError::new(Code::Forge, format!("merge request !{iid} has no diff version GitLab would describe"))
                .hint("GitLab makes a version when the merge request's source branch has commits; check that it has"))
        }
    }
}

/// The latest version of merge request `iid` and the lines of its diff a note may be on.
pub async fn commentable(gl: &GitLab, iid: u64) -> Result<(Commentable, DiffRefs)> {
    let mut refs = latest_version(gl, iid).await?;
    let mut lines = Commentable::default();
    for page in 1..=DIFF_PAGES {
        let path = format!("/merge_requests/{iid}/diffs?per_page={PER_PAGE}&page={page}");
        let a = gl.get(&gl.project_path(&path)).await?;
        check(&a, || format!("reading the diff of merge request !{iid}"))?;
        let files = a.body.as_array().cloned().unwrap_or_default();
        for f in &files {
            add_file(&mut lines, &mut refs, f);
        }
        if files.len() < PER_PAGE {
            break;
        }
    }
    Ok((lines, refs))
}

/// One file of GitLab's diff answer, unless GitLab left its diff out (too large, collapsed).
fn add_file(lines: &mut Commentable, refs: &mut DiffRefs, f: &Value) {
    let (Some(new_path), Some(diff)) = (f["new_path"].as_str(), f["diff"].as_str()) else { return };
    let old_path = f["old_path"].as_str().unwrap_or(new_path);
    let left_out = f["too_large"].as_bool() == Some(true) || f["collapsed"].as_bool() == Some(true);
    if left_out || diff.is_empty() || f["deleted_file"].as_bool() == Some(true) {
        return;
    }
    lines.add(new_path, diff);
    refs.add(old_path, new_path, diff);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unchanged_lines_carry_their_old_line_and_added_lines_none() {
        let patch =
            "@@ -3,4 +3,5 @@ fn f() {\n a\n-b\n+B\n+C\n c\n\\ No newline at end of file\n@@ -20 +21 @@\n-x\n+y\n";
        assert_eq!(line_map(patch), vec![(3, Some(3)), (4, None), (5, None), (6, Some(5)), (21, None)]);
        assert_eq!(line_map("@@ -0,0 +1,2 @@\n+a\n+b\n"), vec![(1, None), (2, None)]);
        assert_eq!(line_map("+@@ -1 +1 @@\n+x\n"), vec![], "no header, no lines");
    }

    #[test]
    fn positions_name_both_lines_on_unchanged_ones_and_only_lines_in_the_diff() {
        let mut refs = DiffRefs::new(&"b".repeat(40), &"s".repeat(40), &"h".repeat(40));
        refs.add("old.rs", "new.rs", "@@ -1,2 +1,3 @@\n a\n+b\n c\n");
        let p = refs.position("new.rs", 3).unwrap();
        assert_eq!((p["old_line"].as_u64(), p["new_line"].as_u64()), (Some(2), Some(3)));
        assert_eq!((p["old_path"].as_str(), p["new_path"].as_str()), (Some("old.rs"), Some("new.rs")));
        assert_eq!(p["head_sha"], json!("h".repeat(40)));
        let added = refs.position("new.rs", 2).unwrap();
        assert!(added.get("old_line").is_none(), "{added}");
        assert!(refs.position("new.rs", 4).is_none() && refs.position("other.rs", 1).is_none());
    }

    #[test]
    fn files_gitlab_left_out_are_not_commentable() {
        let (mut lines, mut refs) = (Commentable::default(), DiffRefs::default());
        let hunk = "@@ -1 +1 @@\n-a\n+b\n";
        for f in [
            json!({"old_path": "a", "new_path": "a", "diff": hunk, "too_large": true}),
            json!({"old_path": "b", "new_path": "b", "diff": hunk, "collapsed": true}),
            json!({"old_path": "c", "new_path": "c", "diff": ""}),
            json!({"old_path": "d", "new_path": "d", "diff": "@@ -1 +0,0 @@\n-a\n", "deleted_file": true}),
            json!({"old_path": "e", "new_path": "e2", "diff": hunk, "renamed_file": true}),
        ] {
            add_file(&mut lines, &mut refs, &f);
        }
        assert!(["a", "b", "c", "d"].iter().all(|p| !lines.allows(p, 1, 1)));
        assert!(lines.allows("e2", 1, 1) && refs.position("e2", 1).unwrap()["old_path"] == "e");
        assert!(sha(&json!("A".repeat(40))).is_some() && sha(&json!("HEAD")).is_none());
    }
}
