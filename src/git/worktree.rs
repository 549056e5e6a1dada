//! Linked worktrees of the repository, one for each try of a job (issue 45): each detached at
//! the run's base commit and sharing the object store and the refs (a try's snapshot is seen
//! from the main checkout at once, with no fetch), and removed without following anything a
//! command left in it.

use super::Workspace;
use crate::error::{Code, HoneError, Result};
use git2::{Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};
use std::path::Path;

impl Workspace {
    /// A worktree named `name` at `path` (which must not exist), its HEAD detached at `at` and
    /// its files checked out; the handle over it never commits or counts what this one
    /// excludes, and withholds what this one withholds.
    pub fn add_tree(&self, name: &str, path: &Path, at: Oid) -> Result<Workspace> {
        let fail = |what: &str, e: git2::Error| {
            HoneError::new(Code::Git, format!("cannot {what} for the worktree `{name}`: {}", e.message()))
        };
        if path.symlink_metadata().is_ok() {
            return Err(HoneError::new(
                Code::Git,
                format!("the worktree `{name}`'s place {} is taken", path.display()),
            ));
        }
        let commit = self.repo.find_commit(at).map_err(|e| fail("find the base commit", e))?;
        // libgit2 adds a worktree on a branch: a throwaway one of that name (never an existing
        // branch), deleted once the tree's HEAD is detached.
        let mut branch = self.repo.branch(name, &commit, false).map_err(|e| fail("make a branch", e))?;
        let added = {
            let mut opts = WorktreeAddOptions::new();
            opts.reference(Some(branch.get()));
            self.repo.worktree(name, path, Some(&opts)).map(drop)
        };
        let opened =
            added.and_then(|()| Repository::open(path)).and_then(|repo| repo.set_head_detached(at).map(|()| repo));
        let deleted = branch.delete();
        let repo = opened.map_err(|e| fail("add or detach", e))?;
        deleted.map_err(|e| fail("delete the branch", e))?;
        let root = path
            .canonicalize()
            .map_err(|e| HoneError::new(Code::Io, format!("cannot resolve {}: {e}", path.display())))?;
        Ok(Workspace {
            repo,
            root,
            excluded: self.excluded.clone(),
            artifacts: Default::default(),
            kept: Default::default(),
            withheld: self.withheld.clone(),
        })
    }

    /// Remove the worktree `name`: its files first, by descriptor (a link a command left in it
    /// is removed, never followed), then git's record of it. A worktree already gone is no error.
    pub fn remove_tree(&self, name: &str) -> Result<()> {
        let fail =
            |what: &str, e: String| HoneError::new(Code::Git, format!("cannot {what} the worktree `{name}`: {e}"));
        let Ok(tree) = self.repo.find_worktree(name) else { return Ok(()) };
        let path = tree.path().to_path_buf();
        if let (Some(parent), Some(base)) = (path.parent(), path.file_name()) {
            match std::fs::File::open(parent) {
                Ok(dir) => {
                    crate::safe_fs::remove_tree_at(&dir, &base.to_string_lossy())
                        .map_err(|e| fail("remove", e.to_string()))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(fail("open the place of", e.to_string())),
            }
        }
        let mut prune = WorktreePruneOptions::new();
        prune.valid(true).locked(false).working_tree(false);
        tree.prune(Some(&mut prune)).map_err(|e| fail("prune", e.message().to_string()))
    }

    /// Delete every ref whose name starts with `prefix` (a place in hone's own namespace).
    pub fn delete_refs_under(&self, prefix: &str) -> Result<()> {
        let names: Vec<String> = self
            .repo
            .references_glob(&format!("{prefix}*"))?
            .names()
            .filter_map(|n| n.ok().map(str::to_string))
            .collect();
        for name in names {
            if let Ok(mut r) = self.repo.find_reference(&name) {
                r.delete()?;
            }
        }
        Ok(())
    }

    /// The names of this repository's worktrees that start with `prefix` (a killed run's tries).
    pub fn trees_named(&self, prefix: &str) -> Vec<String> {
        let Ok(names) = self.repo.worktrees() else { return Vec::new() };
        (0..names.len())
            .filter_map(|i| names.get(i).ok().flatten())
            .filter(|n| n.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
#[path = "worktree_tests.rs"]
mod tests;
