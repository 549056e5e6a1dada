//! File-system steps that never follow a symlink, never open a FIFO and never block: directories
//! are walked by descriptor with `O_NOFOLLOW`, files are created fresh (`O_EXCL`) or written to a
//! temp file and renamed over the target, and reads accept regular files only.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{Error, ErrorKind, Read, Result, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

#[path = "safe_fs_durable.rs"]
mod durable;
#[cfg(test)]
pub use durable::{Step, stop_at};
pub use durable::{sync_dir, write_at};

/// A name or path as the kernel takes it: its bytes, whatever they are (a name need not be UTF-8).
fn cstr(p: impl AsRef<OsStr>) -> Result<CString> {
    CString::new(p.as_ref().as_bytes()).map_err(|_| Error::new(ErrorKind::InvalidInput, "path contains a NUL byte"))
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

fn openat(dir: &impl AsRawFd, name: impl AsRef<OsStr>, flags: i32, mode: u32) -> Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: a valid dir fd and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unlinkat(dir: &impl AsRawFd, name: impl AsRef<OsStr>, flags: i32) -> Result<()> {
    let c = cstr(name)?;
    // SAFETY: a valid dir fd and a NUL-terminated name; unlinkat never follows the final symlink.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) };
    if rc < 0 { Err(Error::last_os_error()) } else { Ok(()) }
}

fn mkdirat(dir: &impl AsRawFd, name: impl AsRef<OsStr>) -> Result<()> {
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
pub fn subdir(dir: &impl AsRawFd, name: impl AsRef<OsStr>) -> Result<OwnedFd> {
    let name = name.as_ref();
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(Error::new(ErrorKind::InvalidInput, format!("{name:?} is not a directory name")));
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

fn is_symlink_at(dir: &impl AsRawFd, name: &OsStr) -> bool {
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
            Component::Normal(n) => cur = subdir(&cur, n)?,
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
            Component::Normal(n) => cur = openat(&cur, n, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?,
            Component::CurDir => {}
            _ => return Err(Error::new(ErrorKind::InvalidInput, format!("`{}` leaves its base", rel.display()))),
        }
    }
    Ok(cur)
}

/// Create `name` in `dir` as a new, empty regular file, removing whatever had that name (a
/// symlink or FIFO is removed itself, never followed or opened).
pub fn create_fresh_at(dir: &impl AsRawFd, name: &str) -> Result<File> {
    remove_at(dir, name)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    openat(dir, name, flags, 0o644).map(File::from)
}

/// Open the regular file `name` in `dir` to read and write, made (`mode`) when missing: the same
/// file however often it is opened, as a lock file must be. A symlink in its place is an error,
/// never followed, and so is anything but a regular file (a FIFO is opened without blocking, then
/// refused).
pub fn open_or_create_at(dir: &impl AsRawFd, name: &str, mode: u32) -> Result<File> {
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let f = File::from(openat(dir, name, flags, mode)?);
    regular(&f, name)?;
    Ok(f)
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
/// `name` must be one plain component. How many entries were removed. However deep the tree, at
/// most `MAX_DEPTH` directories are held open: one nested deeper is moved up into `name` (a
/// rename, which follows nothing) and emptied from there.
pub fn remove_tree_at(dir: &impl AsRawFd, name: &str) -> Result<usize> {
    remove_tree_c(dir, &cstr(name)?)
}

/// [`remove_tree_at`] for a name given as bytes (any name a command made).
pub fn remove_tree_c(dir: &impl AsRawFd, name: &std::ffi::CStr) -> Result<usize> {
    let b = name.to_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(Error::new(ErrorKind::InvalidInput, format!("{name:?} is not an entry name")));
    }
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
    let top = open_subdir(dir, name)?;
    let removed = empty_dir(&top, &top, 0)?;
    rmdir_at(dir, name)?;
    Ok(removed + 1)
}

/// How many directories [`remove_tree_at`] holds open at once.
const MAX_DEPTH: usize = 64;

/// The existing directory `name` in `dir`, never through a symlink.
pub fn open_subdir(dir: &impl AsRawFd, name: &std::ffi::CStr) -> Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid dir fd and a NUL-terminated name; O_NOFOLLOW refuses a symlink.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Remove the empty directory `name` in `dir`; a missing one is not an error.
fn rmdir_at(dir: &impl AsRawFd, name: &std::ffi::CStr) -> Result<()> {
    // SAFETY: a valid dir fd and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOENT) {
            return Err(e);
        }
    }
    Ok(())
}

