//! File access that stays beneath the repo root even while paths change under it: every open is
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to a directory fd, so a symlink
//! swapped in after the policy check cannot redirect a read or write outside the repo. macOS has
//! no `RESOLVE_BENEATH`: there a path with `..` is refused and every open is `O_NOFOLLOW_ANY`, so a
//! path through any symlink is refused.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{Error, ErrorKind, Read, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstr(p: impl AsRef<OsStr>) -> Result<CString> {
    CString::new(p.as_ref().as_bytes()).map_err(|_| Error::new(ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// Open flags for a descriptor used only as a directory to work beneath, or to look at a file.
#[cfg(target_os = "linux")]
const PATH_ONLY: i32 = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
const PATH_ONLY: i32 = libc::O_RDONLY | libc::O_NONBLOCK;

fn escapes(rel: &OsStr) -> Error {
    let rel = rel.to_string_lossy();
    Error::new(ErrorKind::PermissionDenied, format!("`{rel}` resolves outside the repo (through a symlink)"))
}

/// `openat2(dirfd, rel, flags)` confined beneath `dirfd`.
#[cfg(target_os = "linux")]
fn openat2(dir: &impl AsRawFd, rel: impl AsRef<OsStr>, flags: i32, mode: u32) -> Result<OwnedFd> {
    openat2_resolving(dir, rel.as_ref(), flags, mode, 0)
}

/// [`openat2`] with more `RESOLVE_*` flags.
#[cfg(target_os = "linux")]
fn openat2_resolving(dir: &impl AsRawFd, rel: &OsStr, flags: i32, mode: u32, resolve: u64) -> Result<OwnedFd> {
    let path = cstr(if rel.is_empty() { OsStr::new(".") } else { rel })?;
    // SAFETY: open_how is plain data; zeroed then filled.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 { u64::from(mode) } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | resolve;
    // SAFETY: valid fd, NUL-terminated path, a pointer to a correctly sized open_how.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() == Some(libc::EXDEV) {
            return Err(escapes(rel));
        }
        return Err(e);
    }
    // SAFETY: the kernel returned a new, owned file descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `openat(dirfd, rel, flags | O_NOFOLLOW_ANY)`, refusing `..` and absolute paths: beneath
/// `dirfd` because no symlink is followed and no step goes up.
#[cfg(target_os = "macos")]
fn openat2(dir: &impl AsRawFd, rel: impl AsRef<OsStr>, flags: i32, mode: u32) -> Result<OwnedFd> {
    let rel = rel.as_ref();
    if rel.as_bytes().starts_with(b"/") || rel.as_bytes().split(|&b| b == b'/').any(|c| c == b"..") {
        return Err(escapes(rel));
    }
    let path = cstr(if rel.is_empty() { OsStr::new(".") } else { rel })?;
    let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW_ANY;
    // SAFETY: valid fd, NUL-terminated path; the mode is read only with O_CREAT.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), path.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                format!("`{rel}` goes through a symlink, which hone does not follow on macOS"),
            ));
        }
        return Err(e);
    }
    // SAFETY: the kernel returned a new, owned file descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The repo root as a directory fd.
pub fn open_root(root: &Path) -> Result<File> {
    File::open(root)
}

/// The most hone reads of one file for the model's tools (a command can make a file of any
/// size, a sparse one of a terabyte in an instant).
pub const MAX_FILE: u64 = 64 << 20;

/// Read a whole file at `rel` beneath `root`.
/// Only a regular file is read: a FIFO or device is never waited on (the open does not block,
/// and anything but a regular file is refused before a read); one over `MAX_FILE` is refused.
pub fn read(root: &Path, rel: &str) -> Result<Vec<u8>> {
    read_whole(open_file(&open_root(root)?, rel)?, rel)
}

/// What `rel` holds now, for a tool about to replace it: `None` when nothing regular is there;
/// an error (to refuse the write) when it is too large to keep for an undo.
pub fn read_before(root: &Path, rel: &str) -> Result<Option<Vec<u8>>> {
    match read(root, rel) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::FileTooLarge => Err(e),
        Err(_) => Ok(None),
    }
}

