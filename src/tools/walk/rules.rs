//! The ignore rules of a walk, decided as ripgrep's `ignore` crate decides them (`.ignore` first,
//! then `.gitignore`, then `.git/info/exclude`, each the deepest match first, then the user's
//! global git excludes), from ignore files hone reads itself: only a regular file, opened without
//! following a link and without waiting, and at most [`MAX_IGNORE_FILE`] bytes of it. Anything
//! else where an ignore file is (a link, a FIFO, a device, a huge file) is never read, so a
//! command's `.ignore -> /dev/zero`, `-> ~/.netrc` or FIFO cannot fill, inform or block the walk.

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::fs::{File, FileType};
use std::io::{BufRead, ErrorKind};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most of one ignore file hone reads; a larger one is not read at all.
pub const MAX_IGNORE_FILE: u64 = 1 << 20;

/// An ignore file hone will not read: what is in its place is not a regular file it can open
/// without following a link, or is larger than [`MAX_IGNORE_FILE`].
#[derive(Debug, PartialEq, Eq)]
pub struct Unusable;

/// The names in a directory's listing that carry rules, with their types as listed.
#[derive(Default)]
pub struct Present {
    pub ignore: Option<FileType>,
    pub gitignore: Option<FileType>,
    pub git: Option<FileType>,
}

impl Present {
    /// Note one name of the listing.
    pub fn note(&mut self, name: &[u8], kind: FileType) {
        match name {
            b".ignore" => self.ignore = Some(kind),
            b".gitignore" => self.gitignore = Some(kind),
            b".git" => self.git = Some(kind),
            _ => {}
        }
    }
}

/// The rules of one directory.
#[derive(Default)]
pub struct Level {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

/// The three kinds of rule, in the order they decide.
const KINDS: [fn(&Level) -> Option<&Gitignore>; 3] =
    [|l| l.ignore.as_ref(), |l| l.git.as_ref(), |l| l.exclude.as_ref()];

impl Level {
    /// The rules of `dir`, from the names its listing has (`.git/info/exclude` only beneath a
    /// `.git` that is a directory: a worktree's `.git` file, which names a place anywhere, is
    /// not followed).
    pub fn listed(dir: &Path, present: &Present) -> Result<Level, Unusable> {
        let read = |kind: Option<FileType>, name: &str| match kind {
            None => Ok(None),
            Some(k) if !k.is_file() => Err(Unusable),
            Some(_) => rules(dir, &dir.join(name), open(&dir.join(name))),
        };
        let exclude = match present.git {
            Some(k) if k.is_dir() => rules(dir, &dir.join(".git/info/exclude"), exclude_file(dir))?,
            _ => None,
        };
        Ok(Level { ignore: read(present.ignore, ".ignore")?, git: read(present.gitignore, ".gitignore")?, exclude })
    }

    /// The rules of a directory above the walk's start (no listing: each file is tried).
    pub fn unlisted(dir: &Path) -> Result<Level, Unusable> {
        let ignore = rules(dir, &dir.join(".ignore"), open(&dir.join(".ignore")))?;
        let git = rules(dir, &dir.join(".gitignore"), open(&dir.join(".gitignore")))?;
        let exclude = rules(dir, &dir.join(".git/info/exclude"), exclude_file(dir))?;
        Ok(Level { ignore, git, exclude })
    }

    pub fn is_empty(&self) -> bool {
        self.ignore.is_none() && self.git.is_none() && self.exclude.is_none()
    }
}

/// What an open's failure means here: nothing there (`None`), or a thing hone will not read.
fn absent<T>(r: std::io::Result<T>) -> Result<Option<T>, Unusable> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(_) => Err(Unusable),
    }
}

/// Open `path` for reading without following a link at its end and without waiting.
fn open(path: &Path) -> Result<Option<File>, Unusable> {
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    absent(std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path))
}

/// `dir/.git/info/exclude`, each step opened without following a link.
fn exclude_file(dir: &Path) -> Result<Option<File>, Unusable> {
    let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let Some(top) = absent(std::fs::OpenOptions::new().read(true).custom_flags(flags).open(dir))? else {
        return Ok(None);
    };
    let Some(git) = absent(crate::safe_fs::open_subdir(&top, c".git"))? else { return Ok(None) };
    let Some(info) = absent(crate::safe_fs::open_subdir(&git, c"info"))? else { return Ok(None) };
    absent(crate::safe_fs::open_regular_at(&info, "exclude"))
}

