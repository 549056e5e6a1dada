//! A fleet repository's clone in `repos/<id>`: made by hone's hardened git, and reused only when
//! its `.git` is still what that clone made (a real directory, no `commondir`, and a config of
//! the keys and values `git clone` and hone's checkout write, with the target's URL). Anything
//! else (an `ext::` URL the clone allows itself, `uploadpack`, a filter, `insteadOf`, an
//! include, a proxy) is a workspace someone else wrote: the clone is removed and made afresh, so
//! git never runs under a config hone did not write.

use super::layout;
use crate::error::Code;
use crate::forge::{credential::Access, remote::hardened, remote::run};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// The largest `.git/config` a clone of hone's has (it writes about 300 bytes).
const MAX_CONFIG: u64 = 64 * 1024;

/// A repository to clone: its URL, the branch to start from (else the remote's default), and
/// where its clone goes (`repos/<id>` in the fleet's workspace).
#[derive(Clone, Copy)]
pub struct Wanted<'a> {
    pub url: &'a str,
    pub base: Option<&'a str>,
    pub workspace: &'a Path,
    pub id: &'a str,
}

/// Why a repository's clone could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot prepare the clone's dir: {0}")]
    Dir(std::io::Error),
    #[error("cannot remove the clone's dir: {0}")]
    Remove(std::io::Error),
    #[error("cancelled before the clone was checked")]
    Cancelled,
    #[error("bad workspace path")]
    Workspace,
    /// A git command failed: its message, and why the job's token was not offered when it was
    /// not.
    #[error("{0}")]
    Git(String),
}

impl Error {
    /// A clone that could not be prepared is a failed git operation, whatever failed.
    pub fn code(&self) -> Code {
        Code::Git
    }
}

/// Whether `key = value` is one `git clone --no-tags --filter=blob:none URL` or
/// `git checkout -B <base> origin/<base>` writes, for a clone of `url`. Section and variable
/// names come lowercased from `git config --list`; a branch name keeps its case.
fn expected(key: &str, value: &str, url: &str) -> bool {
    let flag = matches!(value, "true" | "false");
    match key {
        "core.repositoryformatversion" => matches!(value, "0" | "1"),
        "core.filemode" | "core.logallrefupdates" | "core.ignorecase" | "core.precomposeunicode" | "core.symlinks" => {
            flag
        }
        "core.bare" => value == "false",
        "remote.origin.url" => value == url,
        "remote.origin.fetch" => value == "+refs/heads/*:refs/remotes/origin/*",
        "remote.origin.tagopt" => value == "--no-tags",
        "remote.origin.promisor" => value == "true",
        "remote.origin.partialclonefilter" => value == "blob:none",
        "extensions.partialclone" => value == "origin",
        "extensions.objectformat" => matches!(value, "sha1" | "sha256"),
        "extensions.refstorage" => matches!(value, "files" | "reftable"),
        _ => match key.strip_prefix("branch.") {
            Some(rest) => match (rest.strip_suffix(".remote"), rest.strip_suffix(".merge")) {
                (Some(name), _) => !name.is_empty() && value == "origin",
                (_, Some(name)) => !name.is_empty() && value == format!("refs/heads/{name}"),
                _ => false,
            },
            None => false,
        },
    }
}

/// The entries of `git config --null --list` output: `key\nvalue\0` (`key\0` for a bare key).
fn entries(listed: &str) -> Vec<(&str, &str)> {
    listed.split('\0').filter(|e| !e.is_empty()).map(|e| e.split_once('\n').unwrap_or((e, ""))).collect()
}

/// Why the clone in `dir` is not one hone may reuse, if it is not: its `.git` is read without
/// following a link, and its config is listed by git from a copy, with includes off.
async fn not_reusable(
    dir: &Path,
    url: &str,
    git: &impl Fn(&Path) -> tokio::process::Command,
    cancel: &CancellationToken,
) -> Option<String> {
    let gitdir = match crate::safe_fs::open_existing_dir_below(dir, Path::new(".git")) {
        Ok(d) => d,
        Err(e) => return Some(format!("its .git is not a directory ({e})")),
    };
    if crate::safe_fs::read_regular_at(&gitdir, "commondir", 1).is_ok() {
        return Some("its .git names another repository (commondir)".into());
    }
    let bytes = match crate::safe_fs::read_regular_at(&gitdir, "config", MAX_CONFIG + 1) {
        Ok(b) if b.len() as u64 <= MAX_CONFIG => b,
        Ok(_) => return Some("its config is larger than hone's clone writes".into()),
        Err(e) => return Some(format!("its config cannot be read as a regular file ({e})")),
    };
    let copy = match tempfile::tempdir().and_then(|t| std::fs::write(t.path().join("config"), &bytes).map(|()| t)) {
        Ok(t) => t,
        Err(e) => return Some(format!("its config cannot be copied ({e})")),
    };
    let mut c = git(copy.path());
    c.env("GIT_CEILING_DIRECTORIES", copy.path()).args([
        "config",
        "--file",
        "config",
        "--no-includes",
        "--null",
        "--list",
    ]);
    let bound = crate::bound::Bound::new(tokio::time::Instant::now() + std::time::Duration::from_secs(30), cancel);
    let listed = match run(c, "read the clone's config", &bound).await {
        Ok(l) => l,
        Err(e) => return Some(format!("its config cannot be read ({})", e.message)),
    };
    let unexpected: Vec<String> =
        entries(&listed).into_iter().filter(|(k, v)| !expected(k, v, url)).map(|(k, _)| k.to_string()).collect();
    (!unexpected.is_empty())
        .then(|| format!("its config has settings hone's clone does not write: {}", unexpected.join(", ")))
}

