//! Real git repositories in temp dirs, with a local bare repo as `origin`.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TestRepo {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub origin: PathBuf,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            // A test may hand its repository to another user (a run as nobody).
            "-c",
            "safe.directory=*",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl TestRepo {
    /// A repo on `main` with `files` committed, and a bare `origin` it has pushed to.
    pub fn new(files: &[(&str, &str)]) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("work");
        let origin = dir.path().join("origin.git");
        std::fs::create_dir_all(&path).unwrap();
        git(dir.path(), &["init", "-q", "--bare", origin.to_str().unwrap()]);
        git(&path, &["init", "-q"]);
        for (name, body) in files {
            let p = path.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, body).unwrap();
        }
        git(&path, &["add", "-A"]);
        git(&path, &["commit", "-q", "-m", "initial"]);
        git(&path, &["remote", "add", "origin", origin.to_str().unwrap()]);
        git(&path, &["push", "-q", "origin", "main"]);
        TestRepo { dir, path, origin }
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.path, args)
    }

    pub fn head_branch(&self) -> String {
        self.git(&["rev-parse", "--abbrev-ref", "HEAD"])
    }

    /// Nothing tracked changed and nothing untracked appeared, but hone's own directory
    /// (`.hone/`, where the default reports are: it is there after every run, by design).
    pub fn is_clean(&self) -> bool {
        self.git(&["status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude).hone"]).is_empty()
    }

    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.path.join(name)).unwrap_or_default()
    }

    /// The content of `name` at `rev`.
    pub fn show(&self, rev: &str, name: &str) -> String {
        self.git(&["show", &format!("{rev}:{name}")])
    }
}

/// Paths that differ between `main` and `branch`.
pub fn committed(repo: &TestRepo, branch: &str) -> Vec<String> {
    let out = repo.git(&["diff", "--name-only", "main", branch]);
    out.lines().map(str::to_string).collect()
}
