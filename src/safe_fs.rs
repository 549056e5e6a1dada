//! File-system steps that never follow a symlink, never open a FIFO and never block: directories
//! are walked by descriptor with `O_NOFOLLOW`, files are created fresh (`O_EXCL`) or written to a
//! temp file and renamed over the target, and reads accept regular files only.

use std::ffi::CString;
use std::fs::File;
use std::io::{Error, ErrorKind, Read, Result, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

fn cstr(p: &str) -> Result<CString> {
    CString::new(p).map_err(|_| Error::new(ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `p` made absolute (against the current directory) and lexically normal (`.` and `..` taken
/// out as written), resolving no symlink.
pub fn lexical(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    let mut lexical = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    lexical
}

/// `p` made absolute (against the current directory) and lexically normal, with its longest
/// existing prefix resolved through symlinks, so two spellings of one place compare equal.
pub fn absolute(p: &Path) -> PathBuf {
    let lexical = lexical(p);
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(n) => {
                rest.push(n.to_os_string());
                existing.pop();
            }
            None => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    out.extend(rest.iter().rev());
    out
}

fn openat(dir: &impl AsRawFd, name: &str, flags: i32, mode: u32) -> Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: a valid dir fd and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unlinkat(dir: &impl AsRawFd, name: &str, flags: i32) -> Result<()> {
    let c = cstr(name)?;
    // SAFETY: a valid dir fd and a NUL-terminated name; unlinkat never follows the final symlink.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) };
    if rc < 0 { Err(Error::last_os_error()) } else { Ok(()) }
}

fn mkdirat(dir: &impl AsRawFd, name: &str) -> Result<()> {
    let c = cstr(name)?;
    // SAFETY: a valid dir fd and a NUL-terminated name.
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) };
    if rc < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

/// Where `p` lies beneath `root` (canonical), with nothing beneath `root` resolved: the
/// components after the first prefix of `p` that is `root`, however that prefix is spelled.
/// `None` when no prefix of `p` is `root`. A symlink inside `root` (which the repository or a
/// command may have made) therefore cannot move a path out of it, or in.
pub fn beneath_root(p: &Path, root: &Path) -> Option<PathBuf> {
    let lex = lexical(p);
    let parts: Vec<Component<'_>> = lex.components().collect();
    let mut prefix = PathBuf::new();
    for (i, c) in parts.iter().enumerate() {
        prefix.push(c);
        if prefix.canonicalize().is_ok_and(|c| c == root) {
            return Some(parts[i + 1..].iter().collect());
        }
    }
    None
}

/// Open (creating it when missing) the directory `name` inside `dir`, without following a
/// symlink: a symlink in its place is removed (never its target) and a real directory made.
pub fn subdir(dir: &impl AsRawFd, name: &str) -> Result<OwnedFd> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Error::new(ErrorKind::InvalidInput, format!("`{name}` is not a directory name")));
    }
    mkdirat(dir, name)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    match openat(dir, name, flags, 0) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) && is_symlink_at(dir, name) => {
            unlinkat(dir, name, 0)?;
            mkdirat(dir, name)?;
            openat(dir, name, flags, 0)
        }
        other => other,
    }
}

fn is_symlink_at(dir: &impl AsRawFd, name: &str) -> bool {
    let Ok(c) = cstr(name) else { return false };
    // SAFETY: plain data filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, a pointer to a stat buffer.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    rc == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFLNK
}

/// Open the directory `base/rel...`, creating what is missing. `base` itself is trusted (it may
/// be reached through symlinks); every component below it is walked with [`subdir`].
pub fn open_dir_below(base: &Path, rel: &Path) -> Result<OwnedFd> {
    std::fs::create_dir_all(base)?;
    let mut cur: OwnedFd = File::open(base)?.into();
    for c in rel.components() {
        match c {
            Component::Normal(n) => cur = subdir(&cur, &n.to_string_lossy())?,
            Component::CurDir => {}
            _ => return Err(Error::new(ErrorKind::InvalidInput, format!("`{}` leaves its base", rel.display()))),
        }
    }
    Ok(cur)
}

