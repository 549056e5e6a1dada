//! Credentials found in the checkout: files git does not track (untracked, or ignored, there
//! before the run) that hold a credential, as two google-github-actions/auth steps leave two
//! `gha-creds-*.json` files when the environment names only one. Such a file is hidden like
//! the named ones (every jail masks it, no tool reads it, no checkpoint or commit stages it)
//! and the secrets in it are registered with the redactor.
//!
//! A file holds a credential when it holds a PEM private key, is a JSON credential
//! (`extract::is_credential`), or holds any value the redactor already knows. Each file is read
//! once, regular files only and never through a link, at most `extract::MAX_FILE` bytes (a
//! bigger one is no credentials file and is not read), within a bounded total. An ignored
//! directory (git reports it whole: `node_modules`, `target`) is not walked: only the files
//! directly in it are looked at.

use crate::git::Workspace;
use crate::redact::{Redactor, extract};
use std::path::Path;

/// Why a found file is hidden (the key of its read-deny rule).
pub const WHY: &str = "hidden: a credentials file in the checkout";

/// In an ignored directory, at most so many entries are looked at.
const MAX_ENTRIES: usize = 256;

/// Of `dirty` (the intake status's dirty paths: untracked files one by one, and changed tracked
/// ones), the paths the index does not have.
pub fn untracked(ws: &Workspace, dirty: &[String]) -> Vec<String> {
    // Not in HEAD's tree: a file staged before the run is as much the checkout's own as one
    // never added (git's status lists it as dirty all the same).
    let head = ws.repository().head().ok().and_then(|h| h.peel_to_tree().ok());
    let committed = |rel: &String| head.as_ref().is_some_and(|t| t.get_path(Path::new(rel.as_str())).is_ok());
    dirty.iter().filter(|rel| !committed(rel)).cloned().collect()
}

/// Of the repo-relative `untracked` files and `ignored` entries (as the intake status lists
/// them) under `root`, the files that hold a credential, their secrets registered with
/// `redactor`.
pub fn scan_paths(root: &Path, untracked: &[String], ignored: &[String], redactor: &Redactor) -> Vec<String> {
    let mut budget = Budget { files: 2048, bytes: 16 << 20 };
    let mut read: Vec<(String, Vec<u8>)> = Vec::new();
    for rel in candidates(root, untracked, ignored) {
        if let Some(bytes) = read_beneath(root, &rel, &mut budget) {
            read.push((rel, bytes));
        }
    }
    if budget.files == 0 || budget.bytes == 0 {
        tracing::warn!("looked for credentials in the first {} untracked and ignored files only", read.len());
    }
    // First what is a credential by its form, whose secrets the redactor then knows; then what
    // holds a secret the redactor knows, one of those included.
    let (mut found, mut rest) = (Vec::new(), Vec::new());
    for (rel, bytes) in read {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if extract::is_credential(&text) || extract::is_pkcs12(&bytes) {
            extract::secrets_in(&text).iter().for_each(|s| redactor.add(s));
            found.push(rel);
        } else {
            rest.push((rel, bytes, text));
        }
    }
    for (rel, bytes, text) in rest {
        if redactor.found_in(&bytes) {
            extract::secrets_in(&text).iter().for_each(|s| redactor.add(s));
            found.push(rel);
        }
    }
    found.sort();
    found
}

/// The files to look at: each untracked one, each ignored file, and the files directly in each
/// ignored directory; none a link.
fn candidates(root: &Path, untracked: &[String], ignored: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut left = MAX_DIR_ENTRIES;
    for rel in untracked.iter().chain(ignored) {
        match std::fs::symlink_metadata(root.join(rel)) {
            Ok(m) if m.is_file() => out.push(rel.clone()),
            Ok(m) if m.is_dir() && ignored.contains(rel) => ignored_dir(root, rel, 0, &mut out, &mut left),
            _ => {}
        }
    }
    out
}

/// How deep an ignored directory is looked into (`.secrets/gcp/key.json` is 2 deep).
const MAX_DIR_DEPTH: usize = 3;
/// At most so many entries of ignored directories are looked at in all.
const MAX_DIR_ENTRIES: usize = 4096;

/// Directories of build outputs, dependencies and caches: looked at only by their top files
/// (their bulk is what a build makes, not what CI leaves).
const BULK: &[&str] = &["node_modules", "target", ".venv", "venv", "__pycache__", ".tox", ".gradle", "dist", "build"];

/// The files in the ignored directory `rel` and, unless it is a bulk directory, in its
/// subdirectories `MAX_DIR_DEPTH` deep; never through a link; at most `MAX_ENTRIES` of each
/// directory and `left` entries in all the ignored directories.
fn ignored_dir(root: &Path, rel: &str, depth: usize, out: &mut Vec<String>, left: &mut usize) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
    let bulk = rel.rsplit('/').next().is_some_and(|name| BULK.contains(&name));
    for e in entries.flatten().take(MAX_ENTRIES) {
        let Some(l) = left.checked_sub(1) else { return };
        *left = l;
        let child = format!("{rel}/{}", e.file_name().to_string_lossy());
        match e.file_type() {
            Ok(t) if t.is_file() => out.push(child),
            Ok(t) if t.is_dir() && !bulk && depth + 1 < MAX_DIR_DEPTH => {
                ignored_dir(root, &child, depth + 1, out, left)
            }
            _ => {}
        }
    }
}

/// What hone reads when it looks for credentials: at most so many files, and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub files: usize,
    pub bytes: u64,
}

impl Budget {
    /// Take one file of `len` bytes from the budget; false when it would go past it.
    pub fn take(&mut self, len: u64) -> bool {
        if self.files == 0 || len > self.bytes {
            return false;
        }
        self.files -= 1;
        self.bytes -= len;
        true
    }
}

/// The regular file `rel` beneath `root`, reached without following a link, when it is at most
/// `extract::MAX_FILE` bytes and fits `budget`.
fn read_beneath(root: &Path, rel: &str, budget: &mut Budget) -> Option<Vec<u8>> {
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let len = std::fs::symlink_metadata(root.join(rel)).ok().filter(|m| m.is_file())?.len();
    if len > extract::MAX_FILE || !budget.take(len) {
        return None;
    }
    let dir = crate::safe_fs::open_existing_dir_below(root, Path::new(parent)).ok()?;
    let bytes = crate::safe_fs::read_regular_at(&dir, name, extract::MAX_FILE + 1).ok()?;
    (bytes.len() as u64 <= extract::MAX_FILE).then_some(bytes)
}

#[cfg(test)]
#[path = "found_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "found_attack_tests.rs"]
mod attack_tests;
