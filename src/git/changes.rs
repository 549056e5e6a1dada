//! What changed in the work tree: the change against the base (with line stats and as a diff),
//! dirty paths, and the check artifacts that are never part of the change.

use super::{FileChange, Workspace};

/// The change as measured: its files, and its unified diff when asked for.
pub struct Measured {
    pub changes: Vec<FileChange>,
    pub text: Option<String>,
    /// Paths that differ from the base but are withheld (`withheld`): never part of the change.
    pub withheld: Vec<String>,
}
use crate::error::Result;
use git2::{Oid, Status, StatusOptions};

impl Workspace {
    /// Dirty entries as git lists them at the top: modified tracked files, and untracked files
    /// and directories (a new directory is one entry), minus excluded paths. Cheap: untracked
    /// directories are not descended into.
    pub fn dirty_entries(&self) -> Result<Vec<String>> {
        Ok(self.dirty_entries_new()?.into_iter().map(|(p, _)| p).collect())
    }

    /// `dirty_entries`, each with whether it is new (untracked).
    pub(super) fn dirty_entries_new(&self) -> Result<Vec<(String, bool)>> {
        Ok(self.dirty_raw()?.into_iter().map(|(p, new)| (p.to_string_lossy().into_owned(), new)).collect())
    }

    /// `dirty_entries_new` with each path as git has it, byte for byte (a name need not be UTF-8:
    /// its lossy spelling names another file, or none), for what opens or removes them.
    pub(super) fn dirty_raw(&self) -> Result<Vec<(std::path::PathBuf, bool)>> {
        use std::os::unix::ffi::OsStrExt;
        let mut opts = StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(false).include_ignored(false);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().is_ignored())
            .map(|s| {
                let bytes = s.path_bytes();
                let bytes = bytes.strip_suffix(b"/").unwrap_or(bytes);
                (std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes)), s.status().is_wt_new())
            })
            .filter(|(p, _)| !self.is_excluded(&p.to_string_lossy()))
            .collect())
    }

    /// Record as check artifacts the dirty entries that were not dirty `before` the checks ran.
    pub fn mark_artifacts(&self, before: &[String]) -> Result<Vec<String>> {
        let new: Vec<String> = self.dirty_entries()?.into_iter().filter(|e| !before.contains(e)).collect();
        if let Ok(mut a) = self.artifacts.lock() {
            a.extend(new.iter().cloned());
        }
        Ok(new)
    }

    /// Record `entries` (what setup left in ignored paths) as artifacts too: never part of the
    /// change, even once the model's edit of a `.gitignore` stops ignoring them.
    pub fn add_artifacts(&self, entries: &[String]) {
        if let Ok(mut a) = self.artifacts.lock() {
            a.extend(entries.iter().cloned());
        }
    }

    /// What is marked as artifacts now (what the checks and setup wrote).
    pub fn artifact_list(&self) -> Vec<String> {
        self.artifacts.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// The model wrote `rel`: it (and an artifact directory holding it) is the model's again.
    pub fn claim(&self, rel: &str) {
        if let Ok(mut a) = self.artifacts.lock() {
            a.retain(|x| !(rel == x || rel.starts_with(&format!("{x}/"))));
        }
    }

    /// The check artifacts so far (emptied: they are about to be removed).
    pub(super) fn take_artifacts(&self) -> Vec<String> {
        self.artifacts.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default()
    }

    /// Uncommitted changes and untracked (not ignored) files beneath the directory `rel`, each
    /// file on its own (untracked directories descended into), minus excluded paths.
    pub(super) fn dirty_paths_under(&self, rel: &str) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false).pathspec(format!("{rel}/"));
        opts.disable_pathspec_match(false);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().is_ignored())
            .filter_map(|s| s.path().ok().map(str::to_string))
            .filter(|p| !self.is_excluded(p))
            .collect())
    }

    /// Every change in the work tree relative to `base`, with line and byte stats, and with
    /// `text` its unified diff too (both from one diff of each file). Through the index (as `git
    /// diff <base>` does), so that unchanged files are known by their stat data instead of being
    /// read and hashed: the result is the same, as the index only ever holds `base` or hone's own
    /// staging of the work tree. A file larger than `max_size` bytes is not read: it counts as
    /// binary, at its whole size. `None` when the line diffs are not done by `until`: a line diff
    /// of a file with many changes costs far more than its size (seconds for a megabyte), so a
    /// change of many such files would hold hone past the run's wall time.
    pub fn changes(&self, base: Oid, max_size: u64, text: bool, until: std::time::Instant) -> Result<Option<Measured>> {
        let tree = self.repo.find_commit(base)?.tree()?;
        let mut opts = git2::DiffOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        opts.max_size(i64::try_from(max_size).unwrap_or(i64::MAX));
        let diff = self.repo.diff_tree_to_workdir_with_index(Some(&tree), Some(&mut opts))?;
        let mut out = Measured { changes: Vec::new(), text: text.then(String::new), withheld: Vec::new() };
        for (i, delta) in diff.deltas().enumerate() {
            let on_disk =
                delta.new_file().path().or_else(|| delta.old_file().path()).unwrap_or(std::path::Path::new(""));
            let path = on_disk.to_string_lossy().into_owned();
            let raw = (on_disk.to_str().is_none()).then(|| on_disk.to_path_buf());
            if self.is_excluded(&path) {
                continue;
            }
            if self.is_withheld(&path) {
                out.withheld.push(path);
                continue;
            }
            if std::time::Instant::now() > until {
                return Ok(None);
            }
            let status = match delta.status() {
                git2::Delta::Added | git2::Delta::Untracked => "added",
                git2::Delta::Deleted => "deleted",
                git2::Delta::Renamed => "renamed",
                git2::Delta::Typechange => "typechange",
                _ => "modified",
            };
            let mut patch = git2::Patch::from_diff(&diff, i)?;
            if let (Some(t), Some(p)) = (out.text.as_mut(), patch.as_mut()) {
                t.push_str(&String::from_utf8_lossy(&p.to_buf()?));
            }
            let binary = delta.flags().is_binary() || patch.as_ref().is_some_and(|p| p.delta().flags().is_binary());
            let (added, removed, bytes) = match patch {
                Some(p) if !binary => line_stats(&p)?,
                _ => {
                    let size = if delta.status() == git2::Delta::Deleted { delta.old_file() } else { delta.new_file() };
                    (0, 0, size.size())
                }
            };
            out.changes.push(FileChange { path, status: status.into(), added, removed, bytes, binary, raw });
        }
        Ok(Some(out))
    }

    /// A diff as unified-diff text, leaving out excluded paths.
    fn patch_text(&self, diff: &git2::Diff<'_>) -> Result<String> {
        patch_of(diff, |path| !self.is_excluded(path) && !self.is_withheld(path))
    }

    /// The unified diff between two commits.
    pub fn diff_commits(&self, base: Oid, head: Oid) -> Result<String> {
        let a = self.repo.find_commit(base)?.tree()?;
        let b = self.repo.find_commit(head)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
        self.patch_text(&diff)
    }

    /// The paths two commits differ in (a file's new path, else its old one), at most `max`, no
    /// content read: what a pull request touches, from its base to its head.
    pub fn paths_between(&self, base: Oid, head: Oid, max: usize) -> Result<Vec<String>> {
        let a = self.repo.find_commit(base)?.tree()?;
        let b = self.repo.find_commit(head)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
        let path = |d: git2::DiffDelta<'_>| {
            d.new_file().path().or(d.old_file().path()).map(|p| p.to_string_lossy().into_owned())
        };
        Ok(diff.deltas().filter_map(path).filter(|p| !self.is_excluded(p)).take(max).collect())
    }
}

