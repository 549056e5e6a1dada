//! Git operations with git2 (libgit2): the run's branch, change detection with line stats,
//! the commit, snapshots of failed work, and restoring the user's original checkout.
//! libgit2 runs no hooks, no fsmonitor and no `core.sshCommand`, and hone stops it from
//! reading system, XDG and global config, so a poisoned repo or machine config runs nothing.
//! Whose checkout hone may work in is git's `safe.directory` decision (`safe.rs`).

mod branch;
mod changes;
mod claim;
pub use changes::patch_of;
pub use claim::{Claimant, Held, live_run_in};
mod count;
mod deep;
mod ignored;
mod links;
pub mod marker;
mod recover;
mod restore;
pub mod safe;
mod saved;
mod scratch;
#[cfg(test)]
pub mod test_git;
pub mod transport;
pub mod user_config;
mod withheld;
mod worktree;
pub use count::Counted;
pub use recover::Recovered;
pub use saved::Saved;
pub use withheld::Withheld;
pub use worktree::try_prefix;

pub use scratch::{Below, init_scratch};

use crate::error::{Code, HoneError, Result};
use git2::{BranchType, Oid, Repository, Signature};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Stop libgit2 from reading any config outside the repo. Call once at start-up, before other
/// threads use git2. That also hides the user's `safe.directory` from libgit2's owner check, which
/// would then refuse every checkout owned by another user: it is turned off, and hone makes git's
/// decision itself where it opens a checkout it did not make (`safe::ensure`). libgit2 runs
/// nothing a repository's config names, so what the check guards git from cannot happen here.
pub fn isolate_config() {
    for level in
        [git2::ConfigLevel::System, git2::ConfigLevel::XDG, git2::ConfigLevel::Global, git2::ConfigLevel::ProgramData]
    {
        // SAFETY: called once from main before any concurrent git2 use.
        let _ = unsafe { git2::opts::set_search_path(level, "") };
    }
    // SAFETY: as above.
    let _ = unsafe { git2::opts::set_verify_owner_validation(false) };
}

/// Where HEAD pointed before the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum OriginalHead {
    Branch(String),
    Detached(String),
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct FileChange {
    pub path: String,
    /// added, modified, deleted, renamed, typechange
    pub status: String,
    pub added: usize,
    pub removed: usize,
    /// The bytes the change adds and removes: the changed lines of a text file; the whole new
    /// (or, deleted, old) content of a binary file or of one too large to diff.
    pub bytes: u64,
    /// Not diffed as text: binary, or larger than the change may be.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// The path byte for byte, when it is not UTF-8 (`path` is then its lossy spelling, which
    /// names another file or none): what the guards open.
    #[serde(skip)]
    pub raw: Option<PathBuf>,
}

impl FileChange {
    /// The path to open on disk, relative to the root.
    pub fn on_disk(&self) -> &Path {
        self.raw.as_deref().unwrap_or(Path::new(&self.path))
    }
}

pub struct Workspace {
    repo: Repository,
    root: PathBuf,
    /// Repo-relative paths hone never commits or reports as changes (its own directory, the
    /// report dir, the checks' JUnit files).
    excluded: Arc<Vec<String>>,
    /// What the verify commands left in the work tree (logs, caches, coverage): not the model's
    /// change, so never committed; removed with everything else when the checkout is restored.
    /// Shared with the handles `blocking` opens.
    artifacts: Arc<Mutex<Vec<String>>>,
    /// Ignored entries that were there before the run (`keep`): never removed, even inside a
    /// new directory that is otherwise removed whole.
    kept: Arc<Mutex<Vec<String>>>,
    /// What is never staged (`withheld.rs`): the jail's hidden and read-denied paths.
    withheld: Arc<std::sync::RwLock<Option<Withheld>>>,
}

