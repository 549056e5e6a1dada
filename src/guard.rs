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
    let what = if counted.files.len() > policy.max_files_changed {
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
/// that hold a secret in any of its forms. Read beneath `root`, regular files only, at most
/// `max` bytes each.
pub fn binary_secrets(
    root: &Path,
    changes: &[FileChange],
    redactor: &crate::redact::Redactor,
    max: u64,
) -> Vec<String> {
    use std::io::Read;
    let Ok(dir) = crate::tools::beneath::open_root(root) else { return vec![] };
    let mut found = Vec::new();
    for c in changes.iter().filter(|c| c.binary && c.status != "deleted") {
        let Ok(f) = crate::tools::beneath::open_file(&dir, c.on_disk()) else { continue };
        let mut bytes = Vec::new();
        if f.take(max).read_to_end(&mut bytes).is_ok() && redactor.found_in(&bytes) {
            found.push(c.path.clone());
        }
    }
    found
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
mod tests {
    use super::*;

    fn change(path: &str, lines: usize) -> FileChange {
        FileChange {
            path: path.into(),
            status: "modified".into(),
            added: lines,
            removed: 0,
            bytes: 10,
            binary: false,
            raw: None,
        }
    }

    #[test]
    fn diff_guard_checks_paths_and_limits() {
        let mut p = Policy::builtin();
        p.max_files_changed = 2;
        p.max_lines_changed = 10;
        assert!(diff_guard(&p, &[change("src/a.py", 3)]).is_empty());
        let v = diff_guard(&p, &[change(".github/workflows/ci.yml", 1)]);
        assert!(v[0].contains(".github/workflows/ci.yml"), "{v:?}");
        let v = diff_guard(&p, &[change("a", 1), change("b", 1), change("c", 1)]);
        assert!(v[0].contains("3 files changed"), "{v:?}");
        let v = diff_guard(&p, &[change("a", 11)]);
        assert!(v[0].contains("11 lines changed"), "{v:?}");
        p.max_bytes_changed = 100;
        let big = FileChange {
            path: "blob.bin".into(),
            status: "added".into(),
            added: 0,
            removed: 0,
            bytes: 101,
            binary: true,
            raw: None,
        };
        let v = diff_guard(&p, &[change("a", 1), big]);
        assert!(
            v[0].contains("111 bytes changed (the most in `blob.bin`)"),
            "a binary file counts by its bytes: {v:?}"
        );
    }

    #[test]
    fn links_that_lead_outside_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let links = [
            ("a/up", "../b"),
            ("a/out", "../../x"),
            ("abs", "/etc/passwd"),
            ("a/deep", "c/../../b"),
            ("a/trick", "../a/../../y"),
        ];
        let mut changes = Vec::new();
        for (name, to) in links {
            std::os::unix::fs::symlink(to, dir.path().join(name)).unwrap();
            changes.push(FileChange {
                path: name.into(),
                status: "added".into(),
                added: 1,
                removed: 0,
                bytes: 1,
                binary: false,
                raw: None,
            });
        }
        assert_eq!(
            links_out(dir.path(), &changes),
            ["`a/out` -> `../../x`", "`abs` -> `/etc/passwd`", "`a/trick` -> `../a/../../y`"]
        );
    }

    #[test]
    fn binary_files_are_scanned_for_secrets_in_their_forms() {
        let dir = tempfile::tempdir().unwrap();
        let r = crate::redact::Redactor::new();
        r.add("sk-live-0123456789");
        let utf16: Vec<u8> = "sk-live-0123456789".bytes().flat_map(|b| [b, 0]).collect();
        let files: [(&str, Vec<u8>); 4] = [
            ("raw.bin", [&b"\x00\x01GIF"[..], b"sk-live-0123456789"].concat()),
            ("wide.bin", [&b"\xff\xfe"[..], &utf16].concat()),
            ("b64.bin", [&b"\x00"[..], b"c2stbGl2ZS0wMTIzNDU2Nzg5"].concat()),
            ("clean.bin", b"\x00\x01nothing here".to_vec()),
        ];
        let mut changes = Vec::new();
        for (name, bytes) in &files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            changes.push(FileChange {
                path: (*name).into(),
                status: "added".into(),
                added: 0,
                removed: 0,
                bytes: 1,
                binary: true,
                raw: None,
            });
        }
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(binary_secrets(&root, &changes, &r, 1 << 20), ["raw.bin", "wide.bin", "b64.bin"]);
    }

    #[test]
    fn limits_are_inclusive_and_removed_lines_count() {
        let mut p = Policy::builtin();
        p.max_files_changed = 2;
        p.max_lines_changed = 10;
        let edit = |path: &str, added, removed| FileChange {
            path: path.into(),
            status: "modified".into(),
            added,
            removed,
            bytes: 1,
            binary: false,
            raw: None,
        };
        assert!(diff_guard(&p, &[edit("a", 4, 1), edit("b", 2, 3)]).is_empty(), "exactly at both limits");
        assert_eq!(
            diff_guard(&p, &[edit("a", 7, 4)]),
            ["11 lines changed; the policy allows at most 10 (limits.max_lines_changed)"]
        );
    }

    /// A `.git` with a config, a hook sample and `info/exclude`.
    fn plain_git_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
        std::fs::create_dir_all(dir.path().join("info")).unwrap();
        std::fs::write(dir.path().join("config"), "[core]\n").unwrap();
        std::fs::write(dir.path().join("hooks/pre-commit.sample"), "sample").unwrap();
        std::fs::write(dir.path().join("info/exclude"), "*.o\n").unwrap();
        dir
    }

    #[test]
    fn a_plain_git_dir_snapshots_exactly_its_regular_files() {
        let dir = plain_git_dir();
        let g = GitGuard::snapshot(dir.path());
        let keys: Vec<&str> = g.files.keys().map(String::as_str).collect();
        assert_eq!(keys, ["config", "hooks/pre-commit.sample", "info/exclude"]);
        assert_eq!(g.files["config"], b"[core]\n");
    }

    #[test]
    fn a_config_replaced_by_a_fifo_is_reported_and_put_back() {
        let dir = plain_git_dir();
        let git = dir.path();
        let g = GitGuard::snapshot(git);
        std::fs::remove_file(git.join("config")).unwrap();
        nix::unistd::mkfifo(&git.join("config"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(g.check_and_restore(), [".git/config", ".git/config (not a regular file)"]);
        assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "[core]\n");
    }

    #[test]
    fn a_directory_or_symlink_planted_in_hooks_is_reported_and_left_alone() {
        let dir = plain_git_dir();
        let outside = tempfile::tempdir().unwrap();
        let git = dir.path();
        std::fs::write(outside.path().join("target"), "x").unwrap();
        let g = GitGuard::snapshot(git);
        std::fs::create_dir(git.join("hooks/pre-push")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("target"), git.join("hooks/post-checkout")).unwrap();
        assert_eq!(
            g.check_and_restore(),
            [".git/hooks/post-checkout (not a regular file)", ".git/hooks/pre-push (not a regular file)"]
        );
        assert!(git.join("hooks/post-checkout").symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(outside.path().join("target")).unwrap(), "x");
    }

    #[test]
    fn git_guard_restores_planted_hooks_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path();
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "sample").unwrap();
        let g = GitGuard::snapshot(git);
        assert!(g.check_and_restore().is_empty());
        std::fs::write(git.join("hooks/pre-commit"), "curl x").unwrap();
        std::fs::write(git.join("config"), "[core]\nfsmonitor = evil\n").unwrap();
        std::fs::remove_file(git.join("hooks/pre-commit.sample")).unwrap();
        let mut changed = g.check_and_restore();
        changed.sort();
        assert_eq!(changed, [".git/config", ".git/hooks/pre-commit", ".git/hooks/pre-commit.sample"]);
        assert!(!git.join("hooks/pre-commit").exists());
        assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "[core]\n");
        assert!(git.join("hooks/pre-commit.sample").exists());
    }

    #[test]
    fn a_symlinked_hooks_dir_or_config_is_reported_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let git = dir.path();
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "sample").unwrap();
        std::fs::write(outside.path().join("keep-me"), "x").unwrap();
        std::fs::write(outside.path().join("config"), "theirs").unwrap();
        let g = GitGuard::snapshot(git);
        std::fs::remove_dir_all(git.join("hooks")).unwrap();
        std::os::unix::fs::symlink(outside.path(), git.join("hooks")).unwrap();
        std::fs::remove_file(git.join("config")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("config"), git.join("config")).unwrap();
        let changed = g.check_and_restore();
        assert!(changed.iter().any(|c| c.contains("hooks (a symlink)")), "{changed:?}");
        assert!(changed.iter().any(|c| c.contains("config")), "{changed:?}");
        assert_eq!(std::fs::read_to_string(outside.path().join("config")).unwrap(), "theirs");
        let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "nothing written or removed outside: {names:?}");
    }
}
