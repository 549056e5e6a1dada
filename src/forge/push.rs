//! Which branches hone may push: its own, never the base or a protected one. The pushing itself
//! is in `remote.rs`.

use crate::error::{Code, HoneError, Result};

/// Whether `branch` may be pushed: it must be hone's (matches the branch template, or is the PR
/// branch being autofixed), and never the base or a protected branch.
pub fn check_branch(branch: &str, base: Option<&str>, protected: &[String], own: bool) -> Result<()> {
    let glob_hit = |p: &str| globset::Glob::new(p).map(|g| g.compile_matcher().is_match(branch)).unwrap_or(p == branch);
    if base == Some(branch) || protected.iter().any(|p| glob_hit(p)) {
        return Err(HoneError::new(Code::PolicyDenied, format!("refusing to push to the protected branch `{branch}`"))
            .hint("hone pushes only to its own branches; change `git.branch`"));
    }
    if !own {
        return Err(HoneError::new(
            Code::PolicyDenied,
            format!("refusing to push to `{branch}`, which is not a hone branch"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hones_own_unprotected_branches_are_pushed() {
        let prot = vec!["main".to_string(), "release/*".to_string()];
        assert!(check_branch("hone/fix", Some("main"), &prot, true).is_ok());
        assert!(check_branch("main", Some("develop"), &prot, true).is_err());
        assert!(check_branch("release/1.2", None, &prot, true).is_err());
        assert!(check_branch("develop", Some("develop"), &prot, true).is_err());
        assert!(check_branch("feature/x", None, &prot, false).is_err());
    }
}
