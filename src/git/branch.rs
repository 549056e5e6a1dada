//! hone's branch: made (or made again) at the base only when that drops no one's work, that is
//! when every commit on it that the base lacks is hone's own for this job; removed at the end
//! only when hone made it and it never moved. An autofix run's branch is the PR's head branch,
//! and a job's `git.branch` may be any name: a local branch of that name may hold a person's
//! commits that were never pushed.

use super::Workspace;
use crate::error::{Code, HoneError, Result};
use git2::{BranchType, Oid};

/// How many commits of an existing branch are looked at before it is called someone's work.
const MAX_WALK: usize = 10_000;

impl Workspace {
    /// Point `branch` at `base` and check it out; with `keep_changes`, uncommitted changes are
    /// carried over (safe checkout). A branch that exists is moved only if every commit on it
    /// that `base` lacks is one `is_hones` accepts; otherwise `E_CONFLICT`, and nothing changes.
    /// Returns where the branch was before (`None`: hone made it).
    pub fn start_branch(
        &self,
        branch: &str,
        base: Oid,
        keep_changes: bool,
        is_hones: &dyn Fn(&git2::Commit<'_>) -> bool,
    ) -> Result<Option<Oid>> {
        let existing = self.repo.find_branch(branch, BranchType::Local).ok().and_then(|b| b.get().target());
        if let Some(tip) = existing {
            self.refuse_to_drop_work(branch, tip, base, is_hones)?;
        }
        let commit = self.repo.find_commit(base)?;
        let was = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok()).map(|c| c.id());
        self.repo.set_head_detached(base)?;
        self.repo.branch(branch, &commit, true)?;
        self.repo.set_head(&format!("refs/heads/{branch}"))?;
        if was == Some(base) {
            // Already on that commit, with a work tree intake found clean (or kept on purpose):
            // a checkout would change nothing, after walking every file.
            return Ok(existing);
        }
        let mut co = git2::build::CheckoutBuilder::new();
        if keep_changes {
            co.safe()
        } else {
            co.force()
        };
        self.repo.checkout_head(Some(&mut co))?;
        Ok(existing)
    }

    /// `E_CONFLICT` when `tip` has a commit that `base` lacks and hone did not make.
    fn refuse_to_drop_work(
        &self,
        branch: &str,
        tip: Oid,
        base: Oid,
        is_hones: &dyn Fn(&git2::Commit<'_>) -> bool,
    ) -> Result<()> {
        let mut walk = self.repo.revwalk()?;
        walk.push(tip)?;
        walk.hide(base)?;
        let mut theirs = Vec::new();
        for (seen, oid) in walk.enumerate() {
            let c = self.repo.find_commit(oid?)?;
            if seen >= MAX_WALK || !is_hones(&c) {
                theirs.push(c.id());
            }
            if seen >= MAX_WALK {
                break;
            }
        }
        let Some(first) = theirs.first() else { return Ok(()) };
        let subject = self
            .repo
            .find_commit(*first)
            .ok()
            .and_then(|c| c.summary_bytes().map(|s| String::from_utf8_lossy(s).chars().take(80).collect::<String>()))
            .unwrap_or_default();
        Err(HoneError::new(
            Code::Conflict,
            format!(
                "the local branch `{branch}` has {} commit(s) that the base lacks and hone did not make (the newest: {} {subject:?}); starting the run there would drop them from the branch",
                theirs.len(),
                &first.to_string()[..12],
            ),
        )
        .hint("push or rename that branch (or delete it if its work is elsewhere), or set `git.branch` to another name"))
    }

    /// Undo `start_branch` for a run that committed nothing, if `branch` still points at
    /// `base`: a branch hone made (`before` is `None`) is deleted; one that was there goes back
    /// where it was.
    pub fn put_branch_back(&self, branch: &str, base: Oid, before: Option<Oid>) -> Result<()> {
        let Ok(mut b) = self.repo.find_branch(branch, BranchType::Local) else { return Ok(()) };
        if b.get().target() != Some(base) || b.is_head() {
            return Ok(());
        }
        match before {
            None => b.delete()?,
            Some(tip) if tip != base => {
                b.get_mut().set_target(tip, "hone: the branch back where it was (the run committed nothing)")?;
            }
            Some(_) => {}
        }
        Ok(())
    }
}
