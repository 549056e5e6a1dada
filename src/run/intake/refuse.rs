//! What intake refuses before anything runs: a read-only job that cannot be one, and a work tree
//! with uncommitted changes a run would mistake for its own.

use super::super::request::Request;
use crate::error::{Code, HoneError};
use crate::git::Workspace;
use crate::spec::{self, Job};

/// A read-only job (`change: none`) starts from the commit as it is: no uncommitted work it would
/// have to tell from a change, and no saved work to write into the tree.
pub(super) fn read_only_fits(job: &Job, req: &Request) -> Result<(), HoneError> {
    if job.change != spec::answer::Change::None {
        return Ok(());
    }
    if job.repo.allow_dirty {
        return Err(HoneError::new(Code::Spec, "a read-only job (`change: none`) cannot use `repo.allow_dirty`")
            .hint("commit or stash the changes first; a read-only job works on a clean checkout and changes nothing"));
    }
    if req.continue_from.is_some() {
        return Err(HoneError::new(
            Code::Spec,
            "`--continue` cannot take up saved work in a read-only job (`change: none`)",
        )
        .hint("run it again without `--continue`, or with `--change commit`"));
    }
    Ok(())
}

/// A run that requires a clean work tree refuses a dirty one, naming what is uncommitted.
pub(super) fn refuse_dirty(job: &Job, ws: &Workspace, dirty: &[String]) -> Result<(), HoneError> {
    if !job.repo.allow_dirty && !dirty.is_empty() {
        let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
        let more = if dirty.len() > 5 { format!(" and {} more", dirty.len() - 5) } else { String::new() };
        return Err(HoneError::new(
            Code::Git,
            format!("the work tree at {} has uncommitted changes: {}{more}", ws.root().display(), shown.join(", ")),
        )
        .hint("commit or stash them first, or set `repo.allow_dirty: true` to start anyway"));
    }
    Ok(())
}
