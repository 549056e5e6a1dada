//! Ignored paths: what was there before the run, and removing what the run added.

use super::Workspace;
use crate::error::Result;
use git2::StatusOptions;

impl Workspace {
    /// Ignored files and directories in the work tree (a directory stands for its contents),
    /// repo-relative, minus excluded paths.
    pub fn ignored_entries(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        // The index's stat cache is refreshed here too (see `intake_status`).
        opts.include_untracked(false).include_ignored(true).recurse_ignored_dirs(false).update_index(true);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status().is_ignored())
            .filter_map(|s| s.path().ok().map(|p| p.trim_end_matches('/').to_string()))
            .filter(|p| !self.is_excluded(p))
            .collect())
    }

    /// The work tree at intake, in one walk: the dirty paths (each file, untracked directories
    /// descended into) and the ignored entries (as `ignored_entries`, and also those inside
    /// untracked directories). It also refreshes the index's stat cache, as `git status` does: in
    /// a fresh clone every entry is "racily clean" (written in the same second as the index), so
    /// until then every status and diff would read and hash every tracked file (2 s on 20,000
    /// files).
    pub fn intake_status(&self) -> Result<(Vec<String>, Vec<String>)> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(true)
            .recurse_ignored_dirs(false)
            .update_index(true);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        let (mut dirty, mut ignored) = (Vec::new(), Vec::new());
        for s in statuses.iter().filter(|s| s.status() != git2::Status::CURRENT) {
            let Ok(path) = s.path() else { continue };
            let path = path.trim_end_matches('/');
            if self.is_excluded(path) {
                continue;
            }
            if s.status().is_ignored() { &mut ignored } else { &mut dirty }.push(path.to_string());
        }
        Ok((dirty, ignored))
    }

    /// What the model's file tools may not write, as the jail keeps it from commands: hone's own
    /// paths (excluded), ignored entries (those from before the run, and what setup made), and
    /// setup's other leftovers (artifacts so far). Read when the tools start, after setup.
    pub fn protected_entries(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = self.excluded.iter().cloned().collect();
        out.extend(self.kept.lock().map(|k| k.clone()).unwrap_or_default());
        out.extend(self.artifacts.lock().map(|a| a.clone()).unwrap_or_default());
        out.extend(self.ignored_entries()?);
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Remove ignored entries that are not in `before`: what the run left in ignored paths.
    /// Nothing is followed: a symlink is removed itself, and a path under one is left alone.
    pub fn remove_new_ignored(&self, before: &[String]) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for rel in self.ignored_entries()? {
            if before.contains(&rel) || before.iter().any(|b| rel.starts_with(&format!("{b}/"))) {
                continue;
            }
            let gone = crate::safe_fs::remove_beneath(&self.root, &rel);
            if gone.is_ok_and(|n| n > 0) {
                removed.push(rel);
            }
        }
        Ok(removed)
    }
}
