//! Paths hone itself keeps from the model's commands and tools, whatever the policy file says:
//! the job spec and the policy file (unwritable), cloud credentials (unreadable too).

use super::{PathRule, Policy, compile_glob};

impl Policy {
    /// Make `rel` (repo-relative) unwritable, e.g. the policy file itself.
    pub fn protect(&mut self, rel: &str, why: &str) {
        self.write_deny.extend(exact(rel, why));
    }

    /// Hide the file at `rel` (relative to the repository root): no command or tool may read or
    /// write it (the jail shows it empty), for `why`.
    pub fn hide(&mut self, rel: &str, why: &str) {
        self.read_deny.extend(exact(rel, why));
        self.write_deny.extend(exact(rel, why));
    }
}

/// The rule for exactly the path `rel`, keyed by `why`.
fn exact(rel: &str, why: &str) -> Option<PathRule> {
    let matcher = compile_glob(&globset::escape(rel)).ok()?;
    Some(PathRule { key: why.into(), glob: rel.into(), matcher })
}
