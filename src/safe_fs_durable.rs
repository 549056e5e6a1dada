//! Durable writes: a file hone keeps (a report, the memory store, the repo map's cache, the run
//! marker) is written to a fresh temp file, synced, renamed over the target, and the directory
//! synced. Killed at any step, the target is the old file or the new one, whole, never torn; a
//! symlink or FIFO in its place is replaced, never written through.

use super::{cstr, openat, unlinkat};
use std::fs::File;
use std::io::{Error, Result, Write};
use std::os::fd::AsRawFd;

/// The steps of a durable write, where a test stops it as a kill would (`stop_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The temp file exists, empty.
    Created,
    /// The bytes are written to it, not yet synced.
    Written,
    /// It is synced, not yet renamed over the target.
    Synced,
}

#[cfg(test)]
thread_local! {
    static STOP: std::cell::Cell<Option<Step>> = const { std::cell::Cell::new(None) };
}

/// Tests only: the next durable writes on this thread stop after `step`, leaving what a kill
/// there leaves (the temp file, the target untouched), and fail.
#[cfg(test)]
pub fn stop_at(step: Option<Step>) {
    STOP.set(step);
}

/// Whether a test stops the write after `step`.
#[cfg(test)]
fn stops(step: Step) -> bool {
    STOP.get() == Some(step)
}

#[cfg(not(test))]
fn stops(_: Step) -> bool {
    false
}

/// What a write stopped by a test returns.
fn stopped(step: Step) -> Error {
    Error::other(format!("stopped by the test after {step:?}"))
}

/// Write `bytes` as `name` in `dir`: a fresh temp file, synced, then a rename over the target
/// (which replaces a symlink or FIFO there, never writing through it), then the directory synced.
pub fn write_at(dir: &impl AsRawFd, name: &str, bytes: &[u8], mode: u32) -> Result<()> {
    let tmp = format!(".hone-tmp-{}-{}", std::process::id(), rand::random::<u64>());
    let fd = openat(dir, &tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, mode)?;
    let mut f = File::from(fd);
    // A test's stop leaves what a kill there leaves: the temp file, the target untouched.
    let mut steps = || -> Result<Option<Step>> {
        if stops(Step::Created) {
            return Ok(Some(Step::Created));
        }
        f.write_all(bytes)?;
        if stops(Step::Written) {
            return Ok(Some(Step::Written));
        }
        f.sync_all()?;
        if stops(Step::Synced) {
            return Ok(Some(Step::Synced));
        }
        let (from, to) = (cstr(&tmp)?, cstr(name)?);
        // SAFETY: both names are NUL-terminated and relative to the same dir fd.
        let rc = unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) };
        if rc < 0 { Err(Error::last_os_error()) } else { Ok(None) }
    };
    match steps() {
        Ok(None) => {
            sync_dir(dir);
            Ok(())
        }
        Ok(Some(step)) => Err(stopped(step)),
        Err(e) => {
            let _ = unlinkat(dir, &tmp, 0);
            Err(e)
        }
    }
}

/// Sync a directory, so that a rename or removal in it survives a crash (best effort: some file
/// systems refuse to sync a directory, and the rename is atomic for a kill regardless).
pub fn sync_dir(dir: &impl AsRawFd) {
    // SAFETY: a valid descriptor; fsync takes no pointer.
    let _ = unsafe { libc::fsync(dir.as_raw_fd()) };
}
