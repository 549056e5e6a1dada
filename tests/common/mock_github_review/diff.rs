//! A pull request's diff as GitHub computes it, from the test's bare origin: the merge base of
//! the base branch and the head, to the head, three lines of context, renames found. Each file's
//! `patch` is its hunks without the file headers (none for a binary file), as GitHub gives it;
//! and the RIGHT-side lines a review comment may sit on, read back from that text.

use git2::{Delta, DiffFindOptions, DiffOptions, Oid, Repository};
use std::path::Path;

/// A file of the PR's diff, as `GET …/pulls/N/files` lists it.
#[derive(Clone, Debug)]
pub struct PrFile {
    pub filename: String,
    pub previous_filename: Option<String>,
    pub status: &'static str,
    pub additions: usize,
    pub deletions: usize,
    pub patch: Option<String>,
}

impl PrFile {
    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "sha": "0000000000000000000000000000000000000000",
            "filename": self.filename,
            "status": self.status,
            "additions": self.additions,
            "deletions": self.deletions,
            "changes": self.additions + self.deletions,
        });
        if let Some(p) = &self.previous_filename {
            v["previous_filename"] = p.clone().into();
        }
        if let Some(p) = &self.patch {
            v["patch"] = p.clone().into();
        }
        v
    }
}

/// The files of the diff `merge-base(refs/heads/base, head)..head` in `origin`.
pub fn pr_files(origin: &Path, base_ref: &str, head_sha: &str) -> Vec<PrFile> {
    let repo = Repository::open_bare(origin).unwrap();
    let head = Oid::from_str(head_sha).unwrap();
    let base = repo.merge_base(repo.refname_to_id(&format!("refs/heads/{base_ref}")).unwrap(), head).unwrap();
    let a = repo.find_commit(base).unwrap().tree().unwrap();
    let b = repo.find_commit(head).unwrap().tree().unwrap();
    let mut diff = repo.diff_tree_to_tree(Some(&a), Some(&b), Some(DiffOptions::new().context_lines(3))).unwrap();
    diff.find_similar(Some(DiffFindOptions::new().renames(true))).unwrap();
    let mut out = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let name = |f: git2::DiffFile<'_>| f.path().unwrap().to_string_lossy().into_owned();
        let status = match delta.status() {
            Delta::Added => "added",
            Delta::Deleted => "removed",
            Delta::Renamed => "renamed",
            _ => "modified",
        };
        let patch = git2::Patch::from_diff(&diff, i).unwrap().unwrap();
        let binary = patch.delta().flags().is_binary();
        let (_, additions, deletions) = patch.line_stats().unwrap();
        let filename = if delta.status() == Delta::Deleted { name(delta.old_file()) } else { name(delta.new_file()) };
        out.push(PrFile {
            filename,
            previous_filename: (delta.status() == Delta::Renamed).then(|| name(delta.old_file())),
            status,
            additions,
            deletions,
            patch: if binary { None } else { Some(hunks_text(&patch)) },
        });
    }
    out
}

/// The hunks of one file's patch, as GitHub's `patch` field: no file headers, no final newline.
fn hunks_text(patch: &git2::Patch<'_>) -> String {
    let mut text = String::new();
    for h in 0..patch.num_hunks() {
        let (hunk, lines) = patch.hunk(h).unwrap();
        text.push_str(&String::from_utf8_lossy(hunk.header()));
        for l in 0..lines {
            let line = patch.line_in_hunk(h, l).unwrap();
            match line.origin() {
                '+' | '-' | ' ' => {
                    text.push(line.origin());
                    text.push_str(&String::from_utf8_lossy(line.content()));
                }
                _ => {
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str("\\ No newline at end of file\n");
                }
            }
        }
    }
    text.trim_end_matches('\n').to_string()
}

/// The RIGHT-side line ranges (inclusive) of the hunks in a `patch` field.
pub fn right_ranges(patch: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for line in patch.lines().filter(|l| l.starts_with("@@ ")) {
        // "@@ -a,b +c,d @@ context"
        let Some(plus) = line.split(' ').nth(2).and_then(|p| p.strip_prefix('+')) else { continue };
        let mut parts = plus.split(',');
        let start: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let len: u64 = parts.next().map_or(1, |s| s.parse().unwrap_or(0));
        if start > 0 && len > 0 {
            out.push((start, start + len - 1));
        }
    }
    out
}

/// The lines of a comment's first `suggestion` block, if it has one (GitHub takes one anywhere
/// in the body): a fence of three or more backticks with `suggestion`, closed by a line of at
/// least as many backticks.
pub fn suggestion_lines(body: &str) -> Option<Vec<String>> {
    let mut lines = body.split('\n');
    let ticks_of = |l: &str| l.len() - l.trim_start_matches('`').len();
    let open = lines.find(|l| ticks_of(l) >= 3 && l[ticks_of(l)..].trim() == "suggestion")?;
    let ticks = ticks_of(open);
    let mut out = Vec::new();
    for l in lines {
        let t = l.trim();
        if t.len() >= ticks && t.chars().all(|c| c == '`') {
            return Some(out);
        }
        out.push(l.to_string());
    }
    None
}
