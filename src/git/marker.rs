//! The run marker: hone's state file for a run in progress, `hone/run.json` in the checkout's git
//! dir (like git's own `rebase-merge/` or `MERGE_HEAD`). Written durably at intake, before hone
//! changes the checkout, and removed once the checkout is put back; a marker whose process is gone
//! names a run that was killed, whose work the next run saves and whose checkout it puts back.
//!
//! It lives where neither the repository (a commit cannot hold `.git`) nor a command (`.git` is
//! read-only in every jail) can write it; it is still read as hostile input: a regular file only,
//! never through a symlink, bounded, every field checked, and the refs hone builds from it are
//! spelled by hone. Claiming a checkout (reading the marker, recovering, writing its own) happens
//! under an exclusive lock (`hone/run.lock`), which the kernel drops when its holder dies.

use super::OriginalHead;
use crate::safe_fs;
use serde::{Deserialize, Serialize};
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// hone's own directory inside the git dir (the repo map's cache is there too).
pub const DIR: &str = "hone";
const NAME: &str = "run.json";
const LOCK: &str = "run.lock";
/// The most a marker may hold: one is a few hundred bytes.
const MAX_BYTES: u64 = 16 << 10;
const VERSION: u32 = 1;

/// What a run in progress says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    pub version: u32,
    /// The run's id (a UUID), as in its report.
    pub run_id: String,
    pub pid: u32,
    /// When that process started (`process_start`): a live process with the same pid and another
    /// start is another process.
    pub started: String,
    /// The job's name (its refs are `refs/hone/<job>/…`).
    pub job: String,
    /// The run's branch (`hone/<job>` unless the job names another).
    pub branch: String,
    /// Where HEAD pointed before the run: what a recovery puts back.
    pub original: OriginalHead,
    /// The commit the run's branch starts from, once known.
    pub base: Option<String>,
    /// Where a branch of the run's name pointed before the run (`None`: hone made it).
    pub branch_before: Option<String>,
}

impl Marker {
    /// The marker of this process's run.
    pub fn new(run_id: &str, job: &str, branch: &str, original: OriginalHead) -> Marker {
        let pid = std::process::id();
        let started = process_start(pid).unwrap_or_else(|| UNKNOWN.into());
        Marker {
            version: VERSION,
            run_id: run_id.into(),
            pid,
            started,
            job: job.into(),
            branch: branch.into(),
            original,
            base: None,
            branch_before: None,
        }
    }

    /// Every field as hone writes it, or the first that is not.
    pub fn check(&self) -> std::result::Result<(), OddField> {
        let hex = |s: &str| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        let uuid = uuid::Uuid::parse_str(&self.run_id).ok().map(|u| u.hyphenated().to_string());
        let branch_ok = |b: &str| !b.starts_with('-') && git2::Reference::is_valid_name(&format!("refs/heads/{b}"));
        let problems = [
            (self.version == VERSION, "version"),
            (uuid.as_deref() == Some(self.run_id.as_str()), "run_id"),
            (self.pid > 1, "pid"),
            (self.started.len() <= 100 && self.started.bytes().all(|b| b.is_ascii_graphic()), "started"),
            (crate::spec::valid_name(&self.job), "job"),
            (branch_ok(&self.branch), "branch"),
            (
                match &self.original {
                    OriginalHead::Branch(b) => branch_ok(b),
                    OriginalHead::Detached(s) => hex(s),
                },
                "original",
            ),
            (self.base.as_deref().is_none_or(hex), "base"),
            (self.branch_before.as_deref().is_none_or(hex), "branch_before"),
            (git2::Reference::is_valid_name(&self.saved_ref()), "ref"),
        ];
        match problems.iter().find(|(ok, _)| !ok) {
            Some((_, field)) => Err(OddField(field)),
            None => Ok(()),
        }
    }

    /// Where the killed run's work is saved: built by hone from checked fields.
    pub fn saved_ref(&self) -> String {
        format!("refs/hone/{}/killed-{}", self.job, self.run_id)
    }

    /// Whether the process that wrote the marker is still running.
    pub fn alive(&self) -> bool {
        alive(self.pid, &self.started)
    }
}

