//! The review planner: a verified change (PR head → hone's commit) split into suggestions
//! anchored to lines of the PR's diff, and a patch for everything no suggestion can carry.
//!
//! A suggestion replaces whole lines of the head file, each ending in `\n`: lines with a carriage
//! return, a file's last line without a newline, and changes to a file's kind, mode or name are
//! left to the patch, so that committing the suggestions cannot change what the author did not
//! see. The patch is taken against the head with the suggestions applied, and checked here: the
//! suggestions and the patch together give exactly the commit's tree.

use super::anchors::Commentable;
use super::{ReviewPlan, Suggestion};
use crate::error::Result;
use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, Oid, Repository, Tree};
use std::collections::BTreeMap;

/// The most suggestions one review carries; the rest of the change goes into the patch.
pub const MAX_SUGGESTIONS: usize = 100;
/// The largest file (either side) the planner splits into suggestions.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// The most characters of lines one suggestion carries (a review comment holds 65,536).
pub const MAX_SUGGESTION_CHARS: usize = 60_000;

/// One hunk of a 0-context diff: head lines `old_start..old_start+old_len` (1-based; for an
/// insertion, `old_len` is 0 and the lines go after line `old_start`) become the commit's lines
/// `new_start..new_start+new_len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
}

impl Hunk {
    /// The head lines a suggestion for this hunk replaces: its own, or for an insertion the line
    /// before it (line 1 at the top), which the suggestion repeats. `None` in an empty file.
    fn anchor(&self, head_lines: usize) -> Option<(usize, usize)> {
        if self.old_len > 0 {
            return Some((self.old_start, self.old_start + self.old_len - 1));
        }
        (head_lines > 0).then(|| {
            let k = self.old_start.clamp(1, head_lines);
            (k, k)
        })
    }
}

/// Plan the review of `commit` (hone's verified change) on `head` (the PR's head commit).
pub fn plan(repo: &Repository, head: Oid, commit: Oid, commentable: &Commentable) -> Result<ReviewPlan> {
    let head_tree = repo.find_commit(head)?.tree()?;
    let commit_tree = repo.find_commit(commit)?.tree()?;
    let diff = tree_diff(repo, &head_tree, &commit_tree, 0)?;
    let mut plan = ReviewPlan::default();
    let mut why: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut carried: Vec<(String, Vec<u8>, FileMode)> = Vec::new();
    for delta in diff.deltas() {
        let path = delta.new_file().path().or(delta.old_file().path()).map(|p| p.to_string_lossy().into_owned());
        let path = path.unwrap_or_default();
        match suggestable(repo, &delta) {
            Err(reason) => why.entry(path).or_default().push(reason.to_string()),
            Ok((old, new)) => {
                let budget = MAX_SUGGESTIONS.saturating_sub(plan.suggestions.len());
                let file = split_file(&path, &old, &new, commentable, budget)?;
                if !file.suggestions.is_empty() {
                    let mode = if delta.old_file().mode() == FileMode::BlobExecutable {
                        FileMode::BlobExecutable
                    } else {
                        FileMode::Blob
                    };
                    carried.push((path.clone(), file.applied.into_bytes(), mode));
                }
                plan.suggestions.extend(file.suggestions);
                if !file.left.is_empty() {
                    why.entry(path).or_default().extend(file.left);
                }
            }
        }
    }
    let base = with_files(repo, &head_tree, &carried)?;
    let rest = tree_diff(repo, &base, &commit_tree, 3)?;
    plan.patch = patch_text(&rest)?;
    for delta in rest.deltas() {
        let path = delta.new_file().path().or(delta.old_file().path()).map(|p| p.to_string_lossy().into_owned());
        let path = path.unwrap_or_default();
        let mut reasons = why.remove(&path).unwrap_or_default();
        reasons.dedup();
        let reason = if reasons.is_empty() { "changed".to_string() } else { reasons.join("; ") };
        plan.in_patch.push((path, reason));
    }
    Ok(plan)
}

