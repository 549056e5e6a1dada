//! A task's repository: a new repository holding the task's starting commit and its history
//! alone, checked out there. No later commit, ref, reflog entry or pack of the source comes
//! with it, so nothing the agent or its commands can reach holds the fix or the held-out tests.
//! The copy is `replay`'s (objects reachable from the start, in process, no transport).
//! Mining's trees need no history (no agent works there): `tree_repo` copies the one commit and
//! its files, marked shallow, so a candidate costs its tree, not the history before it.

use crate::error::{Code, HoneError};
use std::path::Path;

/// The task repository for `base` of the local repository `src`, at `into`.
pub fn task_repo(src: &Path, base: git2::Oid, into: &Path) -> Result<std::path::PathBuf, HoneError> {
    crate::replay::source::clone(src, Some(&base.to_string()), None, into).map(|c| c.root)
}

/// A repository at `into` holding `base` of `src` with its files and no history (a shallow
/// clone of depth one), checked out.
pub fn tree_repo(src: &Path, base: git2::Oid, into: &Path) -> Result<std::path::PathBuf, HoneError> {
    let from = git2::Repository::open(src)?;
    let mut opts = git2::RepositoryInitOptions::new();
    opts.no_reinit(true).mkdir(true).initial_head("main");
    let to = git2::Repository::init_opts(into, &opts)?;
    let mut pack = from.packbuilder()?;
    pack.insert_commit(base)?;
    let odb = to.odb()?;
    let mut writer = odb.packwriter()?;
    let mut failed = None;
    pack.foreach(|buf| std::io::Write::write_all(&mut writer, buf).map_err(|e| failed = Some(e)).is_ok())?;
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot write a task's repository: {e}"));
    if let Some(e) = failed {
        return Err(io(e));
    }
    writer.commit()?;
    drop(writer);
    let git_dir = std::fs::File::open(to.path()).map_err(io)?;
    crate::safe_fs::write_at(&git_dir, "shallow", format!("{base}\n").as_bytes(), 0o644).map_err(io)?;
    to.set_head_detached(base)?;
    to.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
    into.canonicalize().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The "the answer is out of reach": every way git (or a search of `.git`) lists
    /// objects finds nothing of the fix or its tests in the task's repository.
    #[test]
    fn nothing_in_a_task_s_repository_holds_the_fix_or_its_tests() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        git(s, &["init", "-q", "-b", "main"]);
        std::fs::write(s.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
        git(s, &["add", "-A"]);
        git(s, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "start"]);
        let base = git(s, &["rev-parse", "HEAD"]).trim().to_string();
        std::fs::write(s.join("calc.py"), "def add(a, b):\n    return a + b  # FIXED\n").unwrap();
        std::fs::create_dir_all(s.join("tests")).unwrap();
        std::fs::write(s.join("tests/test_calc.py"), "assert add(1, 2) == 3  # HELD-OUT\n").unwrap();
        git(s, &["add", "-A"]);
        git(s, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "Fix add"]);
        let fix = git(s, &["rev-parse", "HEAD"]).trim().to_string();
        let (fixed, held) = (git(s, &["rev-parse", "HEAD:calc.py"]), git(s, &["rev-parse", "HEAD:tests/test_calc.py"]));
        let into = tempfile::tempdir().unwrap();
        let root = task_repo(s, git2::Oid::from_str(&base).unwrap(), &into.path().join("task")).unwrap();
        let looked = [
            git(&root, &["log", "--all", "--format=%H %s"]),
            git(&root, &["reflog", "--all"]),
            git(&root, &["fsck", "--lost-found", "--no-progress"]),
            git(&root, &["cat-file", "--batch-all-objects", "--batch-check"]),
            git(&root, &["for-each-ref"]),
        ]
        .join("\n");
        for (what, id) in [("the fix commit", &fix), ("the fixed file", &fixed), ("the held-out test", &held)] {
            assert!(!looked.contains(id.trim()), "{what} is reachable:\n{looked}");
        }
        assert!(looked.contains(&base), "the start is there");
        // Nor in any file of `.git`, packed or loose, however named.
        let mut stack = vec![root.join(".git")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let bytes = std::fs::read(&p).unwrap();
                    let text = String::from_utf8_lossy(&bytes);
                    assert!(
                        !text.contains("FIXED") && !text.contains("HELD-OUT") && !text.contains(&fix),
                        "{}",
                        p.display()
                    );
                }
            }
        }
    }
}
