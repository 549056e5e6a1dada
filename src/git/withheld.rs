//! Paths hone never stages: what the jail hides and the policy denies reading. A checkpoint
//! (`refs/hone/<job>/checkpoints/N`), the saved work of a failed run (`refs/hone/<job>/failed`)
//! and hone's commit hold each such path as the base has it (or not at all), whatever the work
//! tree or the index holds there, and the change never lists it.

use super::Workspace;
use crate::error::Result;
use git2::{Index, Oid};
use std::path::Path;
use std::sync::Arc;

/// Whether a repo-relative path is withheld from what hone stages.
pub type Withheld = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl Workspace {
    /// Stage the whole work tree (minus excluded paths) and write it as a tree. A withheld path
    /// (below) is not staged, and stays in the tree only as `base` has it.
    pub(super) fn stage_all(&self, base: Oid) -> Result<Oid> {
        let mut index = self.repo.index()?;
        let skip = |p: &Path, _: &[u8]| -> i32 {
            let rel = p.to_string_lossy();
            i32::from(self.is_excluded(&rel) || self.is_withheld(&rel))
        };
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, Some(&mut |p: &Path, m: &[u8]| skip(p, m)))?;
        index.update_all(["*"], Some(&mut |p: &Path, m: &[u8]| skip(p, m)))?;
        self.withhold_in(&mut index, base)?;
        index.write()?;
        Ok(index.write_tree()?)
    }

    /// Withhold what `withheld` says from every checkpoint, saved work and commit from now on
    /// (set at intake, once the jail's hidden and read-denied paths are known; shared with the
    /// handles `blocking` opens).
    pub fn withhold(&self, withheld: Withheld) {
        if let Ok(mut w) = self.withheld.write() {
            *w = Some(withheld);
        }
    }

    /// Whether `rel` (repo-relative) is withheld. When the predicate cannot be read, everything is.
    pub(super) fn is_withheld(&self, rel: &str) -> bool {
        match self.withheld.read() {
            Ok(w) => w.as_ref().is_some_and(|f| f(rel)),
            Err(_) => true,
        }
    }

    /// Put every withheld entry of `index` back as the commit `base` has it: its blob there, or
    /// no entry when `base` has none (a file the user staged before the run, or a tracked one
    /// whose changes were staged).
    pub(super) fn withhold_in(&self, index: &mut Index, base: Oid) -> Result<()> {
        let tree = self.repo.find_commit(base)?.tree()?;
        let withheld: Vec<git2::IndexEntry> =
            index.iter().filter(|e| self.is_withheld(&String::from_utf8_lossy(&e.path))).collect();
        for mut entry in withheld {
            let path = std::path::PathBuf::from(String::from_utf8_lossy(&entry.path).into_owned());
            match tree.get_path(&path) {
                Ok(at_base) if at_base.id() == entry.id && at_base.filemode() as u32 == entry.mode => {}
                Ok(at_base) => {
                    entry.id = at_base.id();
                    entry.mode = at_base.filemode() as u32;
                    // No stat data: git reads the file again instead of taking it as the blob.
                    (entry.file_size, entry.mtime, entry.ctime) =
                        (0, git2::IndexTime::new(0, 0), git2::IndexTime::new(0, 0));
                    index.add(&entry)?;
                }
                Err(_) => index.remove_path(&path)?,
            }
        }
        Ok(())
    }
}

impl Workspace {
    /// The paths whose index entry differs from `HEAD`'s tree (staged before the run: new,
    /// changed or removed), at most `limit`.
    pub fn staged(&self, limit: usize) -> Result<Vec<String>> {
        let head = self.repo.head().ok().and_then(|h| h.peel_to_tree().ok());
        let diff = self.repo.diff_tree_to_index(head.as_ref(), None, None)?;
        let path = |d: git2::DiffDelta<'_>| {
            d.new_file().path().or(d.old_file().path()).map(|p| p.to_string_lossy().into_owned())
        };
        Ok(diff.deltas().take(limit).filter_map(path).collect())
    }
}

/// The largest withheld file a rollback holds and puts back.
const MAX_HELD: u64 = 16 << 20;

/// A withheld file the index tracks, as the work tree had it before a rollback: its bytes and
/// mode, or `None` when it was not there.
pub(super) struct Held {
    rel: String,
    was: Option<(Vec<u8>, u32)>,
}

