//! A remote on this machine (a path or a `file://` URL), pushed to and fetched from in process
//! by libgit2. git would run `git-receive-pack` or `git-upload-pack` in that repository, and with
//! them its hooks (`pre-receive`, `update`, `post-receive`, `reference-transaction`,
//! `proc-receive`, …) and the programs its config names, on the host; libgit2 runs no program at
//! all. A repository inside the work tree, which the repository's own files could be, is refused.

use crate::error::{Code, HoneError, Result};
use git2::{Oid, Repository, RepositoryOpenFlags};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The path a local `url` names: absolute, `./`/`../` relative to the work tree `root`, or a
/// `file:///` URL. `None` for a network URL.
pub fn path_of(url: &str, root: &Path) -> Option<PathBuf> {
    if let Some(rest) = url.strip_prefix("file://") {
        return Some(PathBuf::from(rest));
    }
    if url.starts_with('/') {
        return Some(PathBuf::from(url));
    }
    (url.starts_with("./") || url.starts_with("../")).then(|| root.join(url))
}

/// A repository on this machine, outside the work tree.
#[derive(Clone, Debug)]
pub struct Local {
    path: PathBuf,
}

/// Stops a long copy: true once the run's budget is spent or it was cancelled.
pub type Stop = Box<dyn Fn() -> bool + Send>;

fn err(what: &str, e: git2::Error) -> HoneError {
    HoneError::new(Code::Git, format!("cannot {what}: {}", e.message()))
}

impl Local {
    /// The repository at `path` (named `shown` in messages). Refused when it does not exist or
    /// lies inside the work tree at `root` (symlinks resolved).
    pub fn new(path: &Path, shown: &str, root: &Path) -> Result<Local> {
        let real = path.canonicalize().map_err(|e| {
            HoneError::new(Code::Git, format!("the local remote `{shown}` cannot be opened: {e}"))
                .hint("point the remote at an existing repository")
        })?;
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if real.starts_with(&root) {
            return Err(HoneError::new(
                Code::Git,
                format!("the remote `{shown}` lies inside the work tree ({}): hone does not push into the repository it works on, whose files a change could make", real.display()),
            )
            .hint("point the remote at a repository outside the work tree"));
        }
        Ok(Local { path: real })
    }

    fn open(&self) -> Result<Repository> {
        Repository::open_ext(&self.path, RepositoryOpenFlags::NO_SEARCH, std::iter::empty::<&std::ffi::OsStr>())
            .map_err(|e| err(&format!("open the local remote {}", self.path.display()), e))
    }

    /// The commit `branch` points at there, if it exists.
    pub fn head(&self, branch: &str) -> Result<Option<String>> {
        let theirs = self.open()?;
        let r = match theirs.find_reference(&format!("refs/heads/{branch}")) {
            Ok(r) => r,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(err("read the remote branch", e)),
        };
        let oid = r.resolve().map_err(|e| err("read the remote branch", e))?.target();
        Ok(oid.map(|o| o.to_string()))
    }

    /// Copy what `oid` needs from `ours` (a repository that has it) and set `branch` to it, if
    /// the branch is still at `expected` (`None`: if it does not exist), atomically.
    pub fn push(&self, ours: &Path, oid: &str, branch: &str, expected: Option<&str>, stop: Stop) -> Result<()> {
        let theirs = self.open()?;
        let name = format!("refs/heads/{branch}");
        if !theirs.is_bare() {
            let checked_out =
                theirs.head().ok().and_then(|h| h.name().ok().map(str::to_string)).as_deref() == Some(name.as_str());
            if checked_out || theirs.worktrees().is_ok_and(|w| !w.is_empty()) {
                return Err(HoneError::new(
                    Code::Git,
                    format!("`{branch}` may be checked out in the local remote {}: hone does not push to a checked-out branch", self.path.display()),
                )
                .hint("use a bare repository (`git init --bare`) as the remote"));
            }
        }
        let oid = Oid::from_str(oid)?;
        let ours = Repository::open_bare(ours).map_err(|e| err("open hone's repository", e))?;
        copy_objects(&ours, &theirs, oid, &stop)?;
        let msg = "hone: push";
        let set = match expected {
            Some(e) => theirs.reference_matching(&name, oid, true, Oid::from_str(e)?, msg),
            None => theirs.reference(&name, oid, false, msg),
        };
        set.map(drop).map_err(|e| match e.code() {
            git2::ErrorCode::Modified | git2::ErrorCode::Exists => HoneError::new(
                Code::Git,
                format!("the push of `{branch}` was refused: the branch moved on the remote since hone read it (the lease is stale)"),
            )
            .hint("run again: someone else pushed to the branch meanwhile"),
            _ => err(&format!("push `{branch}`"), e),
        })
    }

