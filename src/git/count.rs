//! The changed files, listed with an early stop: a new directory is walked (not followed through
//! a symlink, ignored files skipped as git skips them) only until one file more than allowed has
//! been seen, or new files of more bytes than allowed, so a change of 400,000 files (or of a
//! 600 MB file) is known to be too large after a few hundred names, before anything reads,
//! diffs, hashes or saves it.

use super::Workspace;
use crate::error::Result;

/// Changed files as far as they were counted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Repo-relative paths, at most `cap + 1`, in the order git lists them.
    pub files: Vec<String>,
    /// The size of the new (untracked) files among them.
    pub new_bytes: u64,
    /// More than `cap` files, or new files of more than the byte cap: `files` is only the start.
    pub over: bool,
    /// A new directory the count could not walk whole (an ignore file in it is not a regular
    /// file, which hone does not read): it cannot be told small enough.
    pub uncountable: Option<String>,
}

impl Workspace {
    /// The changed files (modified, deleted and new, with new directories walked), stopping
    /// once more than `cap` have been seen or the new ones hold more than `max_bytes`.
    pub fn count_changed(&self, cap: usize, max_bytes: u64) -> Result<Counted> {
        let mut c = Counted::default();
        for (entry, new) in self.dirty_raw()? {
            let path = self.root.join(&entry);
            let meta = std::fs::symlink_metadata(&path);
            if meta.as_ref().is_ok_and(|m| m.is_dir()) {
                // A directory left out (an ignore file in it is a link, say) is not counted:
                // the count cannot be trusted, and the change is taken as too large.
                let walk = crate::tools::walk::Walk::new(&path);
                c = self.count_walked(&walk, c, cap, max_bytes);
                if walk.skipped() {
                    c.uncountable = Some(entry.to_string_lossy().into_owned());
                    c.over = true;
                    return Ok(c);
                }
            } else {
                if new {
                    c.new_bytes += meta.map(|m| m.len()).unwrap_or(0);
                }
                c.files.push(entry.to_string_lossy().into_owned());
            }
            if c.files.len() > cap || c.new_bytes > max_bytes {
                c.files.truncate(cap + 1);
                c.over = true;
                return Ok(c);
            }
        }
        Ok(c)
    }

    /// `c` with what `walk` finds added, until more than `cap` files or `max_bytes` are seen.
    fn count_walked(&self, walk: &crate::tools::walk::Walk, c: Counted, cap: usize, max_bytes: u64) -> Counted {
        use crate::tools::walk::{Entry, Step};
        use std::sync::{Mutex, PoisonError};
        let seen = Mutex::new(c);
        walk.run(|| {
            let (seen, root) = (&seen, &self.root);
            move |e: &Entry| {
                let Ok(rel) = e.path().strip_prefix(root) else { return Step::Continue };
                if e.file_type().is_dir() {
                    return Step::Continue;
                }
                let size = e.metadata().map(|m| m.len()).unwrap_or(0);
                let mut c = seen.lock().unwrap_or_else(PoisonError::into_inner);
                c.new_bytes += size;
                c.files.push(rel.to_string_lossy().into_owned());
                if c.files.len() > cap || c.new_bytes > max_bytes { Step::Quit } else { Step::Continue }
            }
        });
        seen.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Workspace) {
        let (dir, ws, _) = crate::git::tests::fixture(|d| {
            std::fs::write(d.join("a.txt"), "a\n").unwrap();
            std::fs::write(d.join(".gitignore"), "*.log\n").unwrap();
        });
        (dir, ws)
    }

    #[test]
    fn counts_new_directories_file_by_file_and_stops_past_the_cap() {
        let (dir, ws) = repo();
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        std::fs::create_dir_all(dir.path().join("many/sub")).unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("many/sub/f{i}")), "x").unwrap();
        }
        std::fs::write(dir.path().join("many/skip.log"), "ignored").unwrap();
        std::fs::create_dir_all(dir.path().join(".hone/reports")).unwrap();
        std::fs::write(dir.path().join(".hone/reports/r.json"), "{}").unwrap();
        let all = ws.count_changed(100, u64::MAX).unwrap();
        assert!(!all.over);
        assert_eq!(all.files.len(), 51, "a.txt and 50 new files; not the ignored one or .hone: {:?}", all.files);
        assert!(all.files.contains(&"a.txt".to_string()) && all.files.contains(&"many/sub/f7".to_string()));
        let some = ws.count_changed(10, u64::MAX).unwrap();
        assert!(some.over);
        assert_eq!(some.files.len(), 11);
        std::fs::write(dir.path().join("big.bin"), vec![0u8; 4096]).unwrap();
        let heavy = ws.count_changed(1000, 4000).unwrap();
        assert!(heavy.over && heavy.new_bytes > 4000, "new files of more bytes than allowed: {heavy:?}");
    }

    #[test]
    fn a_link_to_a_directory_is_one_file_and_not_walked() {
        let (dir, ws) = repo();
        let outside = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(outside.path().join(format!("o{i}")), "x").unwrap();
        }
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let c = ws.count_changed(5, u64::MAX).unwrap();
        assert_eq!((c.files, c.over), (vec!["out".to_string()], false));
    }

    #[test]
    fn a_directory_whose_ignore_file_is_a_link_cannot_be_counted() {
        let (dir, ws) = repo();
        std::fs::create_dir_all(dir.path().join("n/sub")).unwrap();
        std::fs::write(dir.path().join("n/sub/f"), "x").unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("n/sub/.gitignore")).unwrap();
        let c = ws.count_changed(100, u64::MAX).unwrap();
        assert!(c.over, "{c:?}");
        assert_eq!(c.uncountable.as_deref(), Some("n"));
    }
}