impl Workspace {
    /// The withheld files the index tracks, as the work tree has them where that is not what a
    /// checkout of `tree` leaves (regular files only, read without following a link): a
    /// checkpoint does not save them, so a rollback to it must not undo them (`put_back`).
    pub(super) fn hold_withheld(&self, tree: &git2::Tree<'_>) -> Result<Vec<Held>> {
        let index = self.repo.index()?;
        let mut held = Vec::new();
        for e in index.iter() {
            let rel = String::from_utf8_lossy(&e.path).into_owned();
            if !self.is_withheld(&rel) {
                continue;
            }
            let at_tree = tree.get_path(Path::new(&rel)).ok().map(|t| t.id());
            let was = match std::fs::symlink_metadata(self.root.join(&rel)) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound && at_tree.is_some() => None,
                Ok(m) if m.is_file() && m.len() <= MAX_HELD && !unchanged(&e, &m, at_tree) => {
                    match read_beneath(&self.root, &rel) {
                        Ok(b) if Some(Oid::hash_object(git2::ObjectType::Blob, &b)?) != at_tree => {
                            use std::os::unix::fs::PermissionsExt;
                            Some((b, m.permissions().mode() & 0o777))
                        }
                        _ => continue,
                    }
                }
                _ => continue,
            };
            held.push(Held { rel, was });
        }
        Ok(held)
    }

    /// Put back what `hold_withheld` held: each file as it was, or gone when it was not there.
    pub(super) fn put_back(&self, held: Vec<Held>) {
        for Held { rel, was } in held {
            let (parent, name) = split(&rel);
            let done = match was {
                Some((bytes, mode)) => crate::safe_fs::open_existing_dir_below(&self.root, parent)
                    .and_then(|dir| crate::safe_fs::write_at(&dir, name, &bytes, mode)),
                None => crate::safe_fs::remove_beneath(&self.root, &rel).map(|_| ()),
            };
            if let Err(e) = done {
                tracing::warn!("cannot put back `{rel}` after the rollback: {e}");
            }
        }
    }
}

/// Whether the file with metadata `m` is, by the index's stat data for it (`e`), the blob
/// `at_tree`: nothing to hold.
fn unchanged(e: &git2::IndexEntry, m: &std::fs::Metadata, at_tree: Option<Oid>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let stat = (m.len(), m.mtime(), m.mtime_nsec());
    let indexed = (u64::from(e.file_size), i64::from(e.mtime.seconds()), i64::from(e.mtime.nanoseconds()));
    at_tree == Some(e.id) && stat == indexed
}

/// `rel`'s parent directory and name.
fn split(rel: &str) -> (&std::path::Path, &str) {
    match rel.rsplit_once('/') {
        Some((p, n)) => (std::path::Path::new(p), n),
        None => (std::path::Path::new(""), rel),
    }
}

