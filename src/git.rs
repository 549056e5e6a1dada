//! Git operations with git2 (libgit2): the run's branch, change detection with line stats,
//! the commit, snapshots of failed work, and restoring the user's original checkout.
//! libgit2 runs no hooks, no fsmonitor and no `core.sshCommand`, and hone stops it from
//! reading system, XDG and global config, so a poisoned repo or machine config runs nothing.

use crate::error::{Code, HoneError, Result};
use git2::{BranchType, Oid, Repository, Signature, Status, StatusOptions};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Stop libgit2 from reading any config outside the repo. Call once at start-up, before other
/// threads use git2.
pub fn isolate_config() {
    for level in
        [git2::ConfigLevel::System, git2::ConfigLevel::XDG, git2::ConfigLevel::Global, git2::ConfigLevel::ProgramData]
    {
        // SAFETY: called once from main before any concurrent git2 use.
        let _ = unsafe { git2::opts::set_search_path(level, "") };
    }
}

/// Where HEAD pointed before the run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum OriginalHead {
    Branch(String),
    Detached(String),
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// added, modified, deleted, renamed, typechange
    pub status: String,
    pub added: usize,
    pub removed: usize,
}

pub struct Workspace {
    repo: Repository,
    root: PathBuf,
    /// Repo-relative paths hone never commits or reports as changes (its own directory, the
    /// report dir, the checks' JUnit files).
    excluded: Vec<String>,
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
        let excluded = excluded.into_iter().filter(|r| !r.is_empty()).collect();
        Ok(Workspace { repo, root, excluded })
    }

    pub fn root(&self) -> &Path {
        &self.root
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

    /// Ignored files and directories in the work tree (a directory stands for its contents),
    /// repo-relative, minus excluded paths.
    pub fn ignored_entries(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(false).include_ignored(true).recurse_ignored_dirs(false);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status().is_ignored())
            .filter_map(|s| s.path().ok().map(|p| p.trim_end_matches('/').to_string()))
            .filter(|p| !self.is_excluded(p))
            .collect())
    }

    /// Remove ignored entries that are not in `before`: what the run left in ignored paths.
    /// Nothing is followed: a symlink is removed itself, and a path under one is left alone.
    pub fn remove_new_ignored(&self, before: &[String]) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for rel in self.ignored_entries()? {
            if before.contains(&rel) || before.iter().any(|b| rel.starts_with(&format!("{b}/"))) {
                continue;
            }
            let p = self.root.join(&rel);
            let parent_is_real = p.parent().is_some_and(|parent| {
                parent.strip_prefix(&self.root).is_ok_and(|r| {
                    r.ancestors().all(|a| {
                        a.as_os_str().is_empty()
                            || std::fs::symlink_metadata(self.root.join(a)).is_ok_and(|m| m.is_dir())
                    })
                })
            });
            if !parent_is_real {
                continue;
            }
            let gone = match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                Ok(_) => std::fs::remove_file(&p),
                Err(_) => continue,
            };
            if gone.is_ok() {
                removed.push(rel);
            }
        }
        Ok(removed)
    }

    fn is_excluded(&self, rel: &str) -> bool {
        self.excluded.iter().any(|e| rel == e || rel.starts_with(&format!("{e}/")))
    }

    /// Uncommitted changes and untracked (not ignored) files, minus excluded paths.
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false);
        let statuses = self.repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().is_ignored())
            .filter_map(|s| s.path().ok().map(str::to_string))
            .filter(|p| !self.is_excluded(p))
            .collect())
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

    /// Point `branch` at `base` (re-created if it exists: it is hone's own branch) and check it out.
    /// With `keep_changes`, uncommitted changes are carried over (safe checkout).
    pub fn start_branch(&self, branch: &str, base: Oid, keep_changes: bool) -> Result<()> {
        let commit = self.repo.find_commit(base)?;
        self.repo.set_head_detached(base)?;
        self.repo.branch(branch, &commit, true)?;
        self.repo.set_head(&format!("refs/heads/{branch}"))?;
        let mut co = git2::build::CheckoutBuilder::new();
        if keep_changes {
            co.safe()
        } else {
            co.force()
        };
        self.repo.checkout_head(Some(&mut co))?;
        Ok(())
    }

    /// Delete hone's `branch` if it still points at `base` (the run committed nothing).
    pub fn drop_branch_if_at(&self, branch: &str, base: Oid) -> Result<()> {
        if let Ok(mut b) = self.repo.find_branch(branch, BranchType::Local)
            && b.get().target() == Some(base)
            && !b.is_head()
        {
            b.delete()?;
        }
        Ok(())
    }

    /// Make the work tree match commit `oid` exactly (for rollback to a checkpoint): tracked files
    /// are restored and files created since are removed. HEAD does not move.
    pub fn reset_worktree_to(&self, oid: Oid) -> Result<()> {
        let tree = self.repo.find_commit(oid)?.tree()?;
        let mut co = git2::build::CheckoutBuilder::new();
        co.force().remove_untracked(false);
        self.repo.checkout_tree(tree.as_object(), Some(&mut co))?;
        let mut index = self.repo.index()?;
        index.read_tree(&tree)?;
        index.write()?;
        for rel in self.dirty_paths()? {
            let in_tree = tree.get_path(Path::new(&rel)).is_ok();
            let p = self.root.join(&rel);
            if !in_tree && p.exists() {
                let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
        Ok(())
    }

    /// Every change in the work tree relative to `base`, with line stats.
    pub fn changes(&self, base: Oid) -> Result<Vec<FileChange>> {
        let tree = self.repo.find_commit(base)?.tree()?;
        let mut opts = git2::DiffOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        let diff = self.repo.diff_tree_to_workdir(Some(&tree), Some(&mut opts))?;
        let mut out = Vec::new();
        for (i, delta) in diff.deltas().enumerate() {
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if self.is_excluded(&path) {
                continue;
            }
            let status = match delta.status() {
                git2::Delta::Added | git2::Delta::Untracked => "added",
                git2::Delta::Deleted => "deleted",
                git2::Delta::Renamed => "renamed",
                git2::Delta::Typechange => "typechange",
                _ => "modified",
            };
            let (added, removed) = git2::Patch::from_diff(&diff, i)?
                .map(|p| p.line_stats().map(|(_, a, r)| (a, r)).unwrap_or((0, 0)))
                .unwrap_or((0, 0));
            out.push(FileChange { path, status: status.into(), added, removed });
        }
        Ok(out)
    }

    /// The unified diff of the work tree against `base` (excluded paths left out).
    pub fn diff_text(&self, base: Oid) -> Result<String> {
        let tree = self.repo.find_commit(base)?.tree()?;
        let mut opts = git2::DiffOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
        let diff = self.repo.diff_tree_to_workdir(Some(&tree), Some(&mut opts))?;
        self.patch_text(&diff)
    }

    /// A diff as unified-diff text, leaving out excluded paths.
    fn patch_text(&self, diff: &git2::Diff<'_>) -> Result<String> {
        let mut text = String::new();
        diff.print(git2::DiffFormat::Patch, |delta, _, line| {
            let path = delta.new_file().path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            if !self.is_excluded(&path) {
                if matches!(line.origin(), '+' | '-' | ' ') {
                    text.push(line.origin());
                }
                text.push_str(&String::from_utf8_lossy(line.content()));
            }
            true
        })?;
        Ok(text)
    }

    /// The unified diff between two commits.
    pub fn diff_commits(&self, base: Oid, head: Oid) -> Result<String> {
        let a = self.repo.find_commit(base)?.tree()?;
        let b = self.repo.find_commit(head)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
        self.patch_text(&diff)
    }

    /// The message of commit `sha`.
    pub fn commit_message(&self, sha: &str) -> Result<String> {
        Ok(self.repo.find_commit(Oid::from_str(sha)?)?.message().unwrap_or_default().to_string())
    }

    /// Whether `name` is a local branch.
    pub fn is_branch(&self, name: &str) -> bool {
        self.repo.find_branch(name, BranchType::Local).is_ok()
    }

    /// Stage the whole work tree (minus excluded paths) and write it as a tree.
    fn stage_all(&self) -> Result<Oid> {
        let mut index = self.repo.index()?;
        let excluded = self.excluded.clone();
        let skip = |p: &Path, _: &[u8]| -> i32 {
            let s = p.to_string_lossy();
            i32::from(excluded.iter().any(|e| s == e.as_str() || s.starts_with(&format!("{e}/"))))
        };
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, Some(&mut |p: &Path, m: &[u8]| skip(p, m)))?;
        index.update_all(["*"], Some(&mut |p: &Path, m: &[u8]| skip(p, m)))?;
        index.write()?;
        Ok(index.write_tree()?)
    }

    /// Commit the work tree on the current branch, with `base` as parent.
    pub fn commit(&self, base: Oid, message: &str, name: &str, email: &str) -> Result<Oid> {
        let tree = self.repo.find_tree(self.stage_all()?)?;
        let sig = Signature::now(name, email)?;
        let parent = self.repo.find_commit(base)?;
        Ok(self.repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])?)
    }

    /// Save the work tree as a commit under `refname` without touching any branch.
    pub fn snapshot(&self, base: Oid, refname: &str, message: &str, name: &str, email: &str) -> Result<Oid> {
        let tree = self.repo.find_tree(self.stage_all()?)?;
        let sig = Signature::now(name, email)?;
        let parent = self.repo.find_commit(base)?;
        let oid = self.repo.commit(None, &sig, &sig, message, &tree, &[&parent])?;
        self.repo.reference(refname, oid, true, "hone: save the work of a failed run")?;
        Ok(oid)
    }

    /// Put HEAD back where it was and make the work tree match it, removing files the run
    /// created. Ignored files and excluded paths are left alone.
    pub fn restore(&self, original: &OriginalHead) -> Result<()> {
        match original {
            OriginalHead::Branch(b) => {
                let r = self.repo.find_branch(b, BranchType::Local)?;
                let name =
                    r.get().name().map_err(|_| HoneError::new(Code::Git, "the branch name is not UTF-8"))?.to_string();
                self.repo.set_head(&name)?;
            }
            OriginalHead::Detached(oid) => self.repo.set_head_detached(Oid::from_str(oid)?)?,
        }
        let mut co = git2::build::CheckoutBuilder::new();
        co.force();
        self.repo.checkout_head(Some(&mut co))?;
        for rel in self.dirty_paths()? {
            let p = self.root.join(&rel);
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(&p);
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
        Ok(())
    }
}

/// Copy a plain directory into `dest` as a fresh repository with one commit on `main`.
pub fn init_scratch(src: &Path, dest: &Path) -> Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)
            .map_err(|e| HoneError::new(Code::Io, format!("cannot clear {}: {e}", dest.display())))?;
    }
    copy_dir(src, dest)
        .map_err(|e| HoneError::new(Code::Io, format!("cannot copy {} to {}: {e}", src.display(), dest.display())))?;
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head("main");
    let repo = Repository::init_opts(dest, &opts)?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = Signature::now("hone", "hone@users.noreply.github.com")?;
    repo.commit(Some("HEAD"), &sig, &sig, "scratch copy", &tree, &[])?;
    Ok(())
}

fn copy_dir(src: &Path, dest: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dest)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let ty = entry.file_type()?;
        let to = dest.join(entry.file_name());
        if entry.file_name() == ".git" || entry.file_name() == ".hone" {
            continue;
        }
        if ty.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}
