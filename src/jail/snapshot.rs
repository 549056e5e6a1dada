//! A copy of the repository as it was when the job's MCP servers started: what a server's jail
//! shows at the repository's path, so that nothing the model's commands write later (a module
//! beside the server's script, a program it runs) can reach a process that holds a secret.
//! Made by hone on the host before the model's first turn, walking by descriptor: no symlink is
//! followed (one is copied as a link), no FIFO or device is opened. Entries the commands cannot
//! write (the git dirs, the ignored and setup-made entries their jail protects) are not copied:
//! an empty placeholder stands in for each, for the jail to bind the host's read-only. Read-denied
//! paths and hone's own directories are left out.

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use std::collections::HashSet;
use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A snapshot on disk, removed when dropped.
#[derive(Debug)]
pub struct Snapshot {
    /// The copy's root (the repository's path inside the service's jail).
    pub dir: PathBuf,
    /// The kept entries (absolute host paths) that have a placeholder: the jail binds these.
    pub placed: Vec<PathBuf>,
    /// Regular files and bytes copied.
    pub files: usize,
    pub bytes: u64,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        super::linux::remove_scratch(&self.dir);
    }
}

/// What one walk needs: the rules, what it found, and when to give up.
struct Walk<'a> {
    repo: &'a Path,
    kept: HashSet<PathBuf>,
    omitted: HashSet<PathBuf>,
    stop: &'a dyn Fn() -> bool,
    placed: Vec<PathBuf>,
    files: usize,
    bytes: u64,
}

/// Copy the repository at `repo` into the new, empty directory `dir`: `kept` entries (absolute)
/// become placeholders, `omitted` ones are left out. `stop` is asked before each entry; when it
/// says so, the copy ends with `TimedOut`. Errors name the path.
pub fn take(
    repo: &Path,
    dir: PathBuf,
    kept: &[PathBuf],
    omitted: &[PathBuf],
    stop: &dyn Fn() -> bool,
) -> Result<Snapshot> {
    let rel = |v: &[PathBuf]| v.iter().filter_map(|p| p.strip_prefix(repo).ok().map(Path::to_path_buf)).collect();
    let mut walk = Walk { repo, kept: rel(kept), omitted: rel(omitted), stop, placed: vec![], files: 0, bytes: 0 };
    // The snapshot owns `dir` from here on: it is removed however the copy ends.
    let mut snap = Snapshot { dir, placed: vec![], files: 0, bytes: 0 };
    let src: OwnedFd = File::open(repo).map_err(|e| at_path(repo, e))?.into();
    let dst: OwnedFd = File::open(&snap.dir).map_err(|e| at_path(&snap.dir, e))?.into();
    walk.dir(&src, &dst, Path::new(""))?;
    (snap.placed, snap.files, snap.bytes) = (walk.placed, walk.files, walk.bytes);
    Ok(snap)
}

fn at_path(p: &Path, e: impl Into<Error>) -> Error {
    let e = e.into();
    Error::new(e.kind(), format!("{}: {e}", p.display()))
}

