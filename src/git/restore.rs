//! Putting the work tree back: to a checkpoint (rollback) or to the user's original checkout
//! (restore), never writing or removing through a link a command planted, and removing what the
//! run left by descriptor.

use super::{OriginalHead, Workspace};
use crate::error::{Code, HoneError, Result};
use git2::{BranchType, Oid};
use std::path::{Path, PathBuf};

impl Workspace {
    /// Make the work tree match commit `oid` exactly (for rollback to a checkpoint): tracked files
    /// are restored and files created since are removed. HEAD does not move. A symlink a command
    /// left where the commit has a file or directory is removed first, never written through.
    pub fn reset_worktree_to(&self, oid: Oid) -> Result<()> {
        let tree = self.repo.find_commit(oid)?.tree()?;
        // What no checkpoint saves, no rollback undoes (`withheld.rs`).
        let held = self.hold_withheld(&tree)?;
        self.unlink_planted(&tree)?;
        self.unstage_all_but(&tree)?;
        self.prune_deep(&tree)?;
        let mut co = git2::build::CheckoutBuilder::new();
        co.force().remove_untracked(false);
        self.repo.checkout_tree(tree.as_object(), Some(&mut co))?;
        let mut index = self.repo.index()?;
        index.read_tree(&tree)?;
        index.write()?;
        self.remove_untracked(&tree, vec![])?;
        self.put_back(held);
        Ok(())
    }

    /// Remove what the work tree has and `tree` does not (and is not excluded or ignored), plus
    /// `more` (the checks' artifacts): a new directory whole, in one removal by descriptor,
    /// unless something hone keeps (an excluded path, an ignored entry from before the run) lies
    /// beneath it; then only its new files, one by one. Nothing is followed through a symlink.
    fn remove_untracked(&self, tree: &git2::Tree<'_>, more: Vec<String>) -> Result<()> {
        let kept: Vec<String> =
            self.excluded.iter().cloned().chain(self.kept.lock().map(|k| k.clone()).unwrap_or_default()).collect();
        let dirty = self.dirty_raw()?.into_iter().map(|(p, _)| p);
        for rel in dirty.chain(more.into_iter().map(PathBuf::from)) {
            if tree.get_path(&rel).is_ok() {
                continue;
            }
            let rel = rel.as_path();
            let shown = rel.to_string_lossy();
            let holds_kept = kept.iter().any(|k| k.starts_with(&format!("{shown}/")));
            if !holds_kept {
                let _ = crate::safe_fs::remove_beneath(&self.root, rel);
                continue;
            }
            for inner in self.dirty_paths_under(&shown)? {
                if tree.get_path(Path::new(&inner)).is_err() {
                    let _ = crate::safe_fs::remove_beneath(&self.root, &inner);
                }
            }
        }
        Ok(())
    }

    /// Put HEAD back where it was and make the work tree match it, removing files the run
    /// created. Ignored files and excluded paths are left alone. Symlinks a command or setup left
    /// where HEAD has a file or directory are removed first (their paths are returned), so the
    /// checkout never writes through one; nothing removed is reached through a symlink.
    pub fn restore(&self, original: &OriginalHead) -> Result<Vec<String>> {
        match original {
            OriginalHead::Branch(b) => {
                let r = self.repo.find_branch(b, BranchType::Local)?;
                let name =
                    r.get().name().map_err(|_| HoneError::new(Code::Git, "the branch name is not UTF-8"))?.to_string();
                self.repo.set_head(&name)?;
            }
            OriginalHead::Detached(oid) => self.repo.set_head_detached(Oid::from_str(oid)?)?,
        }
        let head = self.repo.head()?.peel_to_tree()?;
        let unlinked = self.unlink_planted(&head)?;
        self.unstage_all_but(&head)?;
        self.prune_deep(&head)?;
        let mut co = git2::build::CheckoutBuilder::new();
        co.force();
        self.repo.checkout_head(Some(&mut co))?;
        // What a check or setup left: removed, unless HEAD has it (a tracked file they rewrote,
        // like a lockfile, which the checkout above has just put back).
        let artifacts = self.take_artifacts();
        self.remove_untracked(&head, artifacts)?;
        Ok(unlinked)
    }
}