/// Open the existing directory `base/rel`, following no symlink below `base`.
pub fn open_existing_dir_below(base: &Path, rel: &Path) -> Result<OwnedFd> {
    let mut cur: OwnedFd = File::open(base)?.into();
    for c in rel.components() {
        match c {
            Component::Normal(n) => {
                cur = openat(&cur, &n.to_string_lossy(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?
            }
            Component::CurDir => {}
            _ => return Err(Error::new(ErrorKind::InvalidInput, format!("`{}` leaves its base", rel.display()))),
        }
    }
    Ok(cur)
}

/// Write `bytes` as `name` in `dir`: a fresh temp file, then a rename over the target, so a
/// symlink or FIFO in the target's place is replaced, never written through.
pub fn write_at(dir: &impl AsRawFd, name: &str, bytes: &[u8], mode: u32) -> Result<()> {
    let tmp = format!(".hone-tmp-{}-{}", std::process::id(), rand::random::<u64>());
    let fd = openat(dir, &tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, mode)?;
    let mut f = File::from(fd);
    let res = f.write_all(bytes).and_then(|()| f.sync_all()).and_then(|()| {
        let (from, to) = (cstr(&tmp)?, cstr(name)?);
        // SAFETY: both names are NUL-terminated and relative to the same dir fd.
        let rc = unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) };
        if rc < 0 { Err(Error::last_os_error()) } else { Ok(()) }
    });
    if res.is_err() {
        let _ = unlinkat(dir, &tmp, 0);
    }
    res
}

/// Create `name` in `dir` as a new, empty regular file, removing whatever had that name (a
/// symlink or FIFO is removed itself, never followed or opened).
pub fn create_fresh_at(dir: &impl AsRawFd, name: &str) -> Result<File> {
    remove_at(dir, name)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    openat(dir, name, flags, 0o644).map(File::from)
}

/// Write `bytes` to `name` in `dir` only when nothing has that name yet (a symlink there counts
/// and is left alone). Whether it was written.
pub fn write_new_at(dir: &impl AsRawFd, name: &str, bytes: &[u8]) -> Result<bool> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    match openat(dir, name, flags, 0o644) {
        Ok(fd) => File::from(fd).write_all(bytes).map(|()| true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Remove the file `name` in `dir`; a missing file is not an error.
pub fn remove_at(dir: &impl AsRawFd, name: &str) -> Result<()> {
    match unlinkat(dir, name, 0) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Remove `name` in `dir` and, when it is a real directory, everything beneath it, by
/// descriptor: a symlink anywhere is removed itself, never followed (a symlink put in a
/// directory's place meanwhile is refused by `O_NOFOLLOW`). A missing entry is not an error;
/// `name` must be one plain component. How many entries were removed. A tree nested deeper than
/// `MAX_DEPTH` directories is refused (each level holds a descriptor while its entries go).
pub fn remove_tree_at(dir: &impl AsRawFd, name: &str) -> Result<usize> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Error::new(ErrorKind::InvalidInput, format!("`{name}` is not an entry name")));
    }
    remove_entry(dir, &cstr(name)?, 0)
}

/// How deep [`remove_tree_at`] descends.
const MAX_DEPTH: usize = 256;

fn remove_entry(dir: &impl AsRawFd, name: &std::ffi::CStr, depth: usize) -> Result<usize> {
    // SAFETY: a valid dir fd and a NUL-terminated name; unlinkat never follows a symlink.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } == 0 {
        return Ok(1);
    }
    let e = Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) => return Ok(0),
        // A directory (Linux says EISDIR, macOS EPERM): empty it, then remove it.
        Some(libc::EISDIR) | Some(libc::EPERM) => {}
        _ => return Err(e),
    }
    if depth >= MAX_DEPTH {
        return Err(Error::other(format!("{name:?} is nested more than {MAX_DEPTH} directories deep")));
    }
    // SAFETY: a valid dir fd and a NUL-terminated name; O_NOFOLLOW refuses a symlink.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    let sub = unsafe { OwnedFd::from_raw_fd(fd) };
    // Names first (as bytes: any name git or a command made), then removal.
    let names: Vec<std::ffi::CString> = nix::dir::Dir::from_fd(sub.try_clone()?)
        .map_err(Error::from)?
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.to_bytes() != b"." && n.to_bytes() != b"..")
        .collect();
    let mut removed = 0;
    for n in names {
        removed += remove_entry(&sub, &n, depth + 1)?;
    }
    // SAFETY: a valid dir fd and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOENT) {
            return Err(e);
        }
    }
    Ok(removed + 1)
}