/// The rules in the file `opened` at `path`, for paths beneath `dir`: `Unusable` unless it is a
/// regular file on disk of at most [`MAX_IGNORE_FILE`] bytes (`safe_fs::read_opened_small`).
/// Read as the `ignore` crate reads one: line by line, a byte-order mark at the start dropped, up
/// to the first line that is not UTF-8; a line that is not a valid pattern is left out.
fn rules(dir: &Path, path: &Path, opened: Result<Option<File>, Unusable>) -> Result<Option<Gitignore>, Unusable> {
    let Some(f) = opened? else { return Ok(None) };
    let text = crate::safe_fs::read_opened_small(f, &path.to_string_lossy(), MAX_IGNORE_FILE).map_err(|_| Unusable)?;
    let mut b = GitignoreBuilder::new(dir);
    for (i, line) in text.as_slice().lines().enumerate() {
        let Ok(line) = line else { break };
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { &line };
        let _ = b.add_line(Some(path.to_path_buf()), line);
    }
    Ok(b.build().ok().filter(|g| !g.is_empty()))
}

/// The rules in force in one directory of the walk: its own, then those of the directories
/// above it that have any (deepest first). Directories without rules share their parent's.
pub struct Chain {
    level: Level,
    up: Option<Arc<Chain>>,
}

impl Chain {
    /// The chain of a directory with `level` below `up`.
    pub fn below(up: Option<Arc<Chain>>, level: Level) -> Option<Arc<Chain>> {
        if level.is_empty() { up } else { Some(Arc::new(Chain { level, up })) }
    }

    fn levels(&self) -> impl Iterator<Item = &Level> {
        std::iter::successors(Some(self), |c| c.up.as_deref()).map(|c| &c.level)
    }
}

/// The rules from outside the walk: those of the directories above its start (matched by the
/// start's real path, as the `ignore` crate does) and the user's global git excludes.
pub struct Above {
    start: PathBuf,
    real: PathBuf,
    /// Whether the start as walked is its real path (then the walk's paths serve as they are).
    walked_is_real: bool,
    levels: Vec<Level>,
    global: Gitignore,
}

impl Above {
    /// The rules above `start`; `Unusable` when one of those directories has an ignore file
    /// hone will not read.
    pub fn of(start: &Path) -> Result<Above, Unusable> {
        let real = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
        let mut levels = Vec::new();
        for dir in real.ancestors().skip(1) {
            let l = Level::unlisted(dir)?;
            if !l.is_empty() {
                levels.push(l);
            }
        }
        let walked_is_real = real == start;
        Ok(Above { start: start.to_path_buf(), real, walked_is_real, levels, global: Gitignore::global().0 })
    }

    /// Whether `path` (beneath the start, in a directory whose rules are `chain`) is ignored.
    pub fn ignored(&self, chain: Option<&Chain>, path: &Path, is_dir: bool) -> bool {
        let mut real: Option<PathBuf> = None;
        for rules_of in KINDS {
            for m in chain.into_iter().flat_map(Chain::levels).filter_map(rules_of) {
                if let Some(ignored) = decided(m.matched(path, is_dir)) {
                    return ignored;
                }
            }
            for m in self.levels.iter().filter_map(rules_of) {
                let real: &Path = if self.walked_is_real {
                    path
                } else {
                    real.get_or_insert_with(|| self.real.join(path.strip_prefix(&self.start).unwrap_or(path)))
                };
                if let Some(ignored) = decided(m.matched(real, is_dir)) {
                    return ignored;
                }
            }
        }
        decided(self.global.matched(path, is_dir)).unwrap_or(false)
    }
}

/// Whether a rule's match ignores the path (`None`: no rule matched).
fn decided<T>(m: Match<T>) -> Option<bool> {
    match m {
        Match::None => None,
        Match::Ignore(_) => Some(true),
        Match::Whitelist(_) => Some(false),
    }
}