/// A field of a marker that is not one hone writes (the first found): the marker is never acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("its `{0}` is not one hone writes")]
pub struct OddField(pub &'static str);

/// What the marker file holds.
pub enum Found {
    None,
    Marker(Box<Marker>),
    /// A file hone would not have written (why): it is never acted on.
    Unreadable(String),
}

/// The marker file of one git dir, and the lock that claiming it takes.
pub struct Place {
    git_dir: PathBuf,
}

/// The exclusive lock on a git dir's marker, held until dropped.
pub struct Lock {
    _file: std::fs::File,
}

impl Place {
    pub fn new(git_dir: &Path) -> Place {
        Place { git_dir: git_dir.to_path_buf() }
    }

    fn dir(&self) -> Result<OwnedFd> {
        safe_fs::open_dir_below(&self.git_dir, Path::new(DIR))
    }

    /// Take the exclusive lock, waiting while another hone holds it (only as long as it claims).
    pub fn lock(&self) -> Result<Lock> {
        let file = safe_fs::open_or_create_at(&self.dir()?, LOCK, 0o600)?;
        loop {
            // SAFETY: a valid descriptor; flock takes no pointer.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Lock { _file: file });
            }
            let e = Error::last_os_error();
            if e.kind() != ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// The marker, if there is one (read without following a symlink; only a regular file).
    pub fn read(&self) -> Found {
        let dir = match safe_fs::open_existing_dir_below(&self.git_dir, Path::new(DIR)) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Found::None,
            Err(e) => return Found::Unreadable(format!("its directory cannot be opened: {e}")),
        };
        let bytes = match safe_fs::read_regular_at(&dir, NAME, MAX_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Found::None,
            Err(e) => return Found::Unreadable(format!("it cannot be read: {e}")),
        };
        match serde_json::from_slice::<Marker>(&bytes) {
            Ok(m) => match m.check() {
                Ok(()) => Found::Marker(Box::new(m)),
                Err(why) => Found::Unreadable(why.to_string()),
            },
            Err(e) => Found::Unreadable(format!("it is not a marker hone writes: {e}")),
        }
    }

    /// Write `m` durably: a temp file synced, renamed over the marker, the directory synced.
    pub fn write(&self, m: &Marker) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(m).map_err(Error::other)?;
        safe_fs::write_at(&self.dir()?, NAME, &bytes, 0o600)
    }

    /// Remove the marker (durably); a missing one is not an error.
    pub fn remove(&self) -> Result<()> {
        let dir = self.dir()?;
        safe_fs::remove_at(&dir, NAME)?;
        safe_fs::sync_dir(&dir);
        Ok(())
    }

    /// The marker's path, for messages.
    pub fn path(&self) -> PathBuf {
        self.git_dir.join(DIR).join(NAME)
    }
}

/// A start that could not be read: such a process is taken for alive while its pid is.
const UNKNOWN: &str = "unknown";

/// When process `pid` started, in a form that tells it from any other process that had or will
/// have its pid (Linux: the boot's id and the start in clock ticks; macOS: the start time).
#[cfg(target_os = "linux")]
pub fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow
    // the last `)`. The state is field 3; the start time field 22.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first().is_some_and(|s| *s == "Z" || *s == "X") {
        return None;
    }
    let ticks = fields.get(19)?.parse::<u64>().ok()?;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(format!("{}/{ticks}", boot.trim()))
}

#[cfg(target_os = "macos")]
pub fn process_start(pid: u32) -> Option<String> {
    // SAFETY: an all-zero proc_bsdinfo is valid; proc_pidinfo writes at most `size` bytes.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    let pid = libc::c_int::try_from(pid).ok()?;
    // SAFETY: `info` is a valid buffer of `size` bytes.
    let n = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    (n == size && info.pbi_status != libc::SZOMB as u32)
        .then(|| format!("{}.{:06}", info.pbi_start_tvsec, info.pbi_start_tvusec))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn process_start(_pid: u32) -> Option<String> {
    None
}

/// Whether `pid` is a live process that started at `started`. Where starts cannot be read, a
/// live pid counts as alive: a run is refused rather than a live one taken over.
pub fn alive(pid: u32, started: &str) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    if raw <= 1 {
        return false;
    }
    match process_start(pid) {
        Some(now) => now == started,
        // SAFETY: signal 0 checks that the process exists; nothing is sent.
        None => started == UNKNOWN && unsafe { libc::kill(raw, 0) } == 0,
    }
}

#[cfg(test)]
#[path = "marker_tests.rs"]
mod tests;
