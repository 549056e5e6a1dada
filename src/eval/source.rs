//! Where a task's repository is on this machine. A local path is read in place (its objects are
//! copied, in process, into each task's repository). A URL is cloned once per `hone eval run`,
//! bare, by hone's hardened git (no hooks, no outside config, known protocols only, no token
//! offered: a private repository is given as a local clone), bounded by the cancel and git's
//! per-operation limit, into `sources/` in the out dir. A clone left there by an earlier run is
//! not trusted: it is removed and made afresh.

use super::repos::{Repos, is_url};
use crate::error::{Code, HoneError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repositories of one `hone eval run`, found or fetched.
pub struct Sources {
    /// Where clones of URLs go.
    dir: PathBuf,
    repos: Repos,
    fetched: tokio::sync::Mutex<HashMap<String, PathBuf>>,
}

impl Sources {
    pub fn new(out: &Path, repos: Repos) -> Sources {
        Sources { dir: out.join("sources"), repos, fetched: Default::default() }
    }

    /// The settings the repositories file gives `repo`, if any.
    pub fn settings(&self, repo: &str) -> Option<&super::repos::Repo> {
        self.repos.get(repo)
    }

    /// The local repository for a task's `repo`: its `source` in the repositories file, else the
    /// name itself; a URL cloned first (once).
    pub async fn local(
        &self,
        repo: &str,
        env: &crate::env::RunEnv,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<PathBuf, HoneError> {
        let given = self.settings(repo).and_then(|r| r.source.clone()).unwrap_or_else(|| repo.to_string());
        if !is_url(&given) {
            let p = PathBuf::from(&given);
            if !p.exists() {
                return Err(HoneError::new(Code::InvalidArgs, format!("the task's repository `{given}` is not here"))
                    .hint("give the repository's place with --repos FILE (`repos: {NAME: {source: PATH or URL}}`)"));
            }
            return Ok(p);
        }
        // Over HTTP(S) or git's own protocol only: ssh would offer the user's keys to any host a
        // tasks file names.
        if !["https://", "http://", "git://"].iter().any(|p| given.starts_with(p)) {
            return Err(HoneError::new(
                Code::InvalidArgs,
                format!("`{given}`: hone eval clones over https, http or git:// only"),
            )
            .hint("clone it yourself (your keys, your choice) and give the local path as its `source`"));
        }
        let mut fetched = self.fetched.lock().await;
        if let Some(p) = fetched.get(&given) {
            return Ok(p.clone());
        }
        let name = &crate::spec::sha256_hex(given.as_bytes())[..16];
        let io = |e: std::io::Error| HoneError::new(Code::Io, format!("{}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        crate::safe_fs::remove_beneath(&self.dir, format!("{name}.git")).map_err(io)?;
        let access = crate::forge::credential::Access::decide(&given, None, None);
        let mut git = crate::forge::remote::hardened(&self.dir, env, &access);
        git.args(["clone", "--bare", "--quiet", "--no-tags", "--", &given, &format!("{name}.git")]);
        let far = tokio::time::Instant::now() + std::time::Duration::from_secs(24 * 3600);
        let bound = crate::bound::Bound::new(far, cancel);
        crate::forge::remote::run(git, &format!("clone {given}"), &bound).await?;
        let p = self.dir.join(format!("{name}.git"));
        fetched.insert(given, p.clone());
        Ok(p)
    }
}
