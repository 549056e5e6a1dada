//! Symlinks that stand where a tree hone is about to write has a directory or a plain file are
//! removed (the link itself, never its target) before libgit2 writes the work tree: libgit2's
//! checkout and apply write through a symlinked directory, so a link a command or a setup script
//! put in place of `src/` would have hone write `src/*` wherever it points, on the host.
//!
//! Nothing can plant a link between this and the write: no command of the run is alive while
//! hone restores, rolls back or applies saved work (each command's processes end with it, the
//! MCP servers see the repository read-only), so the tree is hone's alone.
//!
//! What the index has and the tree does not (a checkpoint staged the model's new `d/x`, then a
//! command swapped `d` for a link) is dropped from the index first: libgit2's checkout would
//! otherwise have to delete `d/x` under the link, and leaves it staged in the user's index.

use super::Workspace;
use crate::error::Result;
use git2::{ObjectType, Tree, TreeWalkMode, TreeWalkResult};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A git file mode for a symlink.
const LINK_MODE: i32 = 0o120000;

impl Workspace {
    /// Remove every symlink in the work tree at a path where `tree` has a directory or a file
    /// that is not a link; the repo-relative paths of the links removed. Directories of `tree`
    /// that are not real directories in the work tree are not descended into, so every path
    /// looked at lies under real directories only.
    pub(super) fn unlink_planted(&self, tree: &Tree<'_>) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        let mut failed = None;
        tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            let rel: PathBuf = [OsStr::new(dir), OsStr::from_bytes(entry.name_bytes())].iter().collect();
            let path = self.root.join(&rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else { return TreeWalkResult::Skip };
            let link_in_tree = entry.filemode() == LINK_MODE;
            match entry.kind() {
                Some(ObjectType::Tree) if meta.is_dir() => TreeWalkResult::Ok,
                Some(ObjectType::Tree | ObjectType::Blob) if meta.file_type().is_symlink() && !link_in_tree => {
                    match std::fs::remove_file(&path) {
                        Ok(()) => removed.push(rel.to_string_lossy().into_owned()),
                        Err(e) => failed = Some(e),
                    }
                    TreeWalkResult::Skip
                }
                _ => TreeWalkResult::Skip,
            }
        })?;
        if let Some(e) = failed {
            let msg = format!("cannot remove a symlink that stands where the repository has a file: {e}");
            return Err(crate::error::HoneError::new(crate::error::Code::Io, msg));
        }
        if !removed.is_empty() {
            tracing::warn!("removed symlinks that stood where the repository has files or directories: {removed:?}");
        }
        Ok(removed)
    }

    /// Drop from the index every entry `tree` does not have, so that a checkout of `tree` finds
    /// nothing of the run's to delete (what the work tree still holds is untracked, for
    /// `remove_untracked`, which reaches nothing through a link).
    pub(super) fn unstage_all_but(&self, tree: &Tree<'_>) -> Result<()> {
        let mut index = self.repo.index()?;
        let stray: Vec<Vec<u8>> = index
            .iter()
            .map(|e| e.path)
            .filter(|p| tree.get_path(std::path::Path::new(OsStr::from_bytes(p))).is_err())
            .collect();
        if stray.is_empty() {
            return Ok(());
        }
        for p in &stray {
            index.remove_path(std::path::Path::new(OsStr::from_bytes(p)))?;
        }
        index.write()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    /// A repository with `src/lib.txt`, `top.txt` and a tracked link `ok -> top.txt`.
    fn repo() -> (tempfile::TempDir, Workspace, git2::Oid) {
        crate::git::tests::fixture(|d| {
            std::fs::create_dir_all(d.join("src/deep")).unwrap();
            std::fs::write(d.join("src/lib.txt"), "lib\n").unwrap();
            std::fs::write(d.join("src/deep/d.txt"), "d\n").unwrap();
            std::fs::write(d.join("top.txt"), "top\n").unwrap();
            symlink("top.txt", d.join("ok")).unwrap();
        })
    }

    fn swap_for_link(root: &Path, rel: &str, to: &Path) {
        let p = root.join(rel);
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
        symlink(to, p).unwrap();
    }

    #[test]
    fn links_in_place_of_tracked_entries_go_and_tracked_links_stay() {
        let (dir, ws, oid) = repo();
        let outside = tempfile::tempdir().unwrap();
        swap_for_link(dir.path(), "src/deep", outside.path());
        swap_for_link(dir.path(), "top.txt", &outside.path().join("victim"));
        symlink(outside.path(), dir.path().join("untracked")).unwrap();
        let tree = ws.repo.find_commit(oid).unwrap().tree().unwrap();
        let mut removed = ws.unlink_planted(&tree).unwrap();
        removed.sort();
        assert_eq!(removed, ["src/deep", "top.txt"]);
        assert!(
            std::fs::symlink_metadata(dir.path().join("ok")).unwrap().file_type().is_symlink(),
            "tracked link kept"
        );
        assert!(dir.path().join("untracked").exists(), "untracked entries are the restore's business");
        ws.reset_worktree_to(oid).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("src/deep/d.txt")).unwrap(), "d\n");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
    }

    #[test]
    fn a_whole_top_directory_swapped_is_skipped_below() {
        let (dir, ws, oid) = repo();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("deep")).unwrap();
        symlink(outside.path(), outside.path().join("deep/loop")).unwrap();
        swap_for_link(dir.path(), "src", outside.path());
        let tree = ws.repo.find_commit(oid).unwrap().tree().unwrap();
        assert_eq!(ws.unlink_planted(&tree).unwrap(), ["src"], "only the link itself; nothing below it is looked at");
        assert!(outside.path().join("deep/loop").exists());
    }
}