impl Workspace {
    /// Open the work tree at `path` (its root). `excluded`: repo-relative paths that are never
    /// part of the change, never make the tree dirty, and are never removed by a restore.
    pub fn open(path: &Path, excluded: Vec<String>) -> Result<Workspace> {
        let repo = Repository::open(path).map_err(|e| {
            HoneError::new(Code::Git, format!("`{}` is not a git repository: {}", path.display(), e.message()))
                .hint("point `repo.path` (or --repo) at a git checkout, or set `repo.scratch: true` to copy a plain directory into a fresh repository")
        })?;
        let root = repo
            .workdir()
            .ok_or_else(|| HoneError::new(Code::Git, "the repository is bare").hint("use a checkout with a work tree"))?
            .canonicalize()
            .map_err(|e| HoneError::new(Code::Io, format!("cannot resolve the repo root: {e}")))?;
        refuse_indirection(&repo, path, &root)?;
        let excluded = Arc::new(excluded.into_iter().filter(|r| !r.is_empty()).collect());
        let (artifacts, kept, withheld) = Default::default();
        Ok(Workspace { repo, root, excluded, artifacts, kept, withheld })
    }

    /// `open` for a run: refused (an input problem) when another user owns the checkout and git's
    /// `safe.directory`, in the user's config `env` leads to, does not list it.
    pub fn open_for_run(path: &Path, excluded: Vec<String>, env: &crate::env::RunEnv) -> Result<Workspace> {
        let ws = Workspace::open(path, excluded)?;
        safe::ensure(&ws.root, ws.repo.path(), env)?;
        Ok(ws)
    }

    /// Run `work` on a blocking thread, off the async executor: walking the work tree, diffing,
    /// staging, checking out and committing read and write every file, which takes seconds in a
    /// large repository. A `Repository` cannot be shared between threads, so `work` gets a
    /// handle of its own on the same repository, with the same excluded paths and artifacts.
    /// Quick ref lookups (`resolve_base`, `original_head`, `is_branch`) need not come here.
    pub async fn blocking<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T> + Send + 'static,
    {
        settle(self.spawn_blocking(work)?).await
    }

    /// `blocking`, started now and awaited later (with `settle`).
    pub fn spawn_blocking<T, F>(&self, work: F) -> Result<tokio::task::JoinHandle<Result<T>>>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T> + Send + 'static,
    {
        let repo = Repository::open(&self.root)
            .map_err(|e| HoneError::new(Code::Git, format!("cannot open the repository again: {}", e.message())))?;
        let handle = Workspace {
            repo,
            root: self.root.clone(),
            excluded: self.excluded.clone(),
            artifacts: self.artifacts.clone(),
            kept: self.kept.clone(),
            withheld: self.withheld.clone(),
        };
        Ok(tokio::task::spawn_blocking(move || work(&handle)))
    }

