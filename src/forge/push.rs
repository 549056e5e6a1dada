//! Pushing the run's branch with the git CLI (libgit2 here has no HTTPS transport).
//! The token reaches git through a one-shot credential helper that reads it from an environment
//! variable set only on that child process: it is never written to `.git/config` or a remote URL.
//! Hooks, fsmonitor and outside config are disabled; pushes use force-with-lease.

use crate::error::{Code, HoneError, Result};
use std::path::Path;
use std::process::Command;

/// The one-shot credential helper: prints the token from the child's environment.
const HELPER: &str =
    "!f() { test \"$1\" = get && echo username=x-access-token && echo \"password=$HONE_GIT_TOKEN\"; }; f";

pub(crate) fn git(repo: &Path, token: Option<&str>) -> Command {
    let mut c = Command::new("git");
    c.current_dir(repo)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.sshCommand=ssh",
            "-c",
            "credential.helper=",
            "-c",
            &format!("credential.helper={HELPER}"),
        ]);
    match token {
        Some(t) => c.env("HONE_GIT_TOKEN", t),
        None => c.env_remove("HONE_GIT_TOKEN"),
    };
    c
}

pub(crate) fn run(c: &mut Command, what: &str) -> Result<String> {
    let out = c.output().map_err(|e| HoneError::new(Code::Git, format!("cannot run git to {what}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(HoneError::new(Code::Git, format!("git could not {what}: {err}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The remote's URL as configured (for deciding whether a token is needed and for owner/repo).
pub fn remote_url(repo: &Path, remote: &str) -> Option<String> {
    run(git(repo, None).args(["remote", "get-url", remote]), "read the remote").ok()
}

/// The commit `branch` points at on the remote, if it exists there.
pub fn remote_head(repo: &Path, remote: &str, branch: &str, token: Option<&str>) -> Result<Option<String>> {
    let out =
        run(git(repo, token).args(["ls-remote", remote, &format!("refs/heads/{branch}")]), "read the remote branch")?;
    Ok(out.split_whitespace().next().map(str::to_string))
}

/// Fetch `branch` from `remote` into `local_ref`; returns the fetched commit.
pub fn fetch(repo: &Path, remote: &str, branch: &str, local_ref: &str, token: Option<&str>) -> Result<String> {
    let spec = format!("+refs/heads/{branch}:{local_ref}");
    run(git(repo, token).args(["fetch", "--no-tags", remote, &spec]), &format!("fetch `{branch}`"))?;
    run(git(repo, None).args(["rev-parse", local_ref]), "read the fetched commit")
}

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

/// Push `local_ref` to `branch` on `remote`, with force-with-lease on what the remote had.
pub fn push(
    repo: &Path,
    remote: &str,
    local_ref: &str,
    branch: &str,
    expected: Option<&str>,
    token: Option<&str>,
) -> Result<()> {
    let lease = format!("--force-with-lease=refs/heads/{branch}:{}", expected.unwrap_or(""));
    let spec = format!("{local_ref}:refs/heads/{branch}");
    run(git(repo, token).args(["push", "--porcelain", &lease, remote, &spec]), &format!("push `{branch}`"))?;
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
