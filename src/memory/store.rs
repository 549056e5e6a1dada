//! Where memories live: one JSON file per repository, `<dir>/<16 hex of sha256(key)>.json`,
//! written atomically (a temp file renamed), never through a symlink, and changed only under an
//! exclusive lock (`.lock`, so two runs that finish at once both keep what they saw); a
//! file that is too large, unreadable, of another version, for another key or not JSON is
//! ignored with a warning.

use super::{Memory, RepoKey, VERSION};
use crate::env::RunEnv;
use crate::error::{Code, HoneError, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest memory file read.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The lock file in the store's directory (not a memory file: `list` and `clear` leave it).
const LOCK_FILE: &str = ".lock";

/// How long a change waits for another process (a run, `hone memory`) to finish changing the
/// store: a change holds the lock only to read, merge and write one file.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The directory memories live in, and why a setting was ignored: `HONE_MEMORY_DIR` (absolute),
/// else `$XDG_STATE_HOME/hone/memory` (absolute), else `$HOME/.local/state/hone/memory`.
pub fn default_dir_checked(env: &RunEnv) -> (Option<PathBuf>, Vec<String>) {
    let mut warnings = vec![];
    for (var, tail) in [("HONE_MEMORY_DIR", ""), ("XDG_STATE_HOME", "hone/memory")] {
        match env.var(var).map(PathBuf::from) {
            Some(p) if p.is_absolute() => return (Some(if tail.is_empty() { p } else { p.join(tail) }), warnings),
            Some(p) => warnings.push(format!("{var} is not an absolute path (`{}`): ignored", p.display())),
            None => {}
        }
    }
    (env.home().map(|h| h.join(".local/state/hone/memory")), warnings)
}

/// [`default_dir_checked`], its warnings logged.
pub fn default_dir(env: &RunEnv) -> Option<PathBuf> {
    let (dir, warnings) = default_dir_checked(env);
    for w in warnings {
        tracing::warn!("memory: {w}");
    }
    dir
}

/// The file name of `key`'s memory.
pub fn file_name(key: &RepoKey) -> String {
    let digest = Sha256::digest(key.as_str().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

fn is_memory_file(name: &str) -> bool {
    name.len() == 21
        && name.ends_with(".json")
        && name[..16].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One repository in the store, for `hone memory list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub key: String,
    pub entries: usize,
    pub last_seen: Option<String>,
    pub file: PathBuf,
}

/// The memories in one directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// How long a change waits for the lock ([`LOCK_WAIT`]).
    wait: Duration,
}

/// The first line of a memory file, read before the rest.
#[derive(serde::Deserialize)]
struct Head {
    version: u32,
    key: String,
}

/// A memory file that is there but cannot be used: it is ignored, with a warning saying why.
#[derive(Debug, thiserror::Error)]
#[error("memory file {}: {why}; ignored (start afresh with `hone memory clear`)", path.display())]
struct Ignored {
    path: PathBuf,
    why: Unusable,
}

/// Why a memory file cannot be used.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("it is a symlink")]
    Symlink,
    #[error("cannot read it ({0})")]
    Unreadable(std::io::Error),
    #[error("it is larger than {} KiB", MAX_FILE_BYTES / 1024)]
    TooLarge,
    #[error("it is not a memory file ({0})")]
    NotMemory(serde_json::Error),
    #[error("it has version {0}, this hone reads {VERSION}")]
    Version(u32),
    #[error("its key is not one")]
    NoKey,
    /// The key (as stored) of the repository it is for.
    #[error("it is for another repository (`{0}`)")]
    OtherRepo(String),
    #[error("its key does not match its name")]
    MisNamed,
}

impl Store {
    pub fn at(dir: PathBuf) -> Store {
        Store { dir, wait: LOCK_WAIT }
    }

    /// The same store, whose changes wait at most `wait` for the lock.
    #[cfg(test)]
    pub fn waiting(self, wait: Duration) -> Store {
        Store { wait, ..self }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `key`'s memory is kept.
    pub fn path_of(&self, key: &RepoKey) -> PathBuf {
        self.dir.join(file_name(key))
    }

    /// `key`'s memory, empty when there is none; a file that cannot be used is ignored, with a
    /// warning that says why. Never fails.
    pub fn load(&self, key: &RepoKey) -> (Memory, Vec<String>) {
        let name = file_name(key);
        let dir = match File::open(&self.dir) {
            Ok(d) => OwnedFd::from(d),
            Err(e) if e.kind() == ErrorKind::NotFound => return (Memory::new(key), vec![]),
            Err(e) => {
                return (Memory::new(key), vec![format!("cannot open the memory dir {}: {e}", self.dir.display())]);
            }
        };
        match self.read(&dir, &name, Some(key)) {
            Ok(Some(m)) => (m, vec![]),
            Ok(None) => (Memory::new(key), vec![]),
            Err(why) => (Memory::new(key), vec![why.to_string()]),
        }
    }

    /// Read `name` in `dir`: `None` when it does not exist, an error (a warning's text) when it
    /// cannot be used. With `key`, the file must be that key's; without, its name must match the
    /// key it holds.
    fn read(&self, dir: &OwnedFd, name: &str, key: Option<&RepoKey>) -> Result<Option<Memory>, Ignored> {
        let ignored = |why: Unusable| Ignored { path: self.dir.join(name), why };
        let bytes = match crate::safe_fs::read_regular_at(dir, name, MAX_FILE_BYTES + 1) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(ignored(Unusable::Symlink)),
            Err(e) => return Err(ignored(Unusable::Unreadable(e))),
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ignored(Unusable::TooLarge));
        }
        let head: Head = serde_json::from_slice(&bytes).map_err(|e| ignored(Unusable::NotMemory(e)))?;
        if head.version != VERSION {
            return Err(ignored(Unusable::Version(head.version)));
        }
        let stored = RepoKey::from_stored(&head.key).ok_or_else(|| ignored(Unusable::NoKey))?;
        match key {
            Some(k) if *k != stored => return Err(ignored(Unusable::OtherRepo(head.key))),
            None if file_name(&stored) != name => return Err(ignored(Unusable::MisNamed)),
            _ => {}
        }
        let m: Memory = serde_json::from_slice(&bytes).map_err(|e| ignored(Unusable::NotMemory(e)))?;
        Ok(Some(m.sanitized()))
    }

    /// Write `m` as its key's file (the dir made 0700, the file 0600, atomically), under the
    /// store's lock; its path. A change to what is stored goes through [`Store::update`].
    pub fn save(&self, m: &Memory) -> Result<PathBuf> {
        let key = RepoKey::from_stored(&m.key)
            .ok_or_else(|| HoneError::new(Code::Io, format!("`{}` is not a memory key", m.key)))?;
        let dir = self.locked()?;
        self.write(&dir, &key, m)
    }

    /// Load `key`'s memory, let `change` edit it and save it when it changed, all under an
    /// exclusive lock on the store, so what another process saved meanwhile is never lost. What
    /// `change` returned and the load's warnings; an error from `change` saves nothing.
    pub fn update<T>(&self, key: &RepoKey, change: impl FnOnce(&mut Memory) -> Result<T>) -> Result<(T, Vec<String>)> {
        let dir = self.locked()?;
        let (mut m, mut warnings) = match self.read(dir.fd(), &file_name(key), Some(key)) {
            Ok(Some(m)) => (m, vec![]),
            Ok(None) => (Memory::new(key), vec![]),
            Err(why) => (Memory::new(key), vec![why.to_string()]),
        };
        warnings.extend(dir.warning.clone());
        let before = m.clone();
        let out = change(&mut m)?;
        if m != before {
            self.write(&dir, key, &m)?;
        }
        Ok((out, warnings))
    }

    /// The store's directory, made (0700) when missing, open, and locked: an exclusive lock on
    /// its `.lock` file (a regular file, which NFS can lock too), waiting at most [`LOCK_WAIT`]
    /// for another holder. Where the file system cannot lock at all, it is used unlocked, with a
    /// warning.
    fn locked(&self) -> Result<Locked> {
        let io = |e| unwritable(format!("cannot use the memory dir {}", self.dir.display()), e);
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(io)?;
        let dir = OwnedFd::from(File::open(&self.dir).map_err(io)?);
        let lock = crate::safe_fs::open_or_create_at(&dir, LOCK_FILE, 0o600).map_err(io)?;
        let started = Instant::now();
        loop {
            match lock.try_lock() {
                Ok(()) => return Ok(Locked { dir, _lock: Some(lock), warning: None }),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < self.wait => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(HoneError::new(
                        Code::Conflict,
                        format!(
                            "the memory dir {} stayed locked by another hone for {}s; nothing was changed",
                            self.dir.display(),
                            self.wait.as_secs_f32()
                        ),
                    )
                    .hint("another run or `hone memory` is changing it; try again when it has finished"));
                }
                Err(std::fs::TryLockError::Error(e)) if cannot_lock(&e) => {
                    let warning = format!(
                        "the memory dir {} cannot be locked ({e}): changed without a lock, so a run finishing at the same time may lose what it saw",
                        self.dir.display()
                    );
                    return Ok(Locked { dir, _lock: None, warning: Some(warning) });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }

    /// Write `m` as `key`'s file in the locked `dir`, bounded first; its path.
    fn write(&self, dir: &Locked, key: &RepoKey, m: &Memory) -> Result<PathBuf> {
        let path = self.path_of(key);
        let io = |e| unwritable(format!("cannot write the memory file {}", path.display()), e);
        let mut m = m.clone();
        m.evict();
        let mut bytes = serde_json::to_vec(&m).map_err(|e| io(std::io::Error::other(e)))?;
        bytes.push(b'\n');
        crate::safe_fs::write_at(dir.fd(), &file_name(key), &bytes, 0o600).map_err(io)?;
        Ok(path)
    }

    /// Remove `key`'s memory; whether there was one.
    pub fn remove(&self, key: &RepoKey) -> Result<bool> {
        let path = self.path_of(key);
        if std::fs::symlink_metadata(&self.dir).is_err() {
            return Ok(false);
        }
        let dir = self.locked()?;
        let existed = std::fs::symlink_metadata(&path).is_ok();
        crate::safe_fs::remove_at(dir.fd(), &file_name(key))
            .map_err(|e| HoneError::new(Code::Io, format!("cannot remove {}: {e}", path.display())))?;
        Ok(existed)
    }

    /// Every memory file's name in the store (others are left alone), sorted.
    fn names(&self) -> Result<Vec<String>> {
        let read = match std::fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(HoneError::new(Code::Io, format!("cannot read {}: {e}", self.dir.display()))),
        };
        let mut names: Vec<String> =
            read.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| is_memory_file(n)).collect();
        names.sort();
        Ok(names)
    }

    /// Every repository in the store, by key, and the warnings of the files that were ignored.
    pub fn list(&self) -> Result<(Vec<Summary>, Vec<String>)> {
        let names = self.names()?;
        if names.is_empty() {
            return Ok((vec![], vec![]));
        }
        let dir = OwnedFd::from(
            File::open(&self.dir)
                .map_err(|e| HoneError::new(Code::Io, format!("cannot open {}: {e}", self.dir.display())))?,
        );
        let (mut out, mut warnings) = (vec![], vec![]);
        for name in names {
            match self.read(&dir, &name, None) {
                Ok(Some(m)) => out.push(Summary {
                    last_seen: m.entries.iter().map(|e| e.last_seen.clone()).max(),
                    key: m.key,
                    entries: m.entries.len(),
                    file: self.dir.join(&name),
                }),
                Ok(None) => {}
                Err(w) => warnings.push(w.to_string()),
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((out, warnings))
    }

    /// Remove every memory file in the store; how many there were.
    pub fn clear_all(&self) -> Result<usize> {
        let names = self.names()?;
        if names.is_empty() {
            return Ok(0);
        }
        let err = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot clear {}: {e}", self.dir.display()));
        let dir = self.locked()?;
        for n in &names {
            crate::safe_fs::remove_at(dir.fd(), n).map_err(err)?;
        }
        Ok(names.len())
    }
}

/// The store's directory, open, and its lock file, held until dropped (the lock is the open
/// file's, so it goes with the process too); `None` and a warning where it cannot be locked.
struct Locked {
    dir: OwnedFd,
    _lock: Option<File>,
    warning: Option<String>,
}

impl Locked {
    fn fd(&self) -> &OwnedFd {
        &self.dir
    }
}

/// `what` failed for `e`, and what to do about a memory dir hone cannot write.
fn unwritable(what: String, e: std::io::Error) -> HoneError {
    HoneError::new(Code::Io, format!("{what}: {e}")).hint(
        "check that the memory dir is writable (HONE_MEMORY_DIR, or `--dir`), or turn memory off with `memory: { enabled: false }`",
    )
}

/// Whether `e` says the file system cannot lock (NFS without a lock manager, FUSE), not that
/// the lock is taken.
fn cannot_lock(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS | libc::EBADF))
}
