//! The repo map's definitions, cached across runs per file content: keyed by the language and the
//! file's git blob id, in `.hone/cache/repomap.json`, so that a re-run on the same repository
//! parses only the files that changed.
//!
//! The file is hone's own (`.hone/` is never committed, and the jail masks it from commands). A
//! forged one could only change which definitions the map lists, which the repository's own
//! files can do as well; a corrupt or foreign one is ignored and rewritten.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    /// The cache of the repository at `root` (empty when there is none or it is unreadable).
    pub fn load(root: &Path) -> TagCache {
        let path = root.join(super::locate::HONE_DIR).join("cache").join("repomap.json");
        let old = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<File>(&b).ok())
            .filter(|f| f.version == VERSION)
            .map(|f| f.entries)
            .unwrap_or_default();
        TagCache { path: Some(path), old, ..TagCache::default() }
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
        let Some(path) = self.path else { return };
        if self.misses == 0 && self.old.is_empty() {
            return;
        }
        let Some(dir) = path.parent() else { return };
        let file = File { version: VERSION, entries: self.used };
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            serde_json::to_writer(&mut tmp, &file)?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::debug!("could not save the repo map cache {}: {e}", path.display());
        }
    }
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
                    vec![format!("def {}", s.len())]
                });
                assert_eq!(defs, [format!("def {}", s.len())]);
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
    fn a_corrupt_or_older_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".hone/cache/repomap.json");
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
