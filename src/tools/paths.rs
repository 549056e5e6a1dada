//! Resolves paths the model gives beneath the repo root: no absolute paths, no `..` escapes,
//! symlinks followed component by component and refused when they lead out, `.git/` off limits.

use crate::error::Code;
use std::path::{Component, Path, PathBuf};

/// A path failure, ready to become a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PathError {
    pub code: Code,
    pub message: String,
}

fn deny(code: Code, message: impl Into<String>) -> PathError {
    PathError { code, message: message.into() }
}

/// A path inside the repo: absolute on disk, and relative (with `/`) for messages and policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub abs: PathBuf,
    pub rel: String,
    /// Where `rel` leads through the symlinks in it (relative, with `/`); `rel` itself when it
    /// goes through none. The policy's path rules are checked on both.
    pub target: String,
}

/// The repo root, canonicalized once.
#[derive(Debug, Clone)]
pub struct Root {
    root: PathBuf,
}

impl Root {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Root { root: root.canonicalize()? })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolve `input` (relative to the root).
    pub fn resolve(&self, input: &str) -> Result<Resolved, PathError> {
        if input.contains('\0') {
            return Err(deny(Code::InvalidArgs, "the path contains a NUL byte"));
        }
        let p = Path::new(if input.trim().is_empty() { "." } else { input });
        if p.is_absolute() {
            return Err(deny(
                Code::PolicyDenied,
                format!("`{input}` is an absolute path; give a path relative to the repo root"),
            ));
        }
        let mut parts: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(deny(
                            Code::PolicyDenied,
                            format!("`{input}` leads outside the repo; paths must stay beneath the repo root"),
                        ));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(deny(
                        Code::PolicyDenied,
                        format!("`{input}` is an absolute path; give a path relative to the repo root"),
                    ));
                }
            }
        }
        if parts.first().is_some_and(|f| f == ".git") {
            return Err(deny(
                Code::PolicyDenied,
                "the .git directory is off limits to tools; use git commands through run_cmd if the policy allows them",
            ));
        }
        // Follow symlinks component by component: each existing prefix must stay inside the root.
        let mut cur = self.root.clone();
        for part in &parts {
            cur.push(part);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = cur.canonicalize().map_err(|_| {
                        deny(
                            Code::PolicyDenied,
                            format!("`{input}` goes through a symlink that leads nowhere or outside the repo"),
                        )
                    })?;
                    self.check_inside(&target, input)?;
                }
                Ok(_) => {}
                Err(_) => break, // the rest does not exist yet (a file about to be created)
            }
        }
        let rel = if parts.is_empty() { ".".to_string() } else { parts.join("/") };
        let target = self.target(&parts, input)?.unwrap_or_else(|| rel.clone());
        Ok(Resolved { abs: self.root.join(&rel), rel, target })
    }

    /// Where `parts` lead through the symlinks in them, relative to the root (`None` when nothing
    /// of them exists to resolve): the canonical form of the deepest existing ancestor, which
    /// must be inside and not in .git, with the parts that do not exist yet after it.
    fn target(&self, parts: &[String], input: &str) -> Result<Option<String>, PathError> {
        let mut probe = self.root.join(parts.join("/"));
        let mut rest = Vec::new();
        while !probe.exists() {
            match probe.file_name() {
                Some(n) => rest.push(n.to_string_lossy().into_owned()),
                None => break,
            }
            if !probe.pop() {
                break;
            }
        }
        let Ok(canon) = probe.canonicalize() else { return Ok(None) };
        self.check_inside(&canon, input)?;
        let mut t: Vec<String> = canon
            .strip_prefix(&self.root)
            .map(|r| r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        t.extend(rest.into_iter().rev());
        Ok(Some(if t.is_empty() { ".".to_string() } else { t.join("/") }))
    }

    fn check_inside(&self, canon: &Path, input: &str) -> Result<(), PathError> {
        let Ok(rest) = canon.strip_prefix(&self.root) else {
            return Err(deny(
                Code::PolicyDenied,
                format!("`{input}` resolves (through a symlink) to a place outside the repo"),
            ));
        };
        if rest.components().next().is_some_and(|c| c.as_os_str() == ".git") {
            return Err(deny(
                Code::PolicyDenied,
                format!("`{input}` resolves (through a symlink) into .git, which is off limits"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Root) {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("src")).unwrap();
        std::fs::create_dir_all(repo.path().join(".git/hooks")).unwrap();
        std::fs::write(repo.path().join("src/a.py"), "x").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path(), repo.path().join("out")).unwrap();
        symlink(repo.path().join("src"), repo.path().join("src2")).unwrap();
        symlink(repo.path().join(".git/hooks"), repo.path().join("hooks")).unwrap();
        let root = Root::new(repo.path()).unwrap();
        (repo, outside, root)
    }

    #[test]
    fn table_of_paths() {
        let (_r, _o, root) = setup();
        let ok = [
            ("src/a.py", "src/a.py"),
            ("./src/a.py", "src/a.py"),
            ("src/../src/a.py", "src/a.py"),
            ("", "."),
            ("new/file.txt", "new/file.txt"),
            ("src2/a.py", "src2/a.py"),
        ];
        for (input, rel) in ok {
            assert_eq!(root.resolve(input).map(|r| r.rel), Ok(rel.to_string()), "{input}");
        }
        let targets = [("src2/a.py", "src/a.py"), ("src2/new/x", "src/new/x"), ("src/a.py", "src/a.py"), ("", ".")];
        for (input, target) in targets {
            assert_eq!(root.resolve(input).map(|r| r.target), Ok(target.to_string()), "{input}");
        }
        let denied = [
            "/etc/passwd",
            "../x",
            "src/../../x",
            ".git/config",
            ".git/hooks/pre-commit",
            "./.git",
            "out/secret",
            "out/new",
            "hooks/pre-commit",
            "a\0b",
        ];
        for input in denied {
            assert!(root.resolve(input).is_err(), "{input:?} should be refused");
        }
    }
}
