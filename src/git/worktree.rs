//! Linked worktrees of the repository, one for each try of a job (issue 45): each detached at
//! the run's base commit and sharing the object store and the refs (a try's snapshot is seen
//! from the main checkout at once, with no fetch), and removed without following anything a
//! command left in it.

use super::Workspace;
use crate::error::{Code, HoneError, Result};
use git2::{Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};
use std::path::Path;

/// What names the worktrees of run `run_id`'s tries: `hone-try-<its first 8 characters>-`.
pub fn try_prefix(run_id: &str) -> String {
    format!("hone-try-{}-", run_id.chars().take(8).collect::<String>())
}

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
        let root = path.canonicalize();
        let (repo, root) = match (opened, root) {
            (Ok(repo), Ok(root)) => (repo, root),
            (opened, root) => {
                // Half made: the tree and its branch go again, as if never added.
                let _ = self.remove_tree(name);
                let _ = branch.delete();
                return Err(match opened {
                    Err(e) => fail("add or detach", e),
                    Ok(_) => HoneError::new(
                        Code::Io,
                        format!(
                            "cannot resolve {}: {}",
                            path.display(),
                            root.err().map(|e| e.to_string()).unwrap_or_default()
                        ),
                    ),
                });
            }
        };
        branch.delete().map_err(|e| fail("delete the branch", e))?;
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

    /// The worktrees a killed run's tries left (named `prefix`…): the work each left saved on
    /// `<saved>-try-<k>` (as the killed run's checkout is on `saved`), then the tree removed, and
    /// the private place that held the trees when nothing else is in it. The refs saved.
    pub fn recover_trees(&self, prefix: &str, saved: &str) -> Vec<String> {
        let mut refs = Vec::new();
        for name in self.trees_named(prefix) {
            let k = name.trim_start_matches(prefix).to_string();
            let path = self.repo.find_worktree(&name).ok().map(|t| t.path().to_path_buf());
            if let Some(path) = path.as_deref().filter(|p| p.is_dir()) {
                let refname = format!("{saved}-try-{k}");
                match self.save_tree(path, &refname, &name) {
                    Ok(true) => refs.push(refname),
                    Ok(false) => {}
                    Err(e) => {
                        // Nothing is lost: a tree whose work cannot be saved stays where it is.
                        let at = path.display();
                        tracing::warn!(
                            "could not save the work of the killed run's tree `{name}` ({}); it was left at {at}: look at it, then `git worktree remove --force {at}`",
                            e.message
                        );
                        continue;
                    }
                }
            }
            if let Err(e) = self.remove_tree(&name) {
                tracing::warn!("{}", e.message);
            }
            // The place that held the trees, once empty (never followed: `remove_dir` removes an
            // empty directory or nothing).
            if let Some(place) = path
                .as_deref()
                .and_then(Path::parent)
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("{prefix}trees-"))))
            {
                let _ = std::fs::remove_dir(place);
            }
        }
        refs
    }

    /// The work in the tree at `path` (a dirty tree's, as a commit on its HEAD) saved on
    /// `refname`; false when it left none.
    fn save_tree(&self, path: &Path, refname: &str, name: &str) -> Result<bool> {
        let tree = Workspace {
            repo: Repository::open(path)?,
            root: path.to_path_buf(),
            excluded: self.excluded.clone(),
            artifacts: Default::default(),
            kept: Default::default(),
            withheld: self.withheld.clone(),
        };
        let Some(head) = tree.repo.head().ok().and_then(|h| h.peel_to_commit().ok()) else { return Ok(false) };
        if tree.dirty_entries()?.is_empty() {
            return Ok(false);
        }
        let staged = tree.repo.find_tree(tree.stage_all(head.id())?)?;
        let sig = git2::Signature::now("hone", "hone@users.noreply.github.com")?;
        let message = format!("hone: the work of a killed run's try (`{name}`), saved by the next run\n");
        let oid = tree.repo.commit(None, &sig, &sig, &message, &staged, &[&head])?;
        self.repo.reference(refname, oid, true, "hone: save the work of a killed run's try")?;
        Ok(true)
    }

    /// The names of this repository's worktrees that start with `prefix` (a killed run's tries).
    pub fn trees_named(&self, prefix: &str) -> Vec<String> {
        let Ok(names) = self.repo.worktrees() else { return Vec::new() };
        (0..names.len())
            .filter_map(|i| names.get(i).ok().flatten())
            .filter(|n| n.starts_with(prefix))
            .map(str::to_string)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
#[path = "worktree_tests.rs"]
mod tests;
