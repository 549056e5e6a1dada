//! Recovering the checkout a killed run left (its marker found, its process gone): the work it
//! left (the dirty tree, untracked files with it, and any commits on its branch) saved on
//! `refs/hone/<job>/killed-<run id>`, then the checkout put back where the run started, clean.

use super::marker::Marker;
use super::{OriginalHead, Workspace};
use crate::error::{Code, HoneError, Result};
use git2::{Oid, Signature};
use serde::{Deserialize, Serialize};

/// What a recovery did: in the report of the run that did it (`recovered`), and `hone recover`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recovered {
    /// The killed run's id.
    pub run_id: String,
    /// The killed run's job.
    pub job: String,
    /// Its process id (gone when the recovery ran).
    pub pid: u32,
    /// Where its work was saved (null when it had left none).
    pub saved_ref: Option<String>,
    /// The commit saved there.
    pub saved_sha: Option<String>,
    /// Where the checkout was put back: the branch the killed run started from, or its commit.
    pub restored_to: String,
    /// Where the work its tries (`attempts:`) left was saved, one ref per try that left any;
    /// their worktrees were removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tries_saved: Vec<String>,
}

impl Recovered {
    /// The warning a run (or `hone recover`) gives.
    pub fn warning(&self) -> String {
        let saved = match &self.saved_ref {
            Some(r) => format!("its work was saved on `{r}`"),
            None => "it had left no work".into(),
        };
        let tries = match self.tries_saved.as_slice() {
            [] => String::new(),
            refs => format!(
                "; its tries' work was saved on {}",
                refs.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        format!(
            "a killed run (run {}, job `{}`, pid {}) had left this checkout mid-run: {saved}{tries}, and the checkout was put back on `{}`",
            self.run_id, self.job, self.pid, self.restored_to
        )
    }
}

impl Workspace {
    /// Save what the killed run `m` left and put the checkout back where it started. The
    /// work is whatever differs from where it started: uncommitted changes (untracked files too;
    /// not ignored ones, nor hone's excluded paths) and commits HEAD has that neither the start
    /// nor the base is. Saved first; only then is anything removed.
    pub fn recover_killed(&self, m: &Marker) -> Result<Recovered> {
        let original = match &m.original {
            OriginalHead::Branch(b) => {
                self.repo.find_branch(b, git2::BranchType::Local).ok().and_then(|r| r.get().target()).ok_or_else(
                    || {
                        HoneError::new(
                            Code::Git,
                            format!(
                                "the branch `{b}` a killed run started from is gone: hone cannot put the checkout back"
                            ),
                        )
                        .hint("check out a branch yourself, then remove .git/hone/run.json")
                    },
                )?
            }
            OriginalHead::Detached(sha) => Oid::from_str(sha)?,
        };
        let base = m.base.as_deref().map(Oid::from_str).transpose()?;
        let head = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok()).map(|c| c.id());
        let dirty = !self.dirty_entries()?.is_empty();
        let moved = head.is_some_and(|h| h != original && Some(h) != base);
        let saved = match head {
            Some(h) if dirty || moved => Some(self.save_killed(h, m)?),
            _ => None,
        };
        let tries_saved = self.recover_trees(&super::worktree::try_prefix(&m.run_id), &m.saved_ref());
        self.restore(&m.original)?;
        if let (Some(base), Ok(before)) = (base, m.branch_before.as_deref().map(Oid::from_str).transpose()) {
            let _ = self.put_branch_back(&m.branch, base, before);
        }
        let restored_to = match &m.original {
            OriginalHead::Branch(b) => b.clone(),
            OriginalHead::Detached(sha) => sha.clone(),
        };
        Ok(Recovered {
            run_id: m.run_id.clone(),
            job: m.job.clone(),
            pid: m.pid,
            saved_ref: saved.map(|_| m.saved_ref()),
            saved_sha: saved.map(|o| o.to_string()),
            restored_to,
            tries_saved,
        })
    }

    /// The work tree as a commit on top of `head`, on the killed run's ref.
    fn save_killed(&self, head: Oid, m: &Marker) -> Result<Oid> {
        let tree = self.repo.find_tree(self.stage_all(head)?)?;
        let parent = self.repo.find_commit(head)?;
        let oid = if tree.id() == parent.tree_id() {
            head
        } else {
            let sig = Signature::now("hone", "hone@users.noreply.github.com")?;
            let message = format!(
                "hone: the work of a killed run of {}\n\nRun: {}\n\nThe run was killed before it finished; this is the work tree it left, saved by the next run.\n",
                m.job, m.run_id
            );
            self.repo.commit(None, &sig, &sig, &message, &tree, &[&parent])?
        };
        self.repo.reference(&m.saved_ref(), oid, true, "hone: save the work of a killed run")?;
        Ok(oid)
    }
}