/// Clone `url` into `workspace/repos/<id>` (on the base), or reuse the clone there: fetch, then
/// reset hard to the base and clean. Every git process is bounded by the fleet's cancellation and a
/// per-operation limit. The place's token is offered to its forge's server only, over HTTPS:
/// private repositories clone too.
pub async fn prepare(
    want: &Wanted<'_>,
    env: &crate::env::RunEnv,
    place: &crate::forge::place::Place,
    cancel: &CancellationToken,
) -> Result<PathBuf, Error> {
    let Wanted { url, base, workspace, id } = *want;
    let dir = layout::clone_dir(workspace, id).map_err(Error::Dir)?;
    let bound = crate::bound::Bound::new(tokio::time::Instant::now() + std::time::Duration::from_secs(3600), cancel);
    let access = Access::decide(url, place.server.as_ref(), place.token.as_ref());
    let token_env = place.token_source(None);
    let url = access.url.as_str();
    let git = |d: &Path| hardened(d, env, &access);
    let explain = |e: crate::error::HoneError| match access.explain(&token_env) {
        Some(why) => Error::Git(format!("{}; {why}", e.message)),
        None => Error::Git(e.message),
    };
    let go = |c, what: &'static str| {
        let bound = &bound;
        async move { run(c, what, bound).await.map_err(explain) }
    };
    let with = |d: &Path, args: &[&str]| {
        let mut c = git(d);
        c.args(args);
        c
    };
    if std::fs::symlink_metadata(&dir).is_ok()
        && let Some(why) = not_reusable(&dir, url, &git, cancel).await
    {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        tracing::warn!("the clone of `{id}` is not hone's as it was made ({why}): cloning afresh");
        layout::remove_clone(workspace, id).map_err(Error::Remove)?;
    }
    if std::fs::symlink_metadata(&dir).is_err() {
        let parent = dir.parent().ok_or(Error::Workspace)?;
        // A partial clone: blobs are fetched when the run needs them (servers without filter
        // support, and local paths, fall back to a full clone).
        let branch = base.map(|b| format!("--branch={b}"));
        let mut args = vec!["clone", "--quiet", "--no-tags", "--filter=blob:none"];
        args.extend(branch.as_deref());
        args.extend(["--", url, id]);
        go(with(parent, &args), "clone").await?;
        // A fresh clone is already on the base (the remote's default branch unless one is
        // named), at its tip, with nothing else in the tree: no checkout or clean to run, three
        // processes fewer per repository.
        return Ok(dir);
    }
    go(with(&dir, &["fetch", "--quiet", "--prune", "origin"]), "fetch").await?;
    let base = match base {
        Some(b) => b.to_string(),
        None => go(with(&dir, &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]), "find the default branch")
            .await?
            .trim_start_matches("origin/")
            .to_string(),
    };
    let start = format!("origin/{base}");
    go(with(&dir, &["checkout", "--quiet", "-f", "-B", &base, &start]), "check out the base").await?;
    go(with(&dir, &["clean", "-ffdq"]), "clean").await?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_hones_clone_writes_is_expected() {
        let url = "https://github.com/acme/app.git";
        let listed = "core.repositoryformatversion\n1\0core.filemode\ntrue\0core.bare\nfalse\0core.logallrefupdates\ntrue\0remote.origin.url\nhttps://github.com/acme/app.git\0remote.origin.tagopt\n--no-tags\0remote.origin.fetch\n+refs/heads/*:refs/remotes/origin/*\0remote.origin.promisor\ntrue\0remote.origin.partialclonefilter\nblob:none\0branch.Main.remote\norigin\0branch.Main.merge\nrefs/heads/Main\0";
        let all = entries(listed);
        assert_eq!(all.len(), 11);
        assert!(all.iter().all(|(k, v)| expected(k, v, url)), "{all:?}");
        for (k, v) in [
            ("remote.origin.url", "ext::sh -c x"),
            ("protocol.ext.allow", "always"),
            ("remote.origin.uploadpack", "x"),
            ("filter.evil.smudge", "x"),
            ("include.path", "/x"),
            ("includeif.gitdir:/.path", "/x"),
            ("url.ext::x.insteadof", "https://"),
            ("core.gitproxy", "x"),
            ("core.bare", "true"),
            ("core.worktree", "/"),
            ("core.alternaterefscommand", "x"),
            ("http.proxy", "http://evil"),
            ("extensions.worktreeconfig", "true"),
            ("branch.main.merge", "refs/heads/other"),
            ("branch..remote", "origin"),
        ] {
            assert!(!expected(k, v, url), "{k}={v}");
        }
        assert_eq!(entries("a.b\0c.d\ne\0"), [("a.b", ""), ("c.d", "e")]);
    }
}
