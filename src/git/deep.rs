//! Directories nested deeper than libgit2 walks: its work-tree iterator stops at 100 levels
//! ("directory nesting too deep"), so one such directory a command made would make every status,
//! diff and checkout of the work tree fail, and the restore would leave the run's tree in the
//! user's checkout. Before hone restores or rolls back, directories that deep are removed by
//! descriptor (nothing followed). None of them was there at intake (intake walked the whole
//! tree), except in what hone keeps: its own paths and the ignored entries from before the run,
//! which are not entered.

use super::Workspace;
use crate::error::Result;
use git2::Tree;
use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A directory this many levels below the root (or deeper) is removed, unless the tree has it:
/// a margin under libgit2's 100.
const PRUNE_AT: usize = 96;

impl Workspace {
    /// Remove the directories at depth `PRUNE_AT` that `tree` does not have; their paths.
    pub(super) fn prune_deep(&self, tree: &Tree<'_>) -> Result<Vec<String>> {
        let io = |e: std::io::Error| {
            crate::error::HoneError::new(
                crate::error::Code::Io,
                format!("cannot remove a deeply nested directory: {e}"),
            )
        };
        let root: OwnedFd = std::fs::File::open(&self.root).map_err(io)?.into();
        let mut removed = Vec::new();
        self.prune_in(&root, Path::new(""), tree, &mut removed).map_err(io)?;
        if !removed.is_empty() {
            tracing::warn!("removed directories nested deeper than git walks: {removed:?}");
        }
        Ok(removed)
    }

    /// hone's own paths and the ignored entries from before the run: the pass does not enter them.
    fn is_hones_or_kept(&self, rel: &str) -> bool {
        let under = |e: &String| rel == e || rel.starts_with(&format!("{e}/"));
        self.excluded.iter().any(under) || self.kept.lock().is_ok_and(|k| k.iter().any(under))
    }

    fn prune_in(&self, dir: &OwnedFd, rel: &Path, tree: &Tree<'_>, removed: &mut Vec<String>) -> std::io::Result<()> {
        let depth = rel.components().count();
        for name in subdirs(dir)? {
            let child: PathBuf = rel.join(OsStr::from_bytes(name.to_bytes()));
            let shown = child.to_string_lossy().into_owned();
            if (depth == 0 && name.to_bytes() == b".git") || self.is_hones_or_kept(&shown) {
                continue;
            }
            if depth + 1 >= PRUNE_AT && tree.get_path(&child).is_err() {
                crate::safe_fs::remove_tree_c(dir, &name)?;
                removed.push(shown);
                continue;
            }
            let Ok(sub) = crate::safe_fs::open_subdir(dir, &name) else { continue };
            self.prune_in(&sub, &child, tree, removed)?;
        }
        Ok(())
    }
}

/// The names of the directories (not links) in `dir`, and of entries whose type the file system
/// does not tell (opening one that is not a directory fails).
fn subdirs(dir: &OwnedFd) -> std::io::Result<Vec<CString>> {
    let again = crate::safe_fs::open_subdir(dir, c".")?;
    Ok(nix::dir::Dir::from_fd(again)
        .map_err(std::io::Error::from)?
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| matches!(e.file_type(), Some(nix::dir::Type::Directory) | None))
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.to_bytes() != b"." && n.to_bytes() != b"..")
        .collect())
}
