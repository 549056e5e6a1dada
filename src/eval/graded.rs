//! The tree a task is graded in: made by hone from the agent's final commit's objects alone
//! (nothing its commands left in its own tree is read), then its tests put back as they were at
//! the start (every file that counts as a test, as `classify` has it, that the agent added,
//! changed or removed, and the files the test command names) and the held-out test change
//! applied over them, in memory, each file
//! written by descriptor (a link in a directory's place is replaced, never followed). So the
//! agent is graded by the tests it was set, not by its edits of them, and nothing is written
//! outside the tree. Code under test can still cheat the tests (a module that exits 0 when
//! imported): as in every benchmark, read the transcript of a surprising win.

use super::classify::{Kind, kind};
use crate::error::{Code, HoneError};
use std::path::{Path, PathBuf};

/// The grading tree for `after` (the agent's commit) of the task repository `from`, made at
/// `into`, with the start's tests and the held-out change; and the files the change touches
/// (what `{test_files}` stands for).
pub fn tree(
    from: &Path,
    base: git2::Oid,
    after: git2::Oid,
    test_patch: &str,
    command: &str,
    into: &Path,
) -> Result<(PathBuf, Vec<String>), HoneError> {
    let root = super::isolate::task_repo(from, after, into)?;
    let repo = git2::Repository::open(&root)?;
    let patch = git2::Diff::from_buffer(test_patch.as_bytes())?;
    let touched = super::select::touched(&patch);
    let start = repo.find_commit(base)?.tree()?;
    let graded = {
        let mut index = repo.apply_to_tree(&start, &patch, None).map_err(|e| {
            HoneError::new(
                Code::Conflict,
                format!("the task's test change does not apply at its start: {}", e.message()),
            )
        })?;
        repo.find_tree(index.write_tree_to(&repo)?)?
    };
    // The start's files the test command names (`sh run_tests.sh`, `-c pytest.ini`) go back too.
    let mut paths = touched.clone();
    for word in command.split_whitespace().map(|w| w.trim_matches(|c| c == '\'' || c == '"')) {
        let word = word.strip_prefix("./").unwrap_or(word);
        if !paths.iter().any(|p| p == word)
            && start.get_path(Path::new(word)).is_ok_and(|e| e.kind() == Some(git2::ObjectType::Blob))
        {
            paths.push(word.to_string());
        }
    }
    let agent = repo.diff_tree_to_tree(Some(&start), Some(&repo.find_commit(after)?.tree()?), None)?;
    for d in agent.deltas() {
        for p in [d.old_file().path(), d.new_file().path()].into_iter().flatten() {
            let p = p.to_string_lossy().into_owned();
            if kind(&p) == Kind::Test && !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("{}: {e}", root.display()));
    for p in &paths {
        clear_parents(&root, p).map_err(io)?;
    }
    super::validate::put(&repo, &graded, &root, &paths)?;
    Ok((root, touched))
}

/// Whatever stands where a directory above `rel` should be (a file, a link the agent committed)
/// is removed, shallowest first, so each is looked at through real directories only.
fn clear_parents(root: &Path, rel: &str) -> std::io::Result<()> {
    let parts: Vec<&str> = rel.split('/').collect();
    for depth in 1..parts.len() {
        let prefix = parts[..depth].join("/");
        match std::fs::symlink_metadata(root.join(&prefix)) {
            Ok(m) if !m.is_dir() => {
                crate::safe_fs::remove_beneath(root, &prefix)?;
            }
            _ => {}
        }
    }
    Ok(())
}