    /// Copy `src_ref` (a ref, or a full commit id) into `ours` as `into` (libgit2's local
    /// transport, in process); returns its commit.
    pub fn fetch(&self, ours: &Path, src_ref: &str, into: &str, stop: Stop) -> Result<String> {
        let ours = Repository::open_bare(ours).map_err(|e| err("open hone's repository", e))?;
        let is_id = src_ref.len() == 40 && src_ref.bytes().all(|c| c.is_ascii_hexdigit());
        if let Some(oid) = is_id.then(|| Oid::from_str(src_ref).ok()).flatten() {
            // The local transport copies only what the remote's refs name: a commit named by its
            // id (reachable or not) is copied object by object, as a push copies.
            let theirs = self.open()?;
            theirs.find_commit(oid).map_err(|e| err(&format!("fetch `{src_ref}`"), e))?;
            copy_objects(&theirs, &ours, oid, &stop)?;
            ours.reference(into, oid, true, "hone: fetch").map_err(|e| err("record the fetched commit", e))?;
            return Ok(oid.to_string());
        }
        let url =
            self.path.to_str().ok_or_else(|| HoneError::new(Code::Git, "the local remote's path is not UTF-8"))?;
        let mut remote = ours.remote_anonymous(url).map_err(|e| err("open the local remote", e))?;
        let mut cb = git2::RemoteCallbacks::new();
        cb.transfer_progress(move |_| !stop());
        let mut opts = git2::FetchOptions::new();
        opts.remote_callbacks(cb).download_tags(git2::AutotagOption::None);
        remote
            .fetch(&[format!("+{src_ref}:{into}")], Some(&mut opts), None)
            .map_err(|e| err(&format!("fetch `{src_ref}`"), e))?;
        let oid = ours.refname_to_id(into).map_err(|e| err("read the fetched commit", e))?;
        Ok(oid.to_string())
    }
}

