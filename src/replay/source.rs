//! The repository a replay runs in: a new repository in a temp dir, filled in process with the
//! objects of a local repository (the base commit and its history) and checked out at the base.
//! No URL, transport, remote or program is involved, and nothing of the source's `.git` but its
//! objects (and the ids of its shallow commits) is copied; the source is only read.

use crate::error::{Code, HoneError};
use git2::{Oid, Repository};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// The largest job spec or policy file replay reads from the repository.
pub const MAX_FILE: usize = 1 << 20;

/// A path a transcript gives: used only when it is absolute, plain (no `.` or `..`, no control
/// character) and so cannot be a URL (`https://`, `git://`, `file://`, `host:path`, `ext::`).
pub fn recorded_path(what: &str, given: &str) -> Result<PathBuf, HoneError> {
    let p = Path::new(given);
    let plain = p.is_absolute()
        && !given.chars().any(char::is_control)
        && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !given.split('/').any(|c| c == "." || c == "..");
    if plain {
        return Ok(p.to_path_buf());
    }
    Err(HoneError::new(
        Code::Spec,
        format!(
            "the transcript's {what} {given:?} is not an absolute local path (no URL, no `.` or `..`): replay fetches nothing and reads nothing outside a local repository"
        ),
    )
    .hint("name a local repository with --repo DIR, and the job with --job JOB.yaml"))
}

/// The source repository at `path` (never a parent directory), opened to be read.
fn open(path: &Path) -> Result<Repository, HoneError> {
    let no_search = git2::RepositoryOpenFlags::NO_SEARCH;
    Repository::open_ext(path, no_search, std::iter::empty::<&std::ffi::OsStr>()).map_err(|e| {
        HoneError::new(Code::Git, format!("{} is not a git repository: {}", path.display(), e.message()))
            .hint("replay needs the repository the run worked in, on this machine; or name one with --repo DIR")
    })
}

/// A commit id as git writes it (40 or 64 hex digits): a transcript's base, never a ref name.
fn commit_id(given: &str) -> Result<Oid, HoneError> {
    let hex = matches!(given.len(), 40 | 64) && given.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| Oid::from_str(given).ok()).flatten().ok_or_else(|| {
        HoneError::new(Code::Spec, format!("the transcript's base_sha {given:?} is not a commit id"))
            .hint("replay a transcript hone wrote, or name a repository with --repo DIR (replayed from its HEAD)")
    })
}

/// The repository replay copied: its root, at the commit the recorded run started from.
#[derive(Debug)]
pub struct Copied {
    pub root: PathBuf,
    pub base: Oid,
}

/// Copy `src` into a new repository at `into`: the commit `base` (a transcript's `base_sha`; the
/// source's HEAD without one) and its history, checked out there, and `also` with its history
/// when the source has it (where the recorded run read its instruction files). Returns the
/// clone's root and the base.
pub fn clone(src: &Path, base: Option<&str>, also: Option<&str>, into: &Path) -> Result<Copied, HoneError> {
    let from = open(src)?;
    let base =
        match base {
            Some(b) => commit_id(b)?,
            None => from.head().and_then(|h| h.peel_to_commit()).map(|c| c.id()).map_err(|e| {
                HoneError::new(Code::Git, format!("{} has no HEAD commit: {}", src.display(), e.message()))
            })?,
        };
    if from.find_commit(base).is_err() {
        return Err(HoneError::new(
            Code::Git,
            format!("the commit the recorded run started from ({base}) is not in {}", src.display()),
        )
        .hint("replay in the repository the run worked in (fetch that commit first), or name one with --repo DIR"));
    }
    let git = |e: git2::Error| {
        HoneError::new(Code::Git, format!("cannot copy {} for the replay: {}", src.display(), e.message()))
    };
    let mut opts = git2::RepositoryInitOptions::new();
    opts.no_reinit(true).mkdir(true).initial_head("main");
    let to = Repository::init_opts(into, &opts).map_err(git)?;
    let mut walk = from.revwalk().map_err(git)?;
    walk.push(base).map_err(git)?;
    if let Some(also) = also.and_then(|a| commit_id(a).ok()).filter(|a| from.find_commit(*a).is_ok()) {
        walk.push(also).map_err(git)?;
    }
    let mut pack = from.packbuilder().map_err(git)?;
    pack.insert_walk(&mut walk).map_err(git)?;
    let odb = to.odb().map_err(git)?;
    let mut writer = odb.packwriter().map_err(git)?;
    let mut failed = None;
    pack.foreach(|buf| writer.write_all(buf).map_err(|e| failed = Some(e)).is_ok()).map_err(git)?;
    if let Some(e) = failed {
        return Err(HoneError::new(Code::Io, format!("cannot write the replay's repository: {e}")));
    }
    writer.commit().map_err(git)?;
    drop(writer);
    if from.is_shallow() {
        copy_shallow(&from, &to)?;
    }
    to.set_head_detached(base).map_err(git)?;
    to.checkout_head(Some(git2::build::CheckoutBuilder::new().force())).map_err(git)?;
    let root = into.canonicalize().map_err(|e| HoneError::new(Code::Io, format!("{}: {e}", into.display())))?;
    Ok(Copied { root, base })
}