/// The diff between two trees with `context` lines, renames found, binary files as git's binary
/// patches and full object ids (what `git apply` needs for them).
fn tree_diff<'r>(repo: &'r Repository, a: &Tree<'_>, b: &Tree<'_>, context: u32) -> Result<git2::Diff<'r>> {
    let mut opts = DiffOptions::new();
    opts.context_lines(context).interhunk_lines(0).show_binary(true).id_abbrev(40);
    let mut diff = repo.diff_tree_to_tree(Some(a), Some(b), Some(&mut opts))?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;
    Ok(diff)
}

/// A diff as the unified-diff text `git apply` takes.
fn patch_text(diff: &git2::Diff<'_>) -> Result<String> {
    crate::git::patch_of(diff, |_| true)
}

/// `tree` with each of `files` (path, content, mode) replaced.
fn with_files<'r>(repo: &'r Repository, tree: &Tree<'_>, files: &[(String, Vec<u8>, FileMode)]) -> Result<Tree<'r>> {
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, content, mode) in files {
        update.upsert(path, repo.blob(content)?, *mode);
    }
    let id = update.create_updated(repo, tree)?;
    Ok(repo.find_tree(id)?)
}

/// Why a file's change goes into the patch rather than into suggestions: its text is the
/// reason the plan gives for the file (`ReviewPlan::in_patch`).
#[derive(Debug, thiserror::Error)]
enum InPatch {
    #[error("new file")]
    Added,
    #[error("deleted file")]
    Deleted,
    #[error("renamed from {0}")]
    Renamed(String),
    #[error("changed kind")]
    Kind,
    #[error("file mode changed")]
    Mode,
    #[error("not a regular file")]
    NotRegular,
    #[error("unreadable: {0}")]
    Unreadable(String),
    #[error("larger than {} KiB", MAX_FILE_BYTES >> 10)]
    TooLarge,
    #[error("binary file")]
    Binary,
    #[error("not UTF-8 text")]
    NotUtf8,
}

/// The head and commit text of a file a suggestion may change, or why it goes into the patch.
fn suggestable(repo: &Repository, delta: &git2::DiffDelta<'_>) -> std::result::Result<(String, String), InPatch> {
    let (old, new) = (delta.old_file(), delta.new_file());
    match delta.status() {
        Delta::Added => return Err(InPatch::Added),
        Delta::Deleted => return Err(InPatch::Deleted),
        Delta::Renamed => {
            let from = old.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(InPatch::Renamed(from));
        }
        Delta::Modified => {}
        _ => return Err(InPatch::Kind),
    }
    if old.mode() != new.mode() {
        return Err(InPatch::Mode);
    }
    if !matches!(old.mode(), FileMode::Blob | FileMode::BlobExecutable) {
        return Err(InPatch::NotRegular);
    }
    let read = |id: Oid| -> std::result::Result<String, InPatch> {
        let blob = repo.find_blob(id).map_err(|e| InPatch::Unreadable(e.message().to_string()))?;
        if blob.size() > MAX_FILE_BYTES {
            return Err(InPatch::TooLarge);
        }
        if blob.is_binary() {
            return Err(InPatch::Binary);
        }
        String::from_utf8(blob.content().to_vec()).map_err(|_| InPatch::NotUtf8)
    };
    Ok((read(old.id())?, read(new.id())?))
}

/// One file's suggestions, its head text with them applied, and why any part is left out.
struct FilePlan {
    suggestions: Vec<Suggestion>,
    applied: String,
    left: Vec<String>,
}