/// Remove `rel` beneath `root` (see [`remove_tree_at`]), reaching its parent without following
/// a symlink: a path under a symlink is not removed (nothing of it is in the tree). How many
/// entries were removed.
pub fn remove_beneath(root: &Path, rel: &str) -> Result<usize> {
    let rel = rel.trim_end_matches('/');
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    match open_existing_dir_below(root, Path::new(parent)) {
        Ok(dir) => remove_tree_at(&dir, name),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::ENOENT)) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Read `name` in `dir`, at most `max` bytes, only if it is a regular file: a symlink is refused
/// and a FIFO or device is never waited on.
pub fn read_regular_at(dir: &impl AsRawFd, name: &str, max: u64) -> Result<Vec<u8>> {
    let fd = openat(dir, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0)?;
    let f = File::from(fd);
    regular(&f, name)?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Fail unless `f` is a regular file.
pub fn regular(f: &File, what: &str) -> Result<()> {
    if f.metadata()?.file_type().is_file() {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::InvalidInput, format!("`{what}` is not a regular file")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_directory_is_replaced_and_its_target_untouched() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::fs::create_dir(base.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), base.path().join("a/b")).unwrap();
        let dir = open_dir_below(base.path(), Path::new("a/b/c")).unwrap();
        write_at(&dir, "r.json", b"{}", 0o644).unwrap();
        assert!(base.path().join("a/b/c/r.json").is_file());
        assert!(std::fs::symlink_metadata(base.path().join("a/b")).unwrap().is_dir());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "the target was not touched");
    }

    #[test]
    fn writes_replace_symlinks_and_fifos_and_reads_refuse_them() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let dir: OwnedFd = File::open(d.path()).unwrap().into();
        std::os::unix::fs::symlink(outside.path().join("x"), d.path().join("link")).unwrap();
        let fifo = std::ffi::CString::new(d.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(read_regular_at(&dir, "link", 100).is_err());
        assert!(read_regular_at(&dir, "fifo", 100).is_err(), "a FIFO is never read (nor waited on)");
        write_at(&dir, "link", b"a", 0o644).unwrap();
        write_at(&dir, "fifo", b"b", 0o644).unwrap();
        assert!(!outside.path().join("x").exists());
        assert_eq!(read_regular_at(&dir, "fifo", 100).unwrap(), b"b");
        std::os::unix::fs::symlink(outside.path().join("y"), d.path().join("stream")).unwrap();
        let mut f = create_fresh_at(&dir, "stream").unwrap();
        f.write_all(b"line\n").unwrap();
        assert!(!outside.path().join("y").exists());
        assert_eq!(read_regular_at(&dir, "stream", 3).unwrap(), b"lin");
    }

    #[test]
    fn removal_never_follows_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::fs::create_dir_all(root.path().join("a/b/c")).unwrap();
        std::fs::write(root.path().join("a/b/c/f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("a/b/out")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        assert_eq!(remove_beneath(root.path(), "link/keep").unwrap(), 0, "a path under a link is left alone");
        assert_eq!(remove_beneath(root.path(), "a").unwrap(), 5, "a, b, c, f and the link out");
        assert_eq!(remove_beneath(root.path(), "link").unwrap(), 1);
        assert_eq!(remove_beneath(root.path(), "missing").unwrap(), 0);
        assert!(remove_beneath(root.path(), "..").is_err());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
        assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "x", "the target is untouched");
    }

    #[test]
    fn a_tree_is_removed_without_following_its_links() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let tree = base.path().join("t");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::write(tree.join("a/b/f"), "1").unwrap();
        std::fs::write(tree.join("g"), "2").unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.join("a/dirlink")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("keep"), tree.join("filelink")).unwrap();
        std::fs::write(tree.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff")), "3").unwrap();
        std::os::unix::fs::symlink(outside.path(), base.path().join("top")).unwrap();
        let dir: OwnedFd = File::open(base.path()).unwrap().into();
        remove_tree_at(&dir, "t").unwrap();
        remove_tree_at(&dir, "top").unwrap();
        remove_tree_at(&dir, "missing").unwrap();
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
        assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "x", "no link was followed");
        for bad in ["", ".", "..", "a/b"] {
            assert!(remove_tree_at(&dir, bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn absolute_paths_compare_equal_however_spelled() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("sub")).unwrap();
        assert_eq!(absolute(&real.join("sub/../sub/./new/x")), real.join("sub/new/x"));
    }
}