/// The regular file `rel` beneath `root`, reached without following a link.
fn read_beneath(root: &std::path::Path, rel: &str) -> std::io::Result<Vec<u8>> {
    let (parent, name) = split(rel);
    let dir = crate::safe_fs::open_existing_dir_below(root, parent)?;
    crate::safe_fs::read_regular_at(&dir, name, MAX_HELD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A repository whose base holds `a.txt` and `keep.env`, with a work tree that then gets a
    /// new credentials file, a change to `keep.env`, a staged secret and an ordinary change.
    fn dirty() -> (tempfile::TempDir, Workspace, Oid) {
        let (dir, ws, base) = crate::git::tests::fixture(|d| {
            std::fs::write(d.join("a.txt"), "a\n").unwrap();
            std::fs::write(d.join("keep.env"), "BASE=1\n").unwrap();
        });
        let d = dir.path();
        std::fs::write(d.join("gha-creds-1.json"), r#"{"private_key": "k"}"#).unwrap();
        std::fs::write(d.join("keep.env"), "TOKEN=changed\n").unwrap();
        std::fs::write(d.join("staged.key"), "staged secret\n").unwrap();
        let mut index = ws.repo.index().unwrap();
        index.add_path(Path::new("staged.key")).unwrap();
        index.add_path(Path::new("keep.env")).unwrap();
        index.write().unwrap();
        std::fs::write(d.join("a.txt"), "a\nb\n").unwrap();
        (dir, ws, base)
    }

    fn withhold_secrets(ws: &Workspace) {
        ws.withhold(Arc::new(|rel: &str| {
            rel.starts_with("gha-creds-") || rel.ends_with(".env") || rel.ends_with(".key")
        }));
    }

    fn tree_paths(ws: &Workspace, oid: Oid) -> Vec<(String, String)> {
        let tree = ws.repo.find_commit(oid).unwrap().tree().unwrap();
        let mut out = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
            let blob = ws.repo.find_blob(e.id()).map(|b| String::from_utf8_lossy(b.content()).into_owned());
            out.push((format!("{dir}{}", e.name().unwrap_or("")), blob.unwrap_or_default()));
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        out
    }

    #[test]
    fn a_checkpoint_holds_no_withheld_path_but_as_the_base_has_it() {
        let (_dir, ws, base) = dirty();
        withhold_secrets(&ws);
        let oid = ws.snapshot(base, "refs/hone/j/checkpoints/1", "cp", "t", "t@example.com").unwrap();
        let got = tree_paths(&ws, oid);
        assert_eq!(
            got,
            [("a.txt".to_string(), "a\nb\n".to_string()), ("keep.env".to_string(), "BASE=1\n".to_string())],
            "the ordinary change is saved; the credentials file and the staged key are not; the .env is the base's"
        );
        let failed = ws.snapshot(base, "refs/hone/j/failed", "failed", "t", "t@example.com").unwrap();
        assert_eq!(tree_paths(&ws, failed), got, "nor in the saved work of a failed run");
        let commit = ws.commit(base, "c", "t", "t@example.com").unwrap();
        assert_eq!(tree_paths(&ws, commit), got, "nor in hone's commit");
    }

    #[test]
    fn without_a_predicate_everything_is_staged_as_before() {
        let (_dir, ws, base) = dirty();
        let oid = ws.snapshot(base, "refs/hone/j/checkpoints/1", "cp", "t", "t@example.com").unwrap();
        let names: Vec<String> = tree_paths(&ws, oid).into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, ["a.txt", "gha-creds-1.json", "keep.env", "staged.key"]);
    }

    #[test]
    fn a_rollback_keeps_the_credentials_found_at_intake_and_drops_new_withheld_files() {
        let (dir, ws, base) = dirty();
        withhold_secrets(&ws);
        ws.keep(&["gha-creds-1.json".to_string()]);
        let oid = ws.snapshot(base, "refs/hone/j/checkpoints/1", "cp", "t", "t@example.com").unwrap();
        std::fs::write(dir.path().join("made.key"), "made by a command\n").unwrap();
        ws.reset_worktree_to(oid).unwrap();
        assert!(dir.path().join("gha-creds-1.json").exists(), "the file found at intake stays");
        assert!(!dir.path().join("made.key").exists(), "what the run made goes");
        let env = std::fs::read_to_string(dir.path().join("keep.env")).unwrap();
        assert_eq!(env, "TOKEN=changed\n", "a withheld file the checkpoint could not save is left as it is");
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "a\nb\n");
    }

    #[test]
    fn a_rollback_leaves_withheld_tracked_files_as_they_are_and_rewrites_none_unchanged() {
        use std::os::unix::fs::MetadataExt;
        let (dir, ws, base) = crate::git::tests::fixture(|d| {
            std::fs::write(d.join("a.txt"), "a\n").unwrap();
            std::fs::write(d.join("gone.key"), "old key\n").unwrap();
            std::fs::write(d.join("same.key"), "same key\n").unwrap();
        });
        withhold_secrets(&ws);
        std::fs::remove_file(dir.path().join("gone.key")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "b\n").unwrap();
        let oid = ws.snapshot(base, "refs/hone/j/checkpoints/1", "cp", "t", "t@example.com").unwrap();
        let inode = std::fs::metadata(dir.path().join("same.key")).unwrap().ino();
        std::fs::write(dir.path().join("a.txt"), "c\n").unwrap();
        ws.reset_worktree_to(oid).unwrap();
        assert!(!dir.path().join("gone.key").exists(), "deleted before the rollback, deleted after");
        assert_eq!(std::fs::metadata(dir.path().join("same.key")).unwrap().ino(), inode, "not rewritten");
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "b\n");
    }

    #[test]
    fn the_change_never_lists_a_withheld_path() {
        let (_dir, ws, base) = dirty();
        withhold_secrets(&ws);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let measured = ws.changes(base, 1 << 20, true, until).unwrap().unwrap();
        let paths: Vec<&str> = measured.changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a.txt"]);
        assert!(!measured.text.unwrap_or_default().contains("private_key"));
        // Said, not silently dropped: the run warns about each.
        let mut withheld = measured.withheld.clone();
        withheld.sort();
        assert_eq!(withheld, ["gha-creds-1.json", "keep.env", "staged.key"]);
    }
}
