//! Scratch repositories: a plain directory copied into a fresh repository (demos, the quickstart).

use crate::error::{Code, HoneError, Result};
use git2::{Repository, Signature};
use std::path::Path;

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