impl Walk<'_> {
    /// Copy the entries of the open directory `src` into `dst` (`rel` is where they are).
    fn dir(&mut self, src: &OwnedFd, dst: &OwnedFd, rel: &Path) -> Result<()> {
        let names: Vec<Vec<u8>> = {
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let mut d = Dir::openat(src.as_fd(), ".", flags, Mode::empty()).map_err(|e| self.err(rel, e))?;
            d.iter()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_bytes().to_vec())
                .filter(|n| n.as_slice() != b"." && n.as_slice() != b"..")
                .collect()
        };
        for name in names {
            if (self.stop)() {
                return Err(Error::new(ErrorKind::TimedOut, "the copy of the repository was stopped"));
            }
            let child = rel.join(OsStr::from_bytes(&name));
            if self.omitted.contains(&child) {
                continue;
            }
            let cname = std::ffi::CString::new(name).map_err(|_| Error::other("a name holds a NUL byte"))?;
            let st = fstatat(src.as_fd(), cname.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| self.err(&child, e))?;
            self.entry(src, dst, &child, &cname, &st)?;
        }
        Ok(())
    }

    /// One entry: a placeholder when it is kept, else a copy of a directory, file or link.
    fn entry(&mut self, src: &OwnedFd, dst: &OwnedFd, rel: &Path, name: &CStr, st: &FileStat) -> Result<()> {
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        let kept = self.kept.contains(rel);
        match kind {
            SFlag::S_IFLNK => {
                let target = nix::fcntl::readlinkat(src.as_fd(), name).map_err(|e| self.err(rel, e))?;
                nix::unistd::symlinkat(target.as_os_str(), dst.as_fd(), name).map_err(|e| self.err(rel, e))
            }
            SFlag::S_IFDIR => {
                mkdirat(dst.as_fd(), name, Mode::from_bits_truncate(0o755)).map_err(|e| self.err(rel, e))?;
                if kept {
                    self.placed.push(self.repo.join(rel));
                    return Ok(());
                }
                let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
                let from = openat(src.as_fd(), name, flags, Mode::empty()).map_err(|e| self.err(rel, e))?;
                let to = openat(dst.as_fd(), name, flags, Mode::empty()).map_err(|e| self.err(rel, e))?;
                self.dir(&from, &to, rel)
            }
            SFlag::S_IFREG => self.file(src, dst, rel, name, st, kept),
            // FIFOs, sockets and devices are not copied.
            _ => Ok(()),
        }
    }

    /// A regular file: its content and mode (empty for a placeholder). One the user may not
    /// read is left out, as the server could not have read it either.
    fn file(&mut self, src: &OwnedFd, dst: &OwnedFd, rel: &Path, name: &CStr, st: &FileStat, kept: bool) -> Result<()> {
        let mode = Mode::from_bits_truncate((st.st_mode & 0o777) | 0o600);
        let create = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if kept {
            openat(dst.as_fd(), name, create, mode).map_err(|e| self.err(rel, e))?;
            self.placed.push(self.repo.join(rel));
            return Ok(());
        }
        let read = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let from = match openat(src.as_fd(), name, read, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(nix::errno::Errno::EACCES | nix::errno::Errno::EPERM) => return Ok(()),
            Err(e) => return Err(self.err(rel, e)),
        };
        // The entry may have changed since it was looked at: copy only a regular file.
        if !from.metadata().is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        let mut to = File::from(openat(dst.as_fd(), name, create, mode).map_err(|e| self.err(rel, e))?);
        let n = std::io::copy(&mut &from, &mut to).map_err(|e| self.err(rel, e))?;
        self.files += 1;
        self.bytes += n;
        Ok(())
    }

    fn err(&self, rel: &Path, e: impl Into<Error>) -> Error {
        at_path(&self.repo.join(rel), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A repository with a tracked file, an executable, a symlink out of it, a FIFO, a git dir,
    /// an ignored directory, a read-denied file and hone's own directory.
    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for dir in ["src", ".git/objects", "node_modules/pkg", ".hone/jail", "cfg"] {
            std::fs::create_dir_all(p.join(dir)).unwrap();
        }
        std::fs::write(p.join("src/lib.py"), "print('hi')\n").unwrap();
        std::fs::write(p.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", p.join("src/out")).unwrap();
        std::fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(p.join("node_modules/pkg/index.js"), "module.exports = 1\n").unwrap();
        std::fs::write(p.join("cfg/.env"), "TOKEN=x\n").unwrap();
        let fifo = std::ffi::CString::new(p.join("src/fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        d
    }

    #[test]
    fn a_copy_follows_nothing_and_keeps_placeholders_for_what_is_bound() {
        let r = repo();
        let p = r.path();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("snap");
        std::fs::create_dir(&dir).unwrap();
        let kept = [p.join(".git"), p.join("node_modules"), p.join("gone")];
        let omitted = [p.join("cfg/.env"), p.join(".hone")];
        let snap = take(p, dir.clone(), &kept, &omitted, &|| false).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("src/lib.py")).unwrap(), "print('hi')\n");
        let mode = std::fs::metadata(dir.join("run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "the executable stays executable");
        assert_eq!(std::fs::read_link(dir.join("src/out")).unwrap(), Path::new("/etc/hostname"), "a link is copied");
        assert!(std::fs::symlink_metadata(dir.join("src/fifo")).is_err(), "a FIFO is not copied (nor opened)");
        assert_eq!(std::fs::read_dir(dir.join(".git")).unwrap().count(), 0, "a placeholder");
        assert_eq!(std::fs::read_dir(dir.join("node_modules")).unwrap().count(), 0, "a placeholder");
        assert!(!dir.join("cfg/.env").exists() && !dir.join(".hone").exists(), "left out");
        let mut placed = snap.placed.clone();
        placed.sort();
        assert_eq!(placed, [p.join(".git"), p.join("node_modules")], "what is bound (`gone` is not there)");
        assert_eq!((snap.files, snap.bytes), (2, 22));
        drop(snap);
        assert!(!dir.exists(), "removed with the snapshot");
    }

    #[test]
    fn a_copy_can_be_stopped_and_leaves_nothing() {
        let r = repo();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("snap");
        std::fs::create_dir(&dir).unwrap();
        let e = take(r.path(), dir.clone(), &[], &[], &|| true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(!dir.exists());
    }
}
