//! A second attempt (`hone run --continue REF`): the work a failed run saved on a ref, applied
//! to the work tree as a change, so that the model goes on from it.

use super::Workspace;
use crate::error::{Code, HoneError, Result};
use git2::{ApplyLocation, Oid};

/// Saved work, found.
pub struct Saved {
    pub refname: String,
    pub commit: Oid,
    /// Its commit message: what the failed run said about itself.
    pub message: String,
}

impl Workspace {
    /// Find the saved work `spec` names: a ref, or `failed` for `refs/hone/{job}/failed`.
    pub fn find_saved(&self, spec: &str, job: &str) -> Result<Saved> {
        let refname = if spec == "failed" { format!("refs/hone/{job}/failed") } else { spec.to_string() };
        let commit = self.repo.revparse_single(&refname).and_then(|o| o.peel_to_commit()).map_err(|e| {
            HoneError::new(
                Code::Git,
                format!(
                    "cannot find the saved work `{refname}`: {}. A failed run of this job saves its work on refs/hone/{job}/failed (`--continue failed`)",
                    e.message()
                ),
            )
        })?;
        let message = commit.message().unwrap_or_default().to_string();
        Ok(Saved { refname, commit: commit.id(), message })
    }

    /// Apply the change `saved` made (against its parent) to the work tree; the paths it
    /// touched. A change that no longer applies (the base moved under it) is `E_CONFLICT`.
    pub fn apply_saved(&self, saved: Oid) -> Result<Vec<String>> {
        let commit = self.repo.find_commit(saved)?;
        let parent = commit.parent(0).map_err(|_| HoneError::new(Code::Git, "the saved work has no parent commit"))?;
        // With the binary files' contents: a patch without them does not apply.
        let mut opts = git2::DiffOptions::new();
        opts.show_binary(true);
        let diff = self.repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), Some(&mut opts))?;
        let mut paths: Vec<String> = diff
            .deltas()
            .filter_map(|d| {
                d.new_file().path().or_else(|| d.old_file().path()).map(|p| p.to_string_lossy().into_owned())
            })
            .collect();
        paths.sort();
        // Where a command or setup put a symlink in place of a directory or file the saved work
        // touches, the link goes: the apply must not write through it.
        self.unlink_planted(&commit.tree()?)?;
        self.repo.apply(&diff, ApplyLocation::WorkDir, None).map_err(|e| {
            HoneError::new(
                Code::Conflict,
                format!(
                    "the saved work does not apply to the base any more ({}): the files it changed have changed since; start over without --continue",
                    e.message()
                ),
            )
        })?;
        Ok(paths)
    }
}
