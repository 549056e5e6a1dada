//! Mining's second stage: a candidate's tests run in its task repository (its start, nothing
//! later: `isolate`), twice with its test change applied and its source change left out, then
//! twice with both, and the four runs judged (`grade`). What runs the tests is a [`Tester`]: in
//! `hone eval` the job's check with its JUnit report, in the jail.

use super::grade::{self, Dropped, Graded, Runs};
use super::mine::Candidate;
use crate::error::{Code, HoneError};
use crate::verify::junit_in::Outcomes;
use git2::Repository;
use std::path::{Path, PathBuf};

/// Runs a tree's tests and reports every case's outcome.
pub trait Tester {
    /// A tree made ready for test runs (set up, its jail built): once per tree. `tests` are the
    /// test files its task is graded by (what `{test_files}` in a test command stands for).
    type Tree;
    fn open(&self, root: &Path, tests: &[String]) -> impl std::future::Future<Output = Result<Self::Tree, HoneError>>;
    /// One run of the tests in an opened tree, as its files are now.
    fn outcomes(&self, tree: &Self::Tree) -> impl std::future::Future<Output = Result<Outcomes, HoneError>>;
}

/// `c`'s tree made under `scratch` (its start and nothing earlier, with the commit's test
/// change): blocking, so it can be made while another candidate's tests run.
pub fn prepare(src: &Path, c: &Candidate, scratch: &Path) -> Result<PathBuf, HoneError> {
    let root = super::isolate::tree_repo(src, c.parent, &scratch.join(c.commit.to_string()))?;
    let repo = Repository::open(src)?;
    let tree = repo.find_commit(c.commit)?.tree()?;
    put(&repo, &tree, &root, &c.tests)?;
    Ok(root)
}

/// The four runs in `c`'s prepared tree at `root`, opened: two as it is, two with the rest of
/// the commit's change (its source and other files); judged.
pub async fn runs<T: Tester>(
    src: &Path,
    c: &Candidate,
    root: &Path,
    opened: &T::Tree,
    tester: &T,
) -> Result<Result<Graded, Dropped>, HoneError> {
    let without = [tester.outcomes(opened).await?, tester.outcomes(opened).await?];
    let repo = Repository::open(src)?;
    let fix: Vec<String> = c.sources.iter().chain(&c.others).cloned().collect();
    put(&repo, &repo.find_commit(c.commit)?.tree()?, root, &fix)?;
    let with = [tester.outcomes(opened).await?, tester.outcomes(opened).await?];
    Ok(grade::judge(&Runs { without, with }))
}

/// The files `paths` as `tree` has them, written into the work tree at `root` (one the tree
/// lacks is removed). The tests ran there: nothing a command left is followed.
pub(super) fn put(repo: &Repository, tree: &git2::Tree<'_>, root: &Path, paths: &[String]) -> Result<(), HoneError> {
    let io = |p: &str, e: std::io::Error| HoneError::new(Code::Io, format!("cannot write `{p}` in the task: {e}"));
    for p in paths {
        let rel = Path::new(p);
        match tree.get_path(rel) {
            Ok(entry) => {
                let blob = entry.to_object(repo)?.peel_to_blob()?;
                let (dir, name) = (rel.parent().unwrap_or(Path::new("")), rel.file_name().unwrap_or_default());
                let d = crate::safe_fs::open_dir_below(root, dir).map_err(|e| io(p, e))?;
                crate::safe_fs::write_at(&d, &name.to_string_lossy(), blob.content(), 0o644).map_err(|e| io(p, e))?;
            }
            Err(_) => {
                crate::safe_fs::remove_beneath(root, p).map_err(|e| io(p, e))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
