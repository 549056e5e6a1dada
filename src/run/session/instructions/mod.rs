//! The repository's instruction files for coding agents (`AGENTS.md`, `CLAUDE.md`, …), read from
//! the base commit, so that the model's edits never change what it is told, and bounded: the
//! listed files at the start, and a directory's own (the plain names of the list) the first time
//! a tool call touches a path beneath it, all within the run's budget.

mod frame;
mod read;
#[cfg(test)]
mod tests;

use crate::record::instructions::InstructionFile;
use crate::spec::InstructionsSpec;
use read::Blob;
use std::collections::HashSet;

/// Below this many bytes of budget left, no further file is given.
const MIN_LEFT: usize = 256;

/// What the run has looked up and given so far, and the budget left.
pub struct Instructions {
    spec: InstructionsSpec,
    /// The commit the files are read from, or why there is none.
    base: Result<git2::Oid, crate::error::HoneError>,
    /// Directories already looked in (`""`: the root).
    seen: HashSet<String>,
    /// Paths already looked up.
    tried: HashSet<String>,
    /// Bytes of the run's budget left.
    left: usize,
    /// The blocks given after tool results, as the model got them (a compaction restates those
    /// it summarized away).
    given: Vec<String>,
}

/// One file to give: its text (as bounded) and its line in the report.
pub(super) struct Given {
    pub text: String,
    pub record: InstructionFile,
}

/// What a look-up found: the files to give, and why others were left out.
#[derive(Default)]
pub(super) struct Found {
    pub files: Vec<Given>,
    pub warnings: Vec<String>,
}

impl Instructions {
    pub fn new(spec: &InstructionsSpec, base: Result<git2::Oid, crate::error::HoneError>) -> Self {
        Instructions {
            spec: spec.clone(),
            base,
            seen: HashSet::new(),
            tried: HashSet::new(),
            left: spec.tokens.saturating_mul(4),
            given: Vec::new(),
        }
    }

    /// Whether any file is to be read at all (a list, and a budget).
    fn on(&self) -> bool {
        !self.spec.files.is_empty() && self.spec.tokens > 0
    }

    /// The commit the files are read from, for the report; `None` when none are read.
    pub(super) fn commit(&self) -> Option<String> {
        self.base.as_ref().ok().filter(|_| self.on()).map(git2::Oid::to_string)
    }

    /// The listed files, at their paths from the root (turn 0). Without a base commit, none (and
    /// a warning that says why): nothing else stands in for it.
    pub(super) fn at_start(&mut self, repo: &git2::Repository, readable: &dyn Fn(&str) -> bool) -> Found {
        self.seen.insert(String::new());
        if let (Err(why), true) = (&self.base, self.on()) {
            let warning = format!("the instruction files were not read: {}; the run goes on without them", why.message);
            return Found { files: Vec::new(), warnings: vec![warning] };
        }
        let paths = self.spec.files.clone();
        self.look(repo, &paths, 0, readable)
    }

    /// The start's files, taken as given: a continued conversation already has them.
    pub(super) fn skip_start(&mut self) {
        self.seen.insert(String::new());
        self.tried.extend(self.spec.files.iter().cloned());
    }

    /// The plain names of the list in each directory leading to `targets` (repo-relative paths;
    /// `true`: the path is a directory itself) that no earlier call looked in.
    pub(super) fn along(
        &mut self,
        repo: &git2::Repository,
        targets: &[(String, bool)],
        turn: u32,
        readable: &dyn Fn(&str) -> bool,
    ) -> Found {
        let names: Vec<&String> = self.spec.files.iter().filter(|f| !f.contains('/')).collect();
        let mut paths = Vec::new();
        for (target, is_dir) in targets {
            for dir in dirs_to(target, *is_dir) {
                if !names.is_empty() && self.seen.insert(dir.clone()) {
                    paths.extend(names.iter().map(|n| join(&dir, n)));
                }
            }
        }
        self.look(repo, &paths, turn, readable)
    }

    fn look(&mut self, repo: &git2::Repository, paths: &[String], turn: u32, readable: &dyn Fn(&str) -> bool) -> Found {
        let mut found = Found::default();
        let Ok(base) = self.base else { return found };
        if paths.is_empty() || self.spec.tokens == 0 {
            return found;
        }
        let tree = match repo.find_commit(base).and_then(|c| c.tree()) {
            Ok(t) => t,
            Err(e) => {
                found
                    .warnings
                    .push(format!("the instruction files could not be read at the base commit: {}", e.message()));
                return found;
            }
        };
        for path in paths {
            if !self.tried.insert(path.clone()) {
                continue;
            }
            let left_out = |why: &str| format!("instruction file {} left out: {why}", crate::markdown::code(path));
            if !readable(path) {
                if tree.get_path(std::path::Path::new(path)).is_ok() {
                    found.warnings.push(left_out("the policy denies reading it"));
                }
                continue;
            }
            if tree.get_path(std::path::Path::new(path)).is_err() {
                continue;
            }
            // The budget is looked at before the blob is read: a spent one reads nothing.
            if self.left < MIN_LEFT {
                found.warnings.push(left_out("the budget (`context.instructions_tokens`) is spent"));
                continue;
            }
            let limit = self.spec.max_bytes.min(self.left);
            let (text, bytes, lossy, whole) = match read::read(repo, &tree, path, limit) {
                Blob::Absent => continue,
                Blob::Refused(why) => {
                    found.warnings.push(left_out(&why));
                    continue;
                }
                Blob::Text { text, .. } if text.trim().is_empty() => continue,
                Blob::Text { text, bytes, lossy, whole } => (text, bytes, lossy, whole),
            };
            let (given, cut_short) = read::cut(&text, limit);
            let truncated = cut_short || !whole;
            self.left -= given.len();
            if lossy {
                found.warnings.push(format!(
                    "instruction file {} is not UTF-8: its invalid bytes were replaced",
                    crate::markdown::code(path)
                ));
            }
            let record =
                InstructionFile { path: path.clone(), bytes, given_bytes: given.len() as u64, truncated, turn };
            found.files.push(Given { text: given.to_string(), record });
        }
        found
    }
}

/// `name` in directory `dir` (`""`: the root).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

/// `p` as a plain repo-relative path (`.` and empty components dropped, `..` applied); `None`
/// when it is absolute or leads out of the root.
pub(super) fn lexical(p: &str) -> Option<String> {
    if p.starts_with('/') || p.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// The directories from the root down to `rel` (a plain path): to its parent for a file, to
/// itself for a directory. The root is `""`.
pub(super) fn dirs_to(rel: &str, is_dir: bool) -> Vec<String> {
    let parts: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
    let depth = if is_dir { parts.len() } else { parts.len().saturating_sub(1) };
    (0..=depth).map(|i| parts[..i].join("/")).collect()
}
