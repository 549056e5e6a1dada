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
    problems
}

/// A snapshot of what in `.git` could make git run code: `config`, `hooks/`, `info/attributes`.
pub struct GitGuard {
    git_dir: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
}

fn collect(git_dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for rel in ["config", "info/attributes", "info/exclude"] {
        if let Ok(b) = std::fs::read(git_dir.join(rel)) {
            files.insert(rel.to_string(), b);
        }
    }
    if let Ok(rd) = std::fs::read_dir(git_dir.join("hooks")) {
        for e in rd.filter_map(Result::ok) {
            let rel = format!("hooks/{}", e.file_name().to_string_lossy());
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            files.insert(rel, bytes);
        }
    }
    files
}

impl GitGuard {
    pub fn snapshot(git_dir: &Path) -> GitGuard {
        GitGuard { git_dir: git_dir.to_path_buf(), files: collect(git_dir) }
    }

    /// Put back anything that changed, and say what it was.
    pub fn check_and_restore(&self) -> Vec<String> {
        let now = collect(&self.git_dir);
        let mut changed = Vec::new();
        for (rel, bytes) in &now {
            if self.files.get(rel) != Some(bytes) {
                changed.push(format!(".git/{rel}"));
                let p = self.git_dir.join(rel);
                let _ = match self.files.get(rel) {
                    Some(orig) => std::fs::write(&p, orig),
                    None => std::fs::remove_file(&p),
                };
            }
        }
        for (rel, bytes) in &self.files {
            if !now.contains_key(rel) {
                changed.push(format!(".git/{rel}"));
                let p = self.git_dir.join(rel);
                if let Some(parent) = p.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(&p, bytes);
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, lines: usize) -> FileChange {
        FileChange { path: path.into(), status: "modified".into(), added: lines, removed: 0 }
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
}