/// Split one modified text file's change into at most `budget` suggestions.
fn split_file(path: &str, old: &str, new: &str, commentable: &Commentable, budget: usize) -> Result<FilePlan> {
    let head: Vec<&str> = old.split_inclusive('\n').collect();
    let next: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out = FilePlan { suggestions: Vec::new(), applied: String::new(), left: Vec::new() };
    let mut kept = 1; // the next head line not yet copied into `applied`
    for (group, anchor) in groups(&hunks(old, new)?, head.len()) {
        let Some((a, b)) = anchor else {
            out.left.push("the file was empty".into());
            continue;
        };
        let lines = region(&head, &next, &group, (a, b));
        let refused = if !lines_ok(&head[a - 1..b]) || !lines_ok(&lines) {
            Some("a carriage return or no newline at the end of the file")
        } else if lines.iter().map(|l| l.chars().count()).sum::<usize>() > MAX_SUGGESTION_CHARS {
            Some("too long for one review comment")
        } else if !commentable.allows(path, u32::try_from(a).unwrap_or(0), u32::try_from(b).unwrap_or(0)) {
            Some("lines outside the pull request's diff")
        } else if out.suggestions.len() >= budget {
            Some("more suggestions than one review carries")
        } else {
            None
        };
        if let Some(reason) = refused {
            out.left.push(reason.into());
            continue;
        }
        head[kept - 1..a - 1].iter().for_each(|l| out.applied.push_str(l));
        lines.iter().for_each(|l| out.applied.push_str(l));
        kept = b + 1;
        let lines = lines.iter().map(|l| l.trim_end_matches('\n').to_string()).collect();
        out.suggestions.push(Suggestion { path: path.to_string(), start: a as u32, end: b as u32, lines });
    }
    head[kept - 1..].iter().for_each(|l| out.applied.push_str(l));
    Ok(out)
}

/// Whether every line ends in `\n` and has no carriage return: what a suggestion carries as is.
fn lines_ok(lines: &[&str]) -> bool {
    lines.iter().all(|l| l.ends_with('\n') && !l.contains('\r'))
}

/// The hunks of the 0-context diff between two texts.
pub(crate) fn hunks(old: &str, new: &str) -> Result<Vec<Hunk>> {
    let mut opts = DiffOptions::new();
    opts.context_lines(0).interhunk_lines(0).force_text(true);
    let patch = git2::Patch::from_buffers(old.as_bytes(), None, new.as_bytes(), None, Some(&mut opts))?;
    let mut out = Vec::with_capacity(patch.num_hunks());
    for i in 0..patch.num_hunks() {
        let (h, _) = patch.hunk(i)?;
        out.push(Hunk {
            old_start: h.old_start() as usize,
            old_len: h.old_lines() as usize,
            new_start: h.new_start() as usize,
            new_len: h.new_lines() as usize,
        });
    }
    Ok(out)
}

/// Hunks that one suggestion carries, and the head lines it replaces (`None` in an empty file).
type Group = (Vec<Hunk>, Option<(usize, usize)>);

/// The hunks grouped so that no two groups' anchors overlap or touch, each with its anchor.
pub(crate) fn groups(hunks: &[Hunk], head_lines: usize) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for h in hunks {
        let anchor = h.anchor(head_lines);
        if let (Some((group, Some((_, end)))), Some((a, b))) = (out.last_mut(), anchor)
            && a <= *end + 1
        {
            group.push(*h);
            *end = (*end).max(b);
            continue;
        }
        out.push((vec![*h], anchor));
    }
    out
}

/// Head lines `a..=b` with the group's hunks applied: the lines the suggestion puts there.
pub(crate) fn region<'t>(head: &[&'t str], next: &[&'t str], group: &[Hunk], (a, b): (usize, usize)) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut line = a;
    for h in group {
        let upto = if h.old_len == 0 { h.old_start } else { h.old_start - 1 };
        while line <= upto {
            out.push(head[line - 1]);
            line += 1;
        }
        if h.new_len > 0 {
            out.extend_from_slice(&next[h.new_start - 1..h.new_start - 1 + h.new_len]);
        }
        if h.old_len > 0 {
            line = h.old_start + h.old_len;
        }
    }
    while line <= b {
        out.push(head[line - 1]);
        line += 1;
    }
    out
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;
