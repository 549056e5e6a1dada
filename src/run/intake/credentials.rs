//! The credentials the environment names: the files of `env::CREDENTIAL_FILES`, the
//! directories of `env::CREDENTIAL_DIRS` and each file of `KUBECONFIG`, and the files hone's
//! model clients read. Every jail and every file tool hides them, at the path as named and at
//! its real path, wherever they lie (a home, a runner's temp dir, the checkout); the secrets in
//! them are registered with the redactor, which masks them wherever the run writes.

use crate::env::{Place, RunEnv};
use crate::policy::Policy;
use crate::redact::{Redactor, extract};
use std::path::{Path, PathBuf};

/// Why a named place is hidden (the key of its read-deny rule).
const WHY: &str = "hidden: credentials the environment names";

/// In a named directory: how deep hone looks (gcloud keeps `legacy_credentials/ACCOUNT/adc.json`).
const MAX_DEPTH: usize = 3;

use crate::redact::found::Budget;

/// Hide every credential place the environment names, and the files hone's model clients read
/// (`model_files`), from every jail and tool: at its path as named (a home reached through a
/// link is shown at that path) and at its real path. A place that does not exist has nothing
/// to hide.
pub fn hide_named(policy: &mut Policy, env: &RunEnv, model_files: impl IntoIterator<Item = PathBuf>, root: &Path) {
    let named = env.credential_places().into_iter().map(|p| p.path);
    for place in named.chain(model_files) {
        let Ok(real) = place.canonicalize() else { continue };
        for path in [crate::safe_fs::lexical(&place), real] {
            policy.hide_file(&path, root, WHY);
        }
    }
}

/// Register with the redactor the secrets in every credential place the environment names:
/// each named file (links followed: the environment is trusted), and the regular files of each
/// named directory, `MAX_DEPTH` deep, never through a link. A file larger than
/// `extract::MAX_FILE` is no credentials file and is not read.
pub fn register_named(redactor: &Redactor, env: &RunEnv) {
    let mut budget = Budget { files: 512, bytes: 8 << 20 };
    for place in env.credential_places() {
        let mut files = Vec::new();
        match place.kind {
            Place::File => files.push(place.path.clone()),
            Place::Dir => files_in(&place.path, 0, &mut files),
        }
        for file in files {
            let Some(bytes) = read_credential(&file, &mut budget) else { continue };
            for secret in extract::secrets_in(&String::from_utf8_lossy(&bytes)) {
                redactor.add(&secret);
            }
        }
    }
}

/// The regular files in `dir` and below it, `MAX_DEPTH` deep, reached without following a link
/// (at most a few hundred: a credentials directory is small).
fn files_in(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten().take(256) {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_file() && out.len() < 512 {
            out.push(e.path());
        } else if kind.is_dir() && depth + 1 < MAX_DEPTH {
            files_in(&e.path(), depth + 1, out);
        }
    }
}

/// The bytes of the credentials file at `path`, when it is a regular file of at most
/// `extract::MAX_FILE` bytes that fits `budget` (which it takes from).
fn read_credential(path: &Path, budget: &mut Budget) -> Option<Vec<u8>> {
    let len = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
    if len > extract::MAX_FILE || !budget.take(len) {
        return None;
    }
    crate::safe_fs::read_small(path, extract::MAX_FILE).ok()
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