/// Write the objects `oid` needs that `theirs` lacks (everything reachable from it, less what
/// their refs reach) into `theirs` as one pack.
fn copy_objects(ours: &Repository, theirs: &Repository, oid: Oid, stop: &Stop) -> Result<()> {
    let mut walk = ours.revwalk()?;
    walk.push(oid)?;
    let odb = ours.odb()?;
    for r in theirs.references()?.flatten() {
        if let Some(t) = r.target()
            && odb.exists(t)
        {
            // Only commits can be hidden; a ref to a tag or a tree is simply not used.
            let _ = walk.hide(t);
        }
    }
    let mut pb = ours.packbuilder()?;
    pb.insert_walk(&mut walk)?;
    if pb.object_count() == 0 {
        return Ok(());
    }
    let their_odb = theirs.odb()?;
    let mut w = their_odb.packwriter()?;
    let mut failed = None;
    let written = pb.foreach(|buf| {
        if stop() {
            return false;
        }
        w.write_all(buf).map_err(|e| failed = Some(e)).is_ok()
    });
    if stop() {
        return Err(HoneError::new(Code::Budget, "the push to the local remote was stopped (budget or cancellation)"));
    }
    if let Some(e) = failed {
        return Err(HoneError::new(Code::Git, format!("cannot write to the local remote: {e}")));
    }
    written.map_err(|e| err("pack the commit for the local remote", e))?;
    w.commit().map_err(|e| err("store the pack in the local remote", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> Stop {
        Box::new(|| false)
    }

    /// A repository with one commit on `main` (its HEAD), its commit (distinct per `dir`).
    fn repo_with_commit(dir: &Path, bare: bool) -> (Repository, Oid) {
        let r = if bare { Repository::init_bare(dir).unwrap() } else { Repository::init(dir).unwrap() };
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let blob = r.blob(b"x\n").unwrap();
        let mut tb = r.treebuilder(None).unwrap();
        tb.insert("f", blob, 0o100644).unwrap();
        let oid = {
            let tree = r.find_tree(tb.write().unwrap()).unwrap();
            r.commit(Some("refs/heads/main"), &sig, &sig, &dir.display().to_string(), &tree, &[]).unwrap()
        };
        r.set_head("refs/heads/main").unwrap();
        drop(tb);
        (r, oid)
    }

    #[test]
    fn a_push_copies_the_objects_and_honours_the_lease() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, oid) = repo_with_commit(&tmp.path().join("ours.git"), true);
        let (_theirs, their_main) = repo_with_commit(&tmp.path().join("theirs.git"), true);
        let root = tmp.path().join("work");
        std::fs::create_dir(&root).unwrap();
        let local = Local::new(&tmp.path().join("theirs.git"), "theirs", &root).unwrap();
        let ours_path = ours.path().to_path_buf();
        local.push(&ours_path, &oid.to_string(), "hone/x", None, never()).unwrap();
        assert_eq!(local.head("hone/x").unwrap(), Some(oid.to_string()));
        let theirs = Repository::open_bare(tmp.path().join("theirs.git")).unwrap();
        assert!(theirs.find_commit(oid).is_ok(), "the commit was copied");
        // A new branch that now exists, and a stale lease, are both refused.
        let again = local.push(&ours_path, &oid.to_string(), "hone/x", None, never()).unwrap_err();
        assert!(again.message.contains("lease is stale"), "{}", again.message);
        let stale = local.push(&ours_path, &oid.to_string(), "main", Some(&oid.to_string()), never()).unwrap_err();
        assert!(stale.message.contains("lease is stale"), "{}", stale.message);
        assert_eq!(local.head("main").unwrap(), Some(their_main.to_string()), "main was not moved");
        local.push(&ours_path, &oid.to_string(), "main", Some(&their_main.to_string()), never()).unwrap();
        assert_eq!(local.head("main").unwrap(), Some(oid.to_string()));
        assert_eq!(local.head("nope").unwrap(), None);
    }

    #[test]
    fn a_stopped_push_moves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, oid) = repo_with_commit(&tmp.path().join("ours.git"), true);
        Repository::init_bare(tmp.path().join("theirs.git")).unwrap();
        let local = Local::new(&tmp.path().join("theirs.git"), "theirs", tmp.path()).unwrap_err();
        assert!(local.message.contains("inside the work tree"), "{}", local.message);
        let local = Local::new(&tmp.path().join("theirs.git"), "theirs", &tmp.path().join("work")).unwrap();
        let e = local.push(ours.path(), &oid.to_string(), "hone/x", None, Box::new(|| true)).unwrap_err();
        assert_eq!(e.code, Code::Budget, "{e:?}");
        assert_eq!(local.head("hone/x").unwrap(), None);
    }

    #[test]
    fn a_checked_out_branch_of_a_work_tree_is_not_pushed() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, oid) = repo_with_commit(&tmp.path().join("ours.git"), true);
        repo_with_commit(&tmp.path().join("clone"), false);
        let local = Local::new(&tmp.path().join("clone"), "clone", &tmp.path().join("work")).unwrap();
        let e = local.push(ours.path(), &oid.to_string(), "main", None, never()).unwrap_err();
        assert!(e.message.contains("checked out"), "{}", e.message);
        local.push(ours.path(), &oid.to_string(), "hone/x", None, never()).unwrap();
    }

    #[test]
    fn a_fetch_copies_the_branch() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, _) = repo_with_commit(&tmp.path().join("ours.git"), true);
        let (_theirs, their_main) = repo_with_commit(&tmp.path().join("theirs.git"), true);
        let local = Local::new(&tmp.path().join("theirs.git"), "theirs", &tmp.path().join("work")).unwrap();
        let got = local.fetch(ours.path(), "refs/heads/main", "refs/hone/fetched", never()).unwrap();
        assert_eq!(got, their_main.to_string());
        assert!(ours.find_commit(their_main).is_ok());
    }

    #[test]
    fn a_fetch_copies_a_commit_named_by_its_id_that_no_ref_names() {
        let tmp = tempfile::tempdir().unwrap();
        let (ours, _) = repo_with_commit(&tmp.path().join("ours.git"), true);
        let (theirs, their_main) = repo_with_commit(&tmp.path().join("theirs.git"), true);
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let (parent, tree) = (theirs.find_commit(their_main).unwrap(), theirs.find_commit(their_main).unwrap().tree());
        let orphan = theirs.commit(None, &sig, &sig, "no ref", &tree.unwrap(), &[&parent]).unwrap();
        let local = Local::new(&tmp.path().join("theirs.git"), "theirs", &tmp.path().join("work")).unwrap();
        let got = local.fetch(ours.path(), &orphan.to_string(), "refs/hone/fetched", never()).unwrap();
        assert_eq!(got, orphan.to_string());
        assert!(ours.find_commit(orphan).is_ok() && ours.find_commit(their_main).is_ok(), "with its history");
        let missing = "0".repeat(39) + "1";
        assert!(local.fetch(ours.path(), &missing, "refs/hone/x", never()).is_err());
    }

    #[test]
    fn local_urls_name_paths() {
        let root = Path::new("/w/repo");
        assert_eq!(path_of("/srv/a.git", root), Some(PathBuf::from("/srv/a.git")));
        assert_eq!(path_of("file:///srv/a.git", root), Some(PathBuf::from("/srv/a.git")));
        assert_eq!(path_of("../o.git", root), Some(PathBuf::from("/w/repo/../o.git")));
        assert_eq!(path_of("https://h/a", root), None);
        assert_eq!(path_of("git@h:a", root), None);
    }
}
