//! Guards before the commit: the diff guard (every changed path against the policy's write rules
//! and size limits) and the `.git` guard (commands must not have planted hooks or config).

use crate::git::FileChange;
use crate::policy::{Access, Policy, decide_path};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Problems that refuse the commit. Empty: the change may be committed.
pub fn diff_guard(policy: &Policy, changes: &[FileChange]) -> Vec<String> {
    let mut problems = Vec::new();
    for c in changes {
        let d = decide_path(policy, &c.path, Access::Write);
        if !d.allowed {
            problems.push(format!("`{}` was changed, but the policy denies writing it (rule: {})", c.path, d.rule));
        }
    }
    if changes.len() > policy.max_files_changed {
        problems.push(format!(
            "{} files changed; the policy allows at most {} (limits.max_files_changed)",
            changes.len(),
            policy.max_files_changed
        ));
    }
    let lines: usize = changes.iter().map(|c| c.added + c.removed).sum();
    if lines > policy.max_lines_changed {
        problems.push(format!(
            "{lines} lines changed; the policy allows at most {} (limits.max_lines_changed)",
            policy.max_lines_changed
        ));
    }
    let bytes: u64 = changes.iter().map(|c| c.bytes).sum();
    if bytes > policy.max_bytes_changed {
        let biggest = changes.iter().max_by_key(|c| c.bytes).map(|c| c.path.as_str()).unwrap_or_default();
        problems.push(format!(
            "{bytes} bytes changed (the most in `{biggest}`); the policy allows at most {} (limits.max_bytes_changed)",
            policy.max_bytes_changed
        ));
    }
    problems
}

/// The problem with a change of more files, or of new files of more bytes, than the policy
/// allows, told after counting only that far (such a change is neither diffed nor saved).
pub fn too_large(policy: &Policy, counted: &crate::git::Counted) -> String {
    let first: Vec<String> = counted.files.iter().take(5).map(|f| format!("`{f}`")).collect();
    let what = if let Some(dir) = &counted.uncountable {
        format!(
            "the new directory `{dir}` holds an ignore file that is not a regular file (a link, say), which hone does not read, so its files cannot be counted"
        )
    } else if counted.files.len() > policy.max_files_changed {
        format!(
            "more than {} files changed ({}, …); the policy allows at most {} (limits.max_files_changed)",
            policy.max_files_changed,
            first.join(", "),
            policy.max_files_changed
        )
    } else {
        format!(
            "new files of more than {} bytes ({}, …); the policy allows at most {} bytes changed (limits.max_bytes_changed)",
            policy.max_bytes_changed,
            first.join(", "),
            policy.max_bytes_changed
        )
    };
    format!("{what}. A change this large is neither diffed nor saved")
}

/// The symlinks of the change that lead outside the repository (an absolute target, or one
/// that climbs above the root with `..`): committing one would hand whoever checks the branch
/// out (a CI job, a reviewer) a link to their own files.
pub fn links_out(root: &Path, changes: &[FileChange]) -> Vec<String> {
    let mut found = Vec::new();
    for c in changes.iter().filter(|c| c.status != "deleted") {
        let Ok(target) = std::fs::read_link(root.join(c.on_disk())) else { continue };
        let depth = c.path.matches('/').count() as i64;
        let mut level = depth;
        let mut escapes = target.is_absolute();
        for part in target.components() {
            match part {
                std::path::Component::ParentDir => level -= 1,
                std::path::Component::Normal(_) => level += 1,
                _ => {}
            }
            escapes |= level < 0;
        }
        if escapes {
            found.push(format!("`{}` -> `{}`", c.path, target.display()));
        }
    }
    found
}