/// A diff as the unified-diff text `git apply` takes, with only the files whose (new) path
/// `keep` accepts.
pub fn patch_of(diff: &git2::Diff<'_>, keep: impl Fn(&str) -> bool) -> Result<String> {
    let mut text = String::new();
    diff.print(git2::DiffFormat::Patch, |delta, _, line| {
        let path = delta.new_file().path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        if keep(&path) {
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin());
            }
            text.push_str(&String::from_utf8_lossy(line.content()));
        }
        true
    })?;
    Ok(text)
}

/// Lines added and removed, and their bytes.
fn line_stats(p: &git2::Patch<'_>) -> Result<(usize, usize, u64)> {
    let (mut added, mut removed, mut bytes) = (0, 0, 0u64);
    for h in 0..p.num_hunks() {
        for l in 0..p.num_lines_in_hunk(h)? {
            let line = p.line_in_hunk(h, l)?;
            match line.origin() {
                '+' => added += 1,
                '-' => removed += 1,
                _ => continue,
            }
            bytes += line.content().len() as u64;
        }
    }
    Ok((added, removed, bytes))
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;

    /// What a pull request touches: new, changed and deleted paths, never an excluded one
    /// (hone's own directory), at most `max`.
    #[test]
    fn the_paths_two_commits_differ_in_are_listed_without_hones_own() {
        let (dir, ws, base) = fixture(|d| {
            std::fs::write(d.join("a.txt"), "a\n").unwrap();
            std::fs::write(d.join("gone.txt"), "g\n").unwrap();
        });
        let p = dir.path();
        std::fs::write(p.join("a.txt"), "changed\n").unwrap();
        std::fs::remove_file(p.join("gone.txt")).unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join("src/new.rs"), "fn x() {}\n").unwrap();
        std::fs::create_dir_all(p.join(".hone")).unwrap();
        std::fs::write(p.join(".hone/x"), "x").unwrap();
        crate::git::test_git::git(p, &["add", "-A", "-f"]);
        crate::git::test_git::git(p, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "pr"]);
        let head = ws.resolve_base(None).unwrap();
        let mut paths = ws.paths_between(base, head, 10).unwrap();
        paths.sort();
        assert_eq!(paths, ["a.txt", "gone.txt", "src/new.rs"]);
        assert_eq!(ws.paths_between(base, head, 2).unwrap().len(), 2);
    }
}
