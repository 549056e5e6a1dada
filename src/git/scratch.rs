//! Scratch repositories: a plain directory copied into a fresh repository (demos, the quickstart).

use crate::error::{Code, HoneError, Result};
use git2::{Repository, Signature};
use std::path::Path;

/// Where a scratch repository goes: `rel` below `base`, which is trusted; the directories in
/// `rel` are reached without following a symlink.
#[derive(Debug, Clone, Copy)]
pub struct Below<'a> {
    pub base: &'a Path,
    pub rel: &'a Path,
}

/// Copy a plain directory into `dest` as a fresh repository with one commit on `main`.
/// The directories below `dest.base` are reached without following a symlink (one in their
/// place is replaced), and an earlier copy is removed by descriptor.
pub fn init_scratch(src: &Path, dest: Below<'_>) -> Result<()> {
    let Below { base, rel } = dest;
    let dest = base.join(rel);
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot clear {}: {e}", dest.display()));
    let (parent, name) = (rel.parent().unwrap_or(Path::new("")), rel.file_name().unwrap_or_default());
    let dir = crate::safe_fs::open_dir_below(base, parent).map_err(io)?;
    crate::safe_fs::remove_tree_at(&dir, &name.to_string_lossy()).map_err(io)?;
    let dest = dest.as_path();
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