/// The binary files of the change (their whole content, which the diff text does not show)
/// that hold a secret in any of its forms (first), and those larger than `max`, which hone does
/// not read whole and so cannot clear (second). Read beneath `root`, regular files only, at most
/// `max` bytes each.
pub fn binary_secrets(
    root: &Path,
    changes: &[FileChange],
    redactor: &crate::redact::Redactor,
    max: u64,
) -> (Vec<String>, Vec<String>) {
    use std::io::Read;
    let Ok(dir) = crate::tools::beneath::open_root(root) else { return (vec![], vec![]) };
    let (mut found, mut unscanned) = (Vec::new(), Vec::new());
    for c in changes.iter().filter(|c| c.binary && c.status != "deleted") {
        let Ok(f) = crate::tools::beneath::open_file(&dir, c.on_disk()) else { continue };
        if f.metadata().is_ok_and(|m| m.len() > max) {
            unscanned.push(c.path.clone());
            continue;
        }
        let mut bytes = Vec::new();
        if f.take(max).read_to_end(&mut bytes).is_ok() && redactor.found_in(&bytes) {
            found.push(c.path.clone());
        }
    }
    (found, unscanned)
}

/// A snapshot of what in `.git` could make git run code: `config`, `hooks/`, `info/`. With the
/// jail, commands cannot write `.git` at all; this guard is the second line. It reads and writes
/// only regular files, never follows a symlink and never opens a FIFO: a `hooks` or `info` that
/// is not a plain directory is reported, not followed.
pub struct GitGuard {
    git_dir: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
}

/// `dir` beneath `git_dir` (no symlink followed), or `None` when it is missing or not a plain
/// directory.
fn open_dir(git_dir: &Path, dir: &str) -> Option<std::os::fd::OwnedFd> {
    crate::safe_fs::open_existing_dir_below(git_dir, Path::new(dir)).ok()
}

fn collect(git_dir: &Path) -> BTreeMap<String, Vec<u8>> {
    const MAX: u64 = 16 << 20;
    let mut files = BTreeMap::new();
    let read = |dir: &std::os::fd::OwnedFd, name: &str| crate::safe_fs::read_regular_at(dir, name, MAX).ok();
    if let Some(d) = open_dir(git_dir, "") {
        for (name, kind) in [("config", "config"), ("hooks", "dir"), ("info", "dir")] {
            match std::fs::symlink_metadata(git_dir.join(name)) {
                Ok(m) if m.file_type().is_symlink() => {
                    files.insert(format!("{name} (a symlink)"), vec![]);
                }
                Ok(m) if kind == "config" && !m.is_file() => {
                    files.insert(format!("{name} (not a regular file)"), vec![]);
                }
                _ => {}
            }
        }
        if let Some(b) = read(&d, "config") {
            files.insert("config".into(), b);
        }
    }
    for sub in ["hooks", "info"] {
        let Some(d) = open_dir(git_dir, sub) else { continue };
        let Ok(rd) = std::fs::read_dir(git_dir.join(sub)) else { continue };
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = format!("{sub}/{name}");
            match e.file_type() {
                Ok(t) if t.is_file() => {
                    files.insert(rel, read(&d, &name).unwrap_or_default());
                }
                // A symlink, FIFO, socket or directory in hooks/ or info/ is itself a finding.
                _ => {
                    files.insert(format!("{rel} (not a regular file)"), vec![]);
                }
            }
        }
    }
    files
}

impl GitGuard {
    pub fn snapshot(git_dir: &Path) -> GitGuard {
        GitGuard { git_dir: git_dir.to_path_buf(), files: collect(git_dir) }
    }

    /// Put back regular files that changed (through directories opened without following a
    /// symlink), and say what changed. What cannot be put back safely is only reported.
    pub fn check_and_restore(&self) -> Vec<String> {
        let now = collect(&self.git_dir);
        let mut changed = Vec::new();
        let keys: std::collections::BTreeSet<&String> = now.keys().chain(self.files.keys()).collect();
        for rel in keys {
            if now.get(rel) == self.files.get(rel) {
                continue;
            }
            changed.push(format!(".git/{rel}"));
            if rel.contains(' ') {
                continue; // not a regular file: never written through
            }
            let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
            let Some(d) = open_dir(&self.git_dir, dir) else { continue };
            let _ = match self.files.get(rel) {
                Some(orig) => crate::safe_fs::write_at(&d, name, orig, 0o644),
                None => crate::safe_fs::remove_at(&d, name),
            };
        }
        changed
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
