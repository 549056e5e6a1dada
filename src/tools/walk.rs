//! How hone walks the work tree on the host (the search tools, the repo map, the count of a new
//! directory): `.gitignore` and `.ignore` respected as git and ripgrep do, hidden files seen,
//! `.git` skipped, symlinks not followed. The `ignore` crate opens each ignore file it meets and
//! reads it to the end, through a symlink: a command's `.ignore -> /dev/zero` would fill hone's
//! memory, `-> /dev/tty` or a pipe of hone's would block it, `-> ~/.netrc` would read a file
//! outside the repository. So an ignore file that is not a regular file is never read: a
//! directory that has one is not entered, and when the walk's start or a directory above it has
//! one, no ignore file is read at all.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The ignore files the walk reads in each directory.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];

/// Whether every ignore file in `dir` is a regular file (or absent).
fn plain_ignores(dir: &Path) -> bool {
    IGNORE_FILES.iter().all(|n| std::fs::symlink_metadata(dir.join(n)).map_or(true, |m| m.is_file()))
}

/// A walk of `base`, as every search of the work tree walks.
pub fn walker(base: &Path) -> ignore::WalkBuilder {
    walker_flagged(base).0
}

/// [`walker`], and a flag set when the walk left out a directory because an ignore file in it is
/// not a regular file (what counts files must then not trust its count).
pub fn walker_flagged(base: &Path) -> (ignore::WalkBuilder, Arc<AtomicBool>) {
    let skipped = Arc::new(AtomicBool::new(false));
    let mut w = ignore::WalkBuilder::new(base);
    w.hidden(false).require_git(false);
    let reads = base.ancestors().all(plain_ignores);
    if !reads {
        w.git_ignore(false).ignore(false).parents(false);
    }
    let flag = skipped.clone();
    w.filter_entry(move |e| {
        if e.file_name() == ".git" {
            return false;
        }
        let dir = e.depth() > 0 && e.file_type().is_some_and(|t| t.is_dir());
        if reads && dir && !plain_ignores(e.path()) {
            flag.store(true, Ordering::Relaxed);
            return false;
        }
        true
    });
    (w, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(base: &Path) -> Vec<String> {
        let mut out: Vec<String> = walker(base)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| e.path().strip_prefix(base).unwrap().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn an_ignore_file_that_is_a_link_is_never_read() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("patterns"), "b.txt\n").unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        for f in ["a.txt", "b.txt", "sub/b.txt", "sub/c.txt"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "a.txt\n").unwrap();
        assert_eq!(listed(root), [".gitignore", "b.txt", "sub/b.txt", "sub/c.txt"], "the control");
        // In a directory below: that directory is left out, and the walk says so.
        std::os::unix::fs::symlink(outside.path().join("patterns"), root.join("sub/.ignore")).unwrap();
        assert_eq!(listed(root), [".gitignore", "b.txt"]);
        let (w, skipped) = walker_flagged(root);
        assert_eq!(w.build().count(), 3);
        assert!(skipped.load(Ordering::Relaxed));
        // At the start (or above it): no ignore file is read.
        std::os::unix::fs::symlink("/dev/zero", root.join(".ignore")).unwrap();
        assert_eq!(listed(&root.join("sub")), ["b.txt", "c.txt"]);
        assert_eq!(listed(root), [".gitignore", "a.txt", "b.txt", "sub/b.txt", "sub/c.txt"]);
    }
}
