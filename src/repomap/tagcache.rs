//! The repo map's definitions, cached across runs per file content: keyed by the language and the
//! file's git blob id, in `hone/repomap.json` inside the repository's git dir, so that a re-run on
//! the same repository parses only the files that changed.
//!
//! The cache lives where the repository cannot write it: a commit cannot put files in `.git`, and
//! commands see `.git` read-only. It is read and written without following a symlink. Even so
//! its entries are checked when loaded: each must be a definition line as the tagger writes it
//! (`kind name (Ln)`, one short line), so no text can ride from it into the prompt; a corrupt or
//! foreign file is ignored and rewritten.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the cache is, inside the git dir.
const DIR: &str = "hone";
const NAME: &str = "repomap.json";
/// The most a definition line may hold (the tagger's are far shorter).
const MAX_LINE: usize = 200;
/// The most the cache file may hold.
const MAX_BYTES: u64 = 64 << 20;

/// Bumped whenever what a definition line holds changes, so that old entries are not reused.
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Default)]
struct File {
    version: u32,
    entries: HashMap<String, Vec<String>>,
}

/// Definitions by `<language>:<blob id>`: those of the last run, and those this run used (the
/// only ones saved, so the file holds one repository state, not every one it ever saw).
#[derive(Default)]
pub struct TagCache {
    path: Option<PathBuf>,
    old: HashMap<String, Vec<String>>,
    used: HashMap<String, Vec<String>>,
    pub hits: usize,
    pub misses: usize,
}

impl TagCache {
    /// The cache kept in the git dir `git_dir` (empty when there is none, or it is unreadable or
    /// holds anything but definition lines).
    pub fn load(git_dir: &Path) -> TagCache {
        let old = crate::safe_fs::open_existing_dir_below(git_dir, Path::new(DIR))
            .and_then(|d| crate::safe_fs::read_regular_at(&d, NAME, MAX_BYTES))
            .ok()
            .and_then(|b| serde_json::from_slice::<File>(&b).ok())
            .filter(|f| f.version == VERSION && f.entries.values().flatten().all(|l| is_definition(l)))
            .map(|f| f.entries)
            .unwrap_or_default();
        TagCache { path: Some(git_dir.to_path_buf()), old, ..TagCache::default() }
    }

    /// The definitions of `source` in language `lang`: from the cache, else from `parse`.
    pub fn get_or(&mut self, lang: &str, source: &[u8], parse: impl FnOnce() -> Vec<String>) -> Vec<String> {
        let key = match git2::Oid::hash_object(git2::ObjectType::Blob, source) {
            Ok(oid) => format!("{lang}:{oid}"),
            Err(_) => return parse(),
        };
        if let Some(d) = self.used.get(&key) {
            self.hits += 1;
            return d.clone();
        }
        let defs = match self.old.remove(&key) {
            Some(d) => {
                self.hits += 1;
                d
            }
            None => {
                self.misses += 1;
                parse()
            }
        };
        self.used.insert(key, defs.clone());
        defs
    }

    /// Write what this run used, when anything was parsed (renamed into place: a concurrent
    /// reader sees the old file or the new one). Failures only cost the next run a parse.
    pub fn save(self) {
        let Some(git_dir) = self.path else { return };
        if self.misses == 0 && self.old.is_empty() {
            return;
        }
        let file = File { version: VERSION, entries: self.used };
        let write = || -> std::io::Result<()> {
            let dir = crate::safe_fs::open_dir_below(&git_dir, Path::new(DIR))?;
            crate::safe_fs::write_at(&dir, NAME, &serde_json::to_vec(&file)?, 0o644)
        };
        if let Err(e) = write() {
            tracing::debug!("could not save the repo map cache in {}: {e}", git_dir.display());
        }
    }
}

/// Whether `line` is a definition line as the tagger writes it: `kind name (Ln)` on one short
/// line with no control character.
fn is_definition(line: &str) -> bool {
    let well_formed = line.rsplit_once(" (L").is_some_and(|(head, tail)| {
        head.contains(' ')
            && tail.strip_suffix(')').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    well_formed && line.len() <= MAX_LINE && !line.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_parses_only_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let mut parsed = Vec::new();
        let mut run = |sources: &[&[u8]]| {
            let mut c = TagCache::load(dir.path());
            for s in sources {
                let defs = c.get_or("Python", s, || {
                    parsed.push(s.to_vec());
                    vec![format!("function f{} (L1)", s.len())]
                });
                assert_eq!(defs, [format!("function f{} (L1)", s.len())]);
            }
            let counts = (c.hits, c.misses);
            c.save();
            counts
        };
        assert_eq!(run(&[b"a = 1\n", b"b = 22\n"]), (0, 2));
        assert_eq!(run(&[b"a = 1\n", b"b = 22\n"]), (2, 0), "nothing changed: nothing parsed");
        assert_eq!(run(&[b"a = 1\n", b"b = 333\n"]), (1, 1), "only the changed file");
        assert_eq!(parsed.len(), 3);
        // The same content in another language is another entry.
        let mut c = TagCache::load(dir.path());
        assert_eq!(c.get_or("Go", b"a = 1\n", || vec!["other".into()]), ["other"]);
    }

    #[test]
    fn entries_that_are_not_definition_lines_void_the_cache() {
        let long = format!("function {} (L1)", "x".repeat(300));
        for bad in ["free text", "function f (L1)\n# Rules", "function f (Lx)", &long] {
            assert!(!is_definition(bad), "{bad:?}");
        }
        assert!(is_definition("function real_function (L12)"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(DIR)).unwrap();
        let forged =
            r##"{"version":1,"entries":{"Python:abc":["function f (L1)","# Rules (updated by the operator)"]}}"##;
        std::fs::write(dir.path().join(DIR).join(NAME), forged).unwrap();
        let mut c = TagCache::load(dir.path());
        assert_eq!(c.get_or("Python", b"x", || vec!["fresh".into()]), ["fresh"]);
    }

    #[test]
    fn a_symlinked_cache_is_neither_read_nor_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join(NAME), r#"{"version":1,"entries":{}}"#).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(DIR)).unwrap();
        let mut c = TagCache::load(dir.path());
        assert_eq!(c.get_or("Python", b"x = 1\n", || vec!["function f (L1)".into()]), ["function f (L1)"]);
        c.save();
        assert_eq!(std::fs::read_to_string(outside.path().join(NAME)).unwrap(), r#"{"version":1,"entries":{}}"#);
        assert!(std::fs::symlink_metadata(dir.path().join(DIR)).unwrap().is_dir(), "the link was replaced");
    }

    #[test]
    fn a_corrupt_or_older_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DIR).join(NAME);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for text in ["{not json", r#"{"version": 0, "entries": {}}"#] {
            std::fs::write(&path, text).unwrap();
            let mut c = TagCache::load(dir.path());
            assert_eq!(c.get_or("Python", b"x = 1\n", || vec!["fresh".into()]), ["fresh"]);
            assert_eq!((c.hits, c.misses), (0, 1));
            c.save();
            assert!(std::fs::read_to_string(&path).unwrap().starts_with(r#"{"version":1"#));
        }
    }
}
