//! How hone walks the work tree on the host (the search tools, the repo map, the count of a new
//! directory), on every core: `.gitignore`, `.ignore` and `.git/info/exclude` respected as git
//! and ripgrep do, hidden files seen, `.git` skipped, symlinks not followed. Each directory is
//! listed once, and its ignore files are read only when the listing has them as regular files,
//! by [`rules`], which opens them without following a link or waiting. A directory whose ignore
//! file is anything else (a link, a FIFO, a huge file) is left out, and the walk says so; when
//! the walk's start or a directory above it has one, no ignore file is read at all.

mod rules;

use rules::{Above, Chain, Level, Present};
use std::fs::{FileType, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// The most threads one walk uses.
const MAX_THREADS: usize = 12;

/// One thing the walk found beneath its start: a file, a directory, a link or anything else.
pub struct Entry {
    path: PathBuf,
    kind: FileType,
    listed: Option<std::fs::DirEntry>,
}

impl Entry {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its type, as its directory's listing gave it (a link is a link).
    pub fn file_type(&self) -> FileType {
        self.kind
    }

    /// Its metadata, not following a link.
    pub fn metadata(&self) -> std::io::Result<Metadata> {
        match &self.listed {
            Some(d) => d.metadata(),
            None => std::fs::symlink_metadata(&self.path),
        }
    }
}

/// What a visitor wants next.
pub enum Step {
    Continue,
    /// Stop the whole walk (every thread) as soon as it can.
    Quit,
}

/// A walk of one directory's tree (or of one file).
pub struct Walk {
    start: PathBuf,
    skipped: AtomicBool,
}

impl Walk {
    pub fn new(start: &Path) -> Walk {
        Walk { start: start.to_path_buf(), skipped: AtomicBool::new(false) }
    }

    /// Whether the walk left out a directory because an ignore file in it is one hone does not
    /// read (what counts files must then not trust its count).
    pub fn skipped(&self) -> bool {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Visit everything beneath the start (not the start itself, unless it is not a directory),
    /// on several threads, each with its own visitor from `make`.
    pub fn run<F>(&self, mut make: impl FnMut() -> F)
    where
        F: FnMut(&Entry) -> Step + Send,
    {
        let Ok(meta) = std::fs::metadata(&self.start) else { return };
        if !meta.is_dir() {
            let kind = std::fs::symlink_metadata(&self.start).map_or(meta.file_type(), |m| m.file_type());
            make()(&Entry { path: self.start.clone(), kind, listed: None });
            return;
        }
        let above = match Above::of(&self.start) {
            Ok(a) if Level::unlisted(&self.start).is_ok() => Some(a),
            _ => None,
        };
        let start = Dir { path: self.start.clone(), chain: None };
        let shared = Shared {
            queue: Mutex::new(Queue { dirs: vec![start], busy: 0 }),
            more: Condvar::new(),
            quit: AtomicBool::new(false),
            above,
            walk: self,
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        // The calling thread walks too, beside `threads - 1` others.
        let mut own = make();
        std::thread::scope(|s| {
            for _ in 1..threads {
                let (shared, mut visit) = (&shared, make());
                s.spawn(move || shared.work(&mut visit));
            }
            shared.work(&mut own);
        });
    }
}

/// Held while a thread lists a directory: if a visitor panics, the walk ends for every thread
/// (the others would otherwise wait for this one's directories for ever), and the panic goes on
/// to the caller once they have.
struct Unwinding<'s, 'w>(&'s Shared<'w>);

impl Drop for Unwinding<'_, '_> {
    fn drop(&mut self) {
        self.0.quit.store(true, Ordering::Relaxed);
        let mut q = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.busy = q.busy.saturating_sub(1);
        drop(q);
        self.0.more.notify_all();
    }
}

/// A directory to list, with the rules in force in it.
struct Dir {
    path: PathBuf,
    chain: Option<Arc<Chain>>,
}

struct Queue {
    dirs: Vec<Dir>,
    /// How many threads are listing a directory (and may add more).
    busy: usize,
}

/// What a walk's threads share.
struct Shared<'w> {
    queue: Mutex<Queue>,
    more: Condvar,
    quit: AtomicBool,
    /// The rules from outside the walk; `None`: no ignore file is read.
    above: Option<Above>,
    walk: &'w Walk,
}

impl Shared<'_> {
    fn work<F: FnMut(&Entry) -> Step>(&self, visit: &mut F) {
        while let Some(dir) = self.next() {
            let unwinding = Unwinding(self);
            let found = self.list(dir, visit);
            std::mem::forget(unwinding);
            let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            q.busy -= 1;
            let wake = !found.is_empty() || q.busy == 0 || self.quit.load(Ordering::Relaxed);
            q.dirs.extend(found);
            drop(q);
            // Those waiting need waking only for more work, or to end.
            if wake {
                self.more.notify_all();
            }
        }
    }

    /// The next directory to list; `None` when there is none left and none coming, or on a quit.
    fn next(&self) -> Option<Dir> {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.quit.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(d) = q.dirs.pop() {
                q.busy += 1;
                return Some(d);
            }
            if q.busy == 0 {
                return None;
            }
            q = self.more.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// List `dir`, visit what it holds that no rule ignores, and give back its subdirectories.
    fn list<F: FnMut(&Entry) -> Step>(&self, dir: Dir, visit: &mut F) -> Vec<Dir> {
        let Ok(listing) = std::fs::read_dir(&dir.path) else { return Vec::new() };
        let mut present = Present::default();
        let mut entries = Vec::new();
        for e in listing.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let name = e.file_name();
            present.note(name.as_bytes(), kind);
            if name != ".git" {
                entries.push((e, kind));
            }
        }
        let chain = match &self.above {
            None => None,
            Some(_) => match Level::listed(&dir.path, &present) {
                Ok(level) => Chain::below(dir.chain, level),
                Err(rules::Unusable) => {
                    self.walk.skipped.store(true, Ordering::Relaxed);
                    return Vec::new();
                }
            },
        };
        let mut dirs = Vec::new();
        for (e, kind) in entries {
            let path = e.path();
            if self.above.as_ref().is_some_and(|a| a.ignored(chain.as_deref(), &path, kind.is_dir())) {
                continue;
            }
            if kind.is_dir() {
                dirs.push(Dir { path: path.clone(), chain: chain.clone() });
            }
            if self.quit.load(Ordering::Relaxed) {
                break;
            }
            if let Step::Quit = visit(&Entry { path, kind, listed: Some(e) }) {
                self.quit.store(true, Ordering::Relaxed);
                break;
            }
        }
        dirs
    }
}

#[cfg(test)]
mod tests;