    /// The repository, for reading commits and diffing them (review mode's planner).
    pub fn repository(&self) -> &Repository {
        &self.repo
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Ignored entries that were there before the run: a restore or rollback never removes them.
    pub fn keep(&self, ignored: &[String]) {
        if let Ok(mut k) = self.kept.lock() {
            k.extend(ignored.iter().cloned());
        }
    }

    pub fn git_dir(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// Every place git keeps this repository's data: `.git` (a directory, or a worktree's
    /// pointer file), the git dir, and a worktree's common dir.
    pub fn git_paths(&self) -> Vec<PathBuf> {
        let mut out = vec![self.root.join(".git")];
        for p in [self.repo.path(), self.repo.commondir()] {
            let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// The URL of `remote`, read from the repository's config by hone (no git process runs).
    pub fn remote_url(&self, remote: &str) -> Option<String> {
        let r = self.repo.find_remote(remote).ok()?;
        let push = r.pushurl().ok().flatten();
        push.or(r.url().ok()).map(str::to_string)
    }

    /// The object store (a worktree's is its common dir's).
    pub fn objects_dir(&self) -> PathBuf {
        let common = self.repo.commondir();
        common.canonicalize().unwrap_or_else(|_| common.to_path_buf()).join("objects")
    }

    /// Copy `src_ref` of the repository at `from` (hone's own) into this one as `dst_ref`, in
    /// process: libgit2's local transport runs no program.
    pub fn fetch_local(&self, from: &Path, src_ref: &str, dst_ref: &str) -> Result<()> {
        let url = from.to_str().ok_or_else(|| HoneError::new(Code::Git, "hone's repository path is not UTF-8"))?;
        let mut remote = self.repo.remote_anonymous(url)?;
        remote.fetch(&[format!("+{src_ref}:{dst_ref}")], None, None)?;
        Ok(())
    }

    /// Never part of the change: hone's paths, the checks' artifacts, and what was ignored before
    /// the run (even once the model's edit of a `.gitignore` stops ignoring it: a read-denied
    /// `.env` would otherwise be staged, committed and pushed by hone).
    fn is_excluded(&self, rel: &str) -> bool {
        let under = |e: &String| rel == e || rel.starts_with(&format!("{e}/"));
        self.excluded.iter().any(under)
            || self.artifacts.lock().is_ok_and(|a| a.iter().any(under))
            || self.kept.lock().is_ok_and(|k| k.iter().any(under))
    }

    pub fn original_head(&self) -> Result<OriginalHead> {
        let head = self.repo.head().map_err(|e| {
            HoneError::new(Code::Git, format!("the repository has no HEAD commit: {}", e.message()))
                .hint("make an initial commit first")
        })?;
        if head.is_branch()
            && let Ok(name) = head.shorthand()
        {
            return Ok(OriginalHead::Branch(name.to_string()));
        }
        let oid = head.peel_to_commit()?.id();
        Ok(OriginalHead::Detached(oid.to_string()))
    }

    /// Resolve `base` (default HEAD) to a commit id.
    pub fn resolve_base(&self, base: Option<&str>) -> Result<Oid> {
        let spec = base.unwrap_or("HEAD");
        let obj = self.repo.revparse_single(spec).map_err(|e| {
            HoneError::new(Code::Git, format!("cannot find the base `{spec}`: {}", e.message()))
                .hint("set `repo.base` to an existing branch, tag or commit")
        })?;
        Ok(obj.peel_to_commit()?.id())
    }

    /// The message of commit `sha`.
    pub fn commit_message(&self, sha: &str) -> Result<String> {
        Ok(self.repo.find_commit(Oid::from_str(sha)?)?.message().unwrap_or_default().to_string())
    }

    /// Whether `name` is a local branch.
    pub fn is_branch(&self, name: &str) -> bool {
        self.repo.find_branch(name, BranchType::Local).is_ok()
    }

    /// The commit the local branch `name` points at, if there is one.
    pub fn branch_tip(&self, name: &str) -> Option<Oid> {
        self.repo.find_branch(name, BranchType::Local).ok().and_then(|b| b.get().target())
    }

    /// Commit the work tree on the current branch, with `base` as parent.
    pub fn commit(&self, base: Oid, message: &str, name: &str, email: &str) -> Result<Oid> {
        let tree = self.repo.find_tree(self.stage_all(base)?)?;
        let sig = Signature::now(name, email)?;
        let parent = self.repo.find_commit(base)?;
        Ok(self.repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])?)
    }

    /// Save the work tree as a commit under `refname` without touching any branch.
    pub fn snapshot(&self, base: Oid, refname: &str, message: &str, name: &str, email: &str) -> Result<Oid> {
        let tree = self.repo.find_tree(self.stage_all(base)?)?;
        let sig = Signature::now(name, email)?;
        let parent = self.repo.find_commit(base)?;
        let oid = self.repo.commit(None, &sig, &sig, message, &tree, &[&parent])?;
        self.repo.reference(refname, oid, true, "hone: save the work of a failed run")?;
        Ok(oid)
    }
}

/// The repository's own config must not point hone elsewhere: a `core.worktree` that moves the
/// work tree away from the checkout hone was given (hone would check out, index and clean that
/// directory), or an `include.path`/`includeIf` that pulls config from another file (a file in
/// the work tree, which commands can write).
fn refuse_indirection(repo: &Repository, asked: &Path, root: &Path) -> Result<()> {
    let asked = asked.canonicalize().unwrap_or_else(|_| asked.to_path_buf());
    if asked != root {
        let msg = format!(
            "the repository at `{}` has its work tree at `{}` (core.worktree): hone works only on the checkout it is given",
            asked.display(),
            root.display()
        );
        return Err(HoneError::new(Code::Git, msg)
            .hint("remove `core.worktree` from .git/config, or run hone on that work tree"));
    }
    let config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    let mut entries = config.entries(Some("^include(if)?\\."))?;
    if let Some(Ok(e)) = entries.next() {
        let msg = format!(
            "the repository's .git/config includes other config (`{}`): hone does not read config from other files",
            e.name().unwrap_or("include")
        );
        return Err(HoneError::new(Code::Git, msg).hint("remove the include from .git/config"));
    }
    Ok(())
}

/// The result of work started with `Workspace::spawn_blocking`.
pub async fn settle<T>(task: tokio::task::JoinHandle<Result<T>>) -> Result<T> {
    task.await.map_err(|e| HoneError::new(Code::Internal, format!("a git operation did not finish: {e}")))?
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A repository whose first commit holds what `prepare` put in its work tree.
    pub(crate) fn fixture(prepare: impl FnOnce(&Path)) -> (tempfile::TempDir, Workspace, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        prepare(dir.path());
        let mut index = repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.com").unwrap();
        let oid = repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[]).unwrap();
        let ws = Workspace::open(dir.path(), vec![".hone".into()]).unwrap();
        (dir, ws, oid)
    }

    fn repo() -> (tempfile::TempDir, Workspace) {
        let (dir, ws, _) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
        (dir, ws)
    }

    #[test]
    fn a_config_that_points_elsewhere_is_refused() {
        let (dir, _) = repo();
        let elsewhere = tempfile::tempdir().unwrap();
        let config = dir.path().join(".git/config");
        let orig = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{orig}[core]\n\tworktree = {}\n", elsewhere.path().display())).unwrap();
        let e = Workspace::open(dir.path(), vec![]).err().expect("core.worktree is refused");
        assert!(e.message.contains("core.worktree"), "{}", e.message);
        std::fs::write(&config, format!("{orig}[include]\n\tpath = ../cfg\n")).unwrap();
        let e = Workspace::open(dir.path(), vec![]).err().expect("include.path is refused");
        assert!(e.message.contains("include.path"), "{}", e.message);
        std::fs::write(&config, format!("{orig}[includeIf \"gitdir:/\"]\n\tpath = ../cfg\n")).unwrap();
        assert!(Workspace::open(dir.path(), vec![]).is_err(), "includeIf is refused");
        std::fs::write(&config, orig).unwrap();
        assert!(Workspace::open(dir.path(), vec![]).is_ok());
    }

    /// On a one-thread runtime, the work waits for a message that only another task on that
    /// runtime sends: it can arrive only if the work is not holding the executor's one thread.
    #[test]
    fn blocking_work_runs_off_the_executor() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (_dir, ws) = repo();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let got = rt.block_on(async {
            let other = tokio::spawn(async move { tx.send(()).unwrap() });
            let got =
                ws.blocking(move |_| Ok(rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok())).await.unwrap();
            other.await.unwrap();
            got
        });
        assert!(got, "the other task never ran while the git work waited");
    }

    /// The handle `blocking` opens shares the excluded paths and the check artifacts.
    #[test]
    fn blocking_handles_share_exclusions_and_artifacts() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (dir, ws) = repo();
        std::fs::create_dir(dir.path().join(".hone")).unwrap();
        std::fs::write(dir.path().join(".hone/r.json"), "{}").unwrap();
        std::fs::write(dir.path().join("check.log"), "log").unwrap();
        rt.block_on(async {
            let marked = ws.blocking(|ws| ws.mark_artifacts(&[])).await.unwrap();
            assert_eq!(marked, ["check.log"], "the excluded .hone/ is not an artifact");
            std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
            let dirty = ws.blocking(|ws| ws.dirty_entries()).await.unwrap();
            assert_eq!(dirty, ["b.txt"], "the artifact marked on one handle is excluded on the next");
        });
        assert_eq!(ws.dirty_entries().unwrap(), ["b.txt"], "and on the run's own handle");
    }
}
