//! Ignored paths: what was there before the run, and removing what the run added.

use super::Workspace;
use crate::error::Result;
use git2::StatusOptions;

impl Workspace {
    /// Ignored files and directories in the work tree (a directory stands for its contents),
    /// repo-relative, minus excluded paths.
    pub fn ignored_entries(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        // The index's stat cache is refreshed here too (see `dirty_paths`): this runs at intake
        // even when a dirty tree is allowed.
        opts.include_untracked(false).include_ignored(true).recurse_ignored_dirs(false).update_index(true);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status().is_ignored())
            .filter_map(|s| s.path().ok().map(|p| p.trim_end_matches('/').to_string()))
            .filter(|p| !self.is_excluded(p))
            .collect())
    }

    /// Remove ignored entries that are not in `before`: what the run left in ignored paths.
    /// Nothing is followed: a symlink is removed itself, and a path under one is left alone.
    pub fn remove_new_ignored(&self, before: &[String]) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for rel in self.ignored_entries()? {
            if before.contains(&rel) || before.iter().any(|b| rel.starts_with(&format!("{b}/"))) {
                continue;
            }
            let p = self.root.join(&rel);
            let parent_is_real = p.parent().is_some_and(|parent| {
                parent.strip_prefix(&self.root).is_ok_and(|r| {
                    r.ancestors().all(|a| {
                        a.as_os_str().is_empty()
                            || std::fs::symlink_metadata(self.root.join(a)).is_ok_and(|m| m.is_dir())
                    })
                })
            });
            if !parent_is_real {
                continue;
            }
            let gone = match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                Ok(_) => std::fs::remove_file(&p),
                Err(_) => continue,
            };
            if gone.is_ok() {
                removed.push(rel);
            }
        }
        Ok(removed)
    }
}