/// All of the open file `f` (`rel` names it in errors), unless it is larger than `MAX_FILE`.
pub fn read_whole(f: File, rel: &str) -> Result<Vec<u8>> {
    let len = f.metadata()?.len();
    if len > MAX_FILE {
        return Err(Error::new(
            ErrorKind::FileTooLarge,
            format!("`{rel}` is {len} bytes, more than hone reads whole ({MAX_FILE}); search it with grep"),
        ));
    }
    let mut buf = Vec::new();
    f.take(MAX_FILE).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Open the regular file `rel` beneath the root directory `root` for reading, without blocking
/// on a FIFO or device (anything but a regular file is refused).
pub fn open_file(root: &File, rel: impl AsRef<OsStr>) -> Result<File> {
    let rel = rel.as_ref();
    let f = File::from(openat2(root, rel, libc::O_RDONLY | libc::O_NONBLOCK, 0)?);
    crate::safe_fs::regular(&f, &rel.to_string_lossy())?;
    Ok(f)
}

/// [`open_file`] following no symlink at all, not even one that stays beneath the root
/// (`RESOLVE_NO_SYMLINKS`; a name through one fails with `ELOOP`): the file opened is the one
/// at exactly the name `rel`, so that name is its real path and no `/proc` lookup is needed to
/// tell it.
#[cfg(target_os = "linux")]
pub fn open_file_unlinked(root: &File, rel: &str) -> Result<File> {
    let f = File::from(openat2_resolving(
        root,
        OsStr::new(rel),
        libc::O_RDONLY | libc::O_NONBLOCK,
        0,
        libc::RESOLVE_NO_SYMLINKS,
    )?);
    crate::safe_fs::regular(&f, rel)?;
    Ok(f)
}

/// On macOS every open already follows no symlink (`O_NOFOLLOW_ANY`).
#[cfg(not(target_os = "linux"))]
pub fn open_file_unlinked(root: &File, rel: &str) -> Result<File> {
    open_file(root, rel)
}

/// The path, relative to `root` (canonical), of the file `f` was opened as: where the symlinks
/// in the name it was opened by led. `None` when that cannot be told or lies outside `root`.
#[cfg(target_os = "linux")]
pub fn real_rel(root: &Path, f: &File) -> Option<String> {
    let real = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()?;
    let rel = real.strip_prefix(root).ok()?;
    Some(if rel.as_os_str().is_empty() { ".".into() } else { rel.to_string_lossy().into_owned() })
}

/// On macOS every open refuses symlinks (`O_NOFOLLOW_ANY`): a file is what its name says.
#[cfg(not(target_os = "linux"))]
pub fn real_rel(_root: &Path, _f: &File) -> Option<String> {
    None
}

/// The entries of the directory `rel` beneath `root` (reached like every open here, so a
/// symlink swapped in cannot list a directory outside): each name, and whether it is a
/// directory itself (a symlink is not).
pub fn list(root: &Path, rel: &str) -> Result<Vec<(String, bool)>> {
    let fd = openat2(&open_root(root)?, rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let at = fd.try_clone()?;
    let dir = nix::dir::Dir::from_fd(fd).map_err(Error::from)?;
    let mut out = Vec::new();
    for e in dir.into_iter().filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        let is_dir = match e.file_type() {
            Some(t) => t == nix::dir::Type::Directory,
            // Some file systems do not say: ask, without following a symlink.
            None => nix::sys::stat::fstatat(&at, e.file_name(), nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR),
        };
        out.push((name, is_dir));
    }
    Ok(out)
}

/// Open (creating as needed) the directory `rel` beneath `root`.
fn open_dir_all(root: &File, rel: &str) -> Result<OwnedFd> {
    let mut cur = openat2(root, ".", PATH_ONLY | libc::O_DIRECTORY, 0)?;
    for comp in rel.split('/').filter(|c| !c.is_empty() && *c != ".") {
        let name = cstr(comp)?;
        // SAFETY: valid dir fd and NUL-terminated name.
        let rc = unsafe { libc::mkdirat(cur.as_raw_fd(), name.as_ptr(), 0o777) };
        if rc < 0 {
            let e = Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(e);
            }
        }
        // Each step resolves beneath the directory reached so far (itself beneath the root), so a
        // symlink swapped into the path cannot lead out.
        cur = openat2(&cur, comp, PATH_ONLY | libc::O_DIRECTORY, 0)?;
    }
    Ok(cur)
}