/// A shallow source's boundary commits, so the clone knows where its history stops: only commit
/// ids the clone holds are written.
fn copy_shallow(from: &Repository, to: &Repository) -> Result<(), HoneError> {
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot read the shallow list of the source: {e}"));
    let dir = std::fs::File::open(from.path()).map_err(io)?;
    let bytes = crate::safe_fs::read_regular_at(&dir, "shallow", MAX_FILE as u64).map_err(io)?;
    let ids: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| commit_id(l.trim()).ok())
        .filter(|id| to.find_commit(*id).is_ok())
        .map(|id| format!("{id}\n"))
        .collect();
    let git_dir = std::fs::File::open(to.path()).map_err(io)?;
    crate::safe_fs::write_at(&git_dir, "shallow", ids.concat().as_bytes(), 0o644).map_err(io)
}

/// The file at `rel` in the clone's `base` commit, from the object store (never from the work
/// tree, where a path could lead through a symlink): a regular file, at most `MAX_FILE` bytes.
pub fn read_at_base(root: &Path, base: Oid, rel: &Path) -> Result<String, HoneError> {
    let shown = super::plain(rel.display());
    let not = |why: String| {
        HoneError::new(Code::Spec, format!("`{shown}` at the recorded base commit {base}: {why}"))
            .hint("name the job with --job JOB.yaml")
    };
    let repo = Repository::open(root).map_err(|e| not(e.message().to_string()))?;
    let tree = repo.find_commit(base).and_then(|c| c.tree()).map_err(|e| not(e.message().to_string()))?;
    let entry = tree.get_path(rel).map_err(|_| not("no such file".into()))?;
    if !matches!(entry.filemode(), 0o100644 | 0o100755) {
        return Err(not("not a regular file (a symlink, a directory or a submodule)".into()));
    }
    let blob = entry.to_object(&repo).and_then(|o| o.peel_to_blob()).map_err(|e| not(e.message().to_string()))?;
    if blob.size() > MAX_FILE {
        return Err(not(format!("larger than {MAX_FILE} bytes")));
    }
    String::from_utf8(blob.content().to_vec()).map_err(|_| not("not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git::git;

    #[test]
    fn only_plain_absolute_paths_are_repositories() {
        for ok in ["/tmp/r", "/home/u/a:b", "/srv/x y/repo"] {
            assert_eq!(recorded_path("repo", ok).unwrap(), PathBuf::from(ok), "{ok}");
        }
        for bad in [
            "https://host/r.git",
            "http://127.0.0.1:9/r",
            "git://host/r",
            "ssh://host/r",
            "file:///tmp/r",
            "git@host:r.git",
            "host:r",
            "ext::sh -c touch% /tmp/x",
            "relative/r",
            "",
            "/tmp/r/../other",
            "/tmp/./r",
            "/tmp/r\n::error::x",
            "-c/x",
        ] {
            let e = recorded_path("repo", bad).unwrap_err();
            assert!(e.message.contains("not an absolute local path"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn the_copy_has_the_base_and_its_history_and_leaves_the_source_alone() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        std::fs::create_dir(&src).unwrap();
        git(&src, &["init", "-q"]);
        for i in 0..3 {
            std::fs::write(src.join("f.txt"), format!("{i}\n")).unwrap();
            git(&src, &["add", "f.txt"]);
            git(&src, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        let first = git(&src, &["rev-parse", "HEAD~1"]);
        std::fs::write(src.join("f.txt"), "dirty\n").unwrap();
        let Copied { root, base } = clone(&src, Some(&first), None, &t.path().join("full")).unwrap();
        assert_eq!(base.to_string(), first);
        assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "1\n");
        assert_eq!(git(&root, &["log", "--format=%s"]), "c1\nc0");
        assert_eq!(git(&root, &["remote"]), "", "no remote, no URL");
        assert_eq!(git(&src, &["status", "--porcelain"]), "M f.txt", "the source is untouched");
        // A shallow source (a CI checkout): the copy knows where its history stops.
        let url = format!("file://{}", src.display());
        git(t.path(), &["clone", "-q", "--depth", "1", &url, "shallow"]);
        let root = clone(&t.path().join("shallow"), None, None, &t.path().join("copy")).unwrap().root;
        assert_eq!(git(&root, &["log", "--format=%s"]), "c2");
        git(&root, &["fsck", "--no-progress"]);
        let missing = "0".repeat(40);
        let e = clone(&src, Some(&missing), None, &t.path().join("none")).unwrap_err();
        assert!(e.message.contains("is not in"), "{}", e.message);
    }

    #[test]
    fn a_base_is_a_full_commit_id_never_a_ref() {
        assert!(commit_id(&"a".repeat(40)).is_ok());
        for bad in ["HEAD", "main", "abc123", &"g".repeat(40), &format!("{}~1", "a".repeat(40))] {
            assert!(commit_id(bad).is_err(), "{bad}");
        }
    }
}