/// The names in the directory `d` (as bytes: any name git or a command made), read afresh.
fn names_in(d: &OwnedFd) -> Result<Vec<std::ffi::CString>> {
    let again = open_subdir(d, c".")?;
    Ok(nix::dir::Dir::from_fd(again)
        .map_err(Error::from)?
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.to_bytes() != b"." && n.to_bytes() != b"..")
        .collect())
}

/// Empty `d`, `depth` directories below `top` (the directory being removed). A directory at
/// `MAX_DEPTH` is renamed into `top`, whose own pass then empties it: it is read again until
/// nothing is left. How many entries were removed.
fn empty_dir(top: &OwnedFd, d: &OwnedFd, depth: usize) -> Result<usize> {
    let mut removed = 0;
    loop {
        let names = names_in(d)?;
        if names.is_empty() {
            return Ok(removed);
        }
        for n in names {
            // SAFETY: a valid dir fd and a NUL-terminated name; unlinkat never follows a symlink.
            if unsafe { libc::unlinkat(d.as_raw_fd(), n.as_ptr(), 0) } == 0 {
                removed += 1;
                continue;
            }
            let e = Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOENT) => continue,
                Some(libc::EISDIR) | Some(libc::EPERM) => {}
                _ => return Err(e),
            }
            if depth + 1 >= MAX_DEPTH {
                let up = cstr(format!(".hone-deep-{}", rand::random::<u64>()))?;
                // SAFETY: two valid dir fds and NUL-terminated names; renameat follows nothing.
                if unsafe { libc::renameat(d.as_raw_fd(), n.as_ptr(), top.as_raw_fd(), up.as_ptr()) } < 0 {
                    return Err(Error::last_os_error());
                }
                continue;
            }
            let sub = open_subdir(d, &n)?;
            removed += empty_dir(top, &sub, depth + 1)?;
            rmdir_at(d, &n)?;
            removed += 1;
        }
    }
}

/// Remove `rel` beneath `root` (see [`remove_tree_at`]), reaching its parent without following
/// a symlink: a path under a symlink is not removed (nothing of it is in the tree). How many
/// entries were removed.
pub fn remove_beneath(root: &Path, rel: impl AsRef<OsStr>) -> Result<usize> {
    let mut rel = rel.as_ref().as_bytes();
    while let [head @ .., b'/'] = rel {
        rel = head;
    }
    let (parent, name) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    match open_existing_dir_below(root, Path::new(OsStr::from_bytes(parent))) {
        Ok(dir) => remove_tree_c(&dir, &cstr(OsStr::from_bytes(name))?),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::ENOENT)) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Read `name` in `dir`, at most `max` bytes, only if it is a regular file: a symlink is refused
/// and a FIFO or device is never waited on.
pub fn read_regular_at(dir: &impl AsRawFd, name: &str, max: u64) -> Result<Vec<u8>> {
    let f = open_regular_at(dir, name)?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Open `name` in `dir` for reading, only if it is a regular file: a symlink is refused and a
/// FIFO or device is never waited on.
pub fn open_regular_at(dir: &impl AsRawFd, name: impl AsRef<OsStr>) -> Result<File> {
    let name = name.as_ref();
    let f = File::from(openat(dir, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY, 0)?);
    regular(&f, &name.to_string_lossy())?;
    Ok(f)
}

/// Read the file at `path` (a credentials file the environment names), at most `max` bytes: only
/// a regular file on disk (the open never waits on a FIFO; a `/proc` file, which says it is
/// empty and is not, is refused), and an error when it is larger.
pub fn read_small(path: &Path, max: u64) -> Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    read_opened_small(f, &path.display().to_string(), max)
}

/// [`read_small`] for a file already opened (without waiting) as `what`.
pub fn read_opened_small(f: File, what: &str, max: u64) -> Result<Vec<u8>> {
    regular(&f, what)?;
    let said = f.metadata()?.len();
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        let limit = if max.is_multiple_of(1024) { format!("{} KiB", max / 1024) } else { format!("{max} bytes") };
        return Err(Error::new(ErrorKind::InvalidData, format!("it is larger than {limit}")));
    }
    if said == 0 && !buf.is_empty() {
        return Err(Error::new(ErrorKind::InvalidInput, "it is not a file on disk (a /proc file?)"));
    }
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
#[path = "safe_fs_tests.rs"]
mod tests;