/// Write `bytes` to `rel` beneath `root` atomically: a temp file in the same (pinned) directory,
/// then `renameat` over the target. The target's permissions are kept.
pub fn write_atomic(root: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let root_dir = open_root(root)?;
    let (parent, name) = match rel.rsplit_once('/') {
        Some((p, n)) => (p, n),
        None => ("", rel),
    };
    if name.is_empty() || name == "." || name == ".." {
        return Err(Error::new(ErrorKind::InvalidInput, format!("`{rel}` is not a file name")));
    }
    let dir = open_dir_all(&root_dir, parent)?;
    let mode = openat2(&dir, name, PATH_ONLY | libc::O_NOFOLLOW, 0)
        .ok()
        .and_then(|fd| File::from(fd).metadata().ok())
        .filter(|m| m.is_file())
        .map_or(0o644, |m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777);
    crate::safe_fs::write_at(&dir, name, bytes, mode)
}

/// Remove the file `rel` beneath `root`.
pub fn remove(root: &Path, rel: &str) -> Result<()> {
    let root_dir = open_root(root)?;
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = openat2(&root_dir, if parent.is_empty() { "." } else { parent }, PATH_ONLY | libc::O_DIRECTORY, 0)?;
    let name_c = cstr(name)?;
    // SAFETY: a NUL-terminated name relative to a pinned dir fd.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), name_c.as_ptr(), 0) };
    if rc < 0 { Err(Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let repo = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(repo.path().join("f").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let e = read(repo.path(), "f").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn reads_and_writes_stay_beneath_the_root() {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        std::os::unix::fs::symlink(outside.path(), repo.path().join("link")).unwrap();
        std::os::unix::fs::symlink("../../../../../../../../", repo.path().join("up")).unwrap();
        assert!(read(repo.path(), "link/secret").is_err());
        assert!(list(repo.path(), "link").is_err(), "no listing through a link that leads out");
        assert!(list(repo.path(), "up").is_err());
        assert!(read(repo.path(), "up/etc/passwd").is_err());
        assert!(write_atomic(repo.path(), "link/new", b"x").is_err());
        assert!(!outside.path().join("new").exists());
        write_atomic(repo.path(), "a/b/c.txt", b"hello").unwrap();
        assert_eq!(read(repo.path(), "a/b/c.txt").unwrap(), b"hello");
        remove(repo.path(), "a/b/c.txt").unwrap();
        assert!(!repo.path().join("a/b/c.txt").exists());
    }

    /// Time-of-check/time-of-use: a directory is swapped with a symlink to the outside while
    /// reads and writes go on. No write may land outside, no read may return outside content.
    #[test]
    fn a_symlink_swap_race_never_escapes() {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f"), "OUTSIDE").unwrap();
        let d = repo.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "inside").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d2, out2, stop2) = (d.clone(), outside.path().to_path_buf(), stop.clone());
        let swapper = std::thread::spawn(move || {
            let real = d2.with_file_name("d.real");
            let mut swaps = 0u32;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(&d2, &real);
                let _ = std::os::unix::fs::symlink(&out2, &d2);
                let _ = std::fs::remove_file(&d2);
                let _ = std::fs::rename(&real, &d2);
                swaps += 1;
            }
            swaps
        });
        let mut escaped_reads = 0;
        for i in 0..3000 {
            if let Ok(b) = read(repo.path(), "d/f")
                && b == b"OUTSIDE"
            {
                escaped_reads += 1;
            }
            let _ = write_atomic(repo.path(), &format!("d/w{}", i % 7), b"x");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 0);
        assert_eq!(escaped_reads, 0);
        let leaked: Vec<_> =
            std::fs::read_dir(outside.path()).unwrap().filter_map(Result::ok).map(|e| e.file_name()).collect();
        assert_eq!(leaked.len(), 1, "files written outside the repo: {leaked:?}");
    }
}
