//! Talking to the remote (ls-remote, push, fetch) from a bare repository hone owns, outside the
//! work tree, with a config hone writes: the remote's URL (read by hone, never by git), hooks,
//! fsmonitor and unknown protocols off, and the token only where `credential.rs` allows it. It
//! borrows the work tree's objects through `objects/info/alternates`, which are data. So nothing
//! under the work tree's `.git` (config, `commondir`, hooks, aliases, `uploadpack`/`receivepack`,
//! credential helpers) can make hone run a program or send the token elsewhere. Every git process
//! has a timeout, obeys cancellation and stays inside the run's wall-time budget. A remote on
//! this machine is not given to git at all: `local.rs` pushes and fetches in process. The
//! user's own transport settings (a proxy, a CA bundle: `git::transport`) reach git through its
//! environment.

use super::credential::{Access, without_userinfo};
use super::local;
use crate::bound::Bound;
use crate::error::{Code, HoneError, Result};
use crate::git::Workspace;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

/// The longest one git operation may take, within the run's budget.
const OP_LIMIT: Duration = Duration::from_secs(600);

/// The variables a git process sees: `git::transport::process_env`.
fn passed(env: &crate::env::RunEnv) -> Vec<(String, String)> {
    crate::git::transport::process_env(env)
}

/// Why hone will not hand `url` to git, if it will not. The ways a remote URL may reach a server
/// are few; anything else (`ext::`, `fd::`, other helpers) is refused, since a remote helper is a
/// program. So is a part that begins with `-` (git would
/// take the URL, a host or a user for an option, as in `--upload-pack=CMD@h:p`), a `file://`
/// URL that is not `file:///path` (plain bytes), or a transport other than https, http, ssh,
/// git, file and local paths.
pub fn url_refusal(url: &str) -> Option<&'static str> {
    const DASH: &str =
        "a part of it (the URL, its user, host or path) begins with `-`, which git could read as an option";
    if url.starts_with('-') {
        return Some(DASH);
    }
    if let Some(rest) = url.strip_prefix("file://") {
        return (!rest.starts_with('/') || rest.contains('%'))
            .then_some("a `file://` URL must be `file:///` and an absolute path, without percent-encoding");
    }
    if let Some(rest) = ["https://", "http://", "ssh://", "git://"].iter().find_map(|p| url.strip_prefix(p)) {
        let authority = rest.split('/').next().unwrap_or("");
        let (user, host) = authority.rsplit_once('@').unwrap_or(("", authority));
        if host.is_empty() {
            return Some("it names no host");
        }
        return (user.starts_with('-') || host.starts_with('-')).then_some(DASH);
    }
    if url.starts_with('/') || url.starts_with("./") || url.starts_with("../") {
        return None;
    }
    // scp-like `user@host:path`: no `/` before the colon, a user, and no `//` after it.
    match url.split_once(':') {
        Some((login, path)) if !login.contains('/') && !path.starts_with("//") => match login.rsplit_once('@') {
            Some((user, host)) if [user, host, path].iter().any(|p| p.starts_with('-')) => Some(DASH),
            Some(_) => None,
            None => Some(TRANSPORT),
        },
        _ => Some(TRANSPORT),
    }
}

const TRANSPORT: &str = "it uses a transport hone does not run (only https, http, ssh, git, file and local paths)";

pub struct Remote {
    dir: tempfile::TempDir,
    /// The URL, and the token for it when it is the forge's (`credential.rs`).
    access: Access,
    /// The repository, when the remote is one on this machine.
    local: Option<local::Local>,
    /// The variable the token came from, for the messages.
    token_env: String,
    /// The variables a git process sees (from `ENV_PASS`).
    env: Vec<(String, String)>,
    bound: Bound,
}

impl Remote {
    /// hone's own repository for `remote` of `ws`, with the place's token for its server only.
    /// Errors when the remote is missing or its URL is not a plain transport.
    pub fn open(
        ws: &Workspace,
        remote: &str,
        env: &crate::env::RunEnv,
        place: &super::place::Place,
        bound: &Bound,
    ) -> Result<Remote> {
        let url = ws.remote_url(remote).ok_or_else(|| {
            HoneError::new(Code::Git, format!("the repository has no remote `{remote}`"))
                .hint("set `git.remote` to a configured remote, or add one")
        })?;
        if let Some(why) = url_refusal(&url) {
            return Err(HoneError::new(
                Code::Git,
                format!("hone does not use the URL of remote `{remote}` ({}): {why}", without_userinfo(&url)),
            )
            .hint("use an https, ssh, git or file:/// URL, or a local path"));
        }
        // A repository on this machine is pushed to and fetched from in process: no git program
        // runs there (`local.rs`).
        let local = match local::path_of(&url, ws.root()) {
            // Another user's repository only where git's `safe.directory` would let git push to it.
            Some(p) => {
                // The path as git would reach it: a link of ours to another user's repository is
                // judged by where it leads.
                let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
                crate::git::safe::ensure(&real, &real, env)?;
                Some(local::Local::new(&p, &url, ws.root())?)
            }
            None => None,
        };
        let access = Access::decide(&url, place.server.as_ref(), place.token.as_ref());
        let dir = tempfile::Builder::new()
            .prefix("hone-remote-")
            .tempdir()
            .map_err(|e| HoneError::new(Code::Io, format!("cannot make hone's remote repository: {e}")))?;
        let repo = git2::Repository::init_bare(dir.path())?;
        let mut cfg = repo.config()?;
        for (k, v) in [
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
            ("core.sshCommand", "ssh"),
            ("protocol.allow", "never"),
            ("protocol.https.allow", "always"),
            ("protocol.http.allow", "always"),
            ("protocol.ssh.allow", "always"),
            ("protocol.git.allow", "always"),
            ("protocol.file.allow", "always"),
            ("push.recurseSubmodules", "no"),
        ] {
            cfg.set_str(k, v)?;
        }
        for (k, v) in access.git_config() {
            cfg.set_str(&k, &v)?;
        }
        let alternates = dir.path().join("objects/info/alternates");
        std::fs::create_dir_all(alternates.parent().unwrap_or(dir.path()))
            .and_then(|()| std::fs::write(&alternates, format!("{}\n", ws.objects_dir().display())))
            .map_err(|e| {
                HoneError::new(Code::Io, format!("cannot link hone's remote repository to the objects: {e}"))
            })?;
        let token_env = place.token_source(None);
        Ok(Remote { dir, access, local, token_env, env: passed(env), bound: bound.clone() })
    }

    pub fn git_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The commit `branch` points at on the remote, if it exists there.
    pub async fn head(&self, branch: &str) -> Result<Option<String>> {
        if let Some(l) = self.local.clone() {
            let b = branch.to_string();
            return self.in_process(move || l.head(&b)).await;
        }
        let out = self
            .git(&["ls-remote", "--", &self.access.url, &format!("refs/heads/{branch}")], "read the remote branch")
            .await?;
        Ok(out.split_whitespace().next().map(str::to_string))
    }

    /// Push commit `oid` to `branch`, with force-with-lease on what the remote had.
    pub async fn push(&self, oid: &str, branch: &str, expected: Option<&str>) -> Result<()> {
        let lease = format!("--force-with-lease=refs/heads/{branch}:{}", expected.unwrap_or(""));
        if let Some(l) = self.local.clone() {
            let (ours, oid, branch, expected) =
                (self.git_dir().to_path_buf(), oid.to_string(), branch.to_string(), expected.map(str::to_string));
            let stop = self.stop();
            return self.in_process(move || l.push(&ours, &oid, &branch, expected.as_deref(), stop)).await;
        }
        let spec = format!("{oid}:refs/heads/{branch}");
        self.git(&["push", "--porcelain", &lease, "--", &self.access.url, &spec], &format!("push `{branch}`")).await?;
        Ok(())
    }

    /// Fetch `src_ref` (a full ref: `refs/heads/…`, `refs/pull/N/head`; or a full commit id)
    /// into hone's repository; returns the commit. The objects are then copied
    /// into the work tree's repository in process (libgit2), under `local_ref`.
    pub async fn fetch(&self, ws: &Workspace, src_ref: &str, local_ref: &str) -> Result<String> {
        let sha = if let Some(l) = self.local.clone() {
            let (ours, b, stop) = (self.git_dir().to_path_buf(), src_ref.to_string(), self.stop());
            self.in_process(move || l.fetch(&ours, &b, "refs/hone/fetched", stop)).await?
        } else {
            let spec = format!("+{src_ref}:refs/hone/fetched");
            self.git(&["fetch", "--no-tags", "--", &self.access.url, &spec], &format!("fetch `{src_ref}`")).await?;
            self.git(&["rev-parse", "refs/hone/fetched"], "read the fetched commit").await?
        };
        let (from, to) = (self.git_dir().to_path_buf(), local_ref.to_string());
        ws.blocking(move |ws| ws.fetch_local(&from, "refs/hone/fetched", &to)).await?;
        Ok(sha)
    }

    /// True once the run's budget (at most `OP_LIMIT` from now) is spent or it is cancelled: stops
    /// an in-process copy to or from a local remote.
    fn stop(&self) -> local::Stop {
        let limit = self.bound.deadline.min(Instant::now() + OP_LIMIT).into_std();
        let cancel = self.bound.cancel.clone();
        Box::new(move || std::time::Instant::now() >= limit || cancel.is_cancelled())
    }

    /// Run `work` (libgit2, on a local remote) off the executor; cancellation and the run's
    /// budget return at once, and `stop` ends the work itself.
    async fn in_process<T: Send + 'static>(&self, work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
        let limit = self.bound.deadline.min(Instant::now() + OP_LIMIT);
        let task = tokio::time::timeout_at(limit, tokio::task::spawn_blocking(work));
        tokio::select! {
            r = task => match r {
                Ok(done) => done.map_err(|e| HoneError::new(Code::Internal, format!("the local remote's work failed: {e}")))?,
                Err(_) => Err(HoneError::new(Code::Git, "the local remote took too long and was given up")
                    .hint("check the local remote's path; the run's wall-time budget bounds it")),
            },
            () = self.bound.cancel.cancelled() => Err(HoneError::new(Code::Cancelled, "cancelled while copying to or from the local remote")),
        }
    }

    async fn git(&self, args: &[&str], what: &str) -> Result<String> {
        let mut c = tokio::process::Command::new("git");
        c.env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("GIT_DIR", self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(self.dir.path())
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some((k, v)) = self.access.git_env() {
            c.env(k, v);
        }
        run(c, what, &self.bound).await.map_err(|mut e| {
            if let (Code::Git, Some(why)) = (e.code, self.access.explain(&self.token_env)) {
                e.message = format!("{}; {why}", e.message);
            }
            e
        })
    }
}

/// A git command for hone's own clones (fleet workspaces): outside config, hooks, fsmonitor and
/// unknown protocols off, the token only as `access` allows (`credential.rs`).
pub fn hardened(dir: &Path, env: &crate::env::RunEnv, access: &Access) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("git");
    c.env_clear()
        .envs(passed(env))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.sshCommand=ssh"])
        .args(["-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always"])
        // The remote helpers that are programs, named even though `protocol.allow` covers them: a
        // clone's own config could allow them by name.
        .args(["-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never"])
        .args([
            "-c",
            "protocol.ssh.allow=always",
            "-c",
            "protocol.git.allow=always",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(access.git_config().iter().flat_map(|(k, v)| ["-c".to_string(), format!("{k}={v}")]));
    if let Some((k, v)) = access.git_env() {
        c.env(k, v);
    }
    c
}

/// The HTTP redirect statuses, as git reports a redirect it did not follow.
const REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];

/// Run a git process to its end, within `bound` (and at most `OP_LIMIT`).
pub async fn run(mut c: tokio::process::Command, what: &str, bound: &Bound) -> Result<String> {
    let limit = bound.deadline.min(Instant::now() + OP_LIMIT);
    if limit <= Instant::now() {
        return Err(HoneError::new(Code::Budget, format!("the wall-time budget ran out before git could {what}")));
    }
    let out = tokio::select! {
        r = tokio::time::timeout_at(limit, c.output()) => match r {
            Ok(o) => o.map_err(|e| HoneError::new(Code::Git, format!("cannot run git to {what}: {e}")))?,
            Err(_) => return Err(HoneError::new(Code::Git, format!("git took too long to {what} and was stopped"))
                .hint("check the remote's address and the network; the run's wall-time budget bounds it")),
        },
        () = bound.cancel.cancelled() => return Err(HoneError::new(Code::Cancelled, format!("cancelled while git was to {what}"))),
    };
    if !out.status.success() {
        let err = without_userinfo(String::from_utf8_lossy(&out.stderr).trim());
        let redirect = REDIRECTS.iter().any(|c| err.contains(&format!("returned error: {c}")));
        let why = if redirect {
            "; the server answered with a redirect, which hone does not follow (so that no token rides it elsewhere): point the remote at the URL it redirects to"
        } else {
            ""
        };
        return Err(HoneError::new(Code::Git, format!("git could not {what}: {err}{why}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    /// A git server that accepts the connection and never answers: a stalled push or fetch.
    fn stalled_server() -> (std::net::TcpListener, String) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/acme/app.git", l.local_addr().unwrap());
        (l, url)
    }

    fn ls_remote(url: &str) -> tokio::process::Command {
        let env = crate::env::RunEnv::from_vars(std::env::vars().filter(|(k, _)| k == "PATH").collect());
        let mut c = hardened(&std::env::temp_dir(), &env, &Access::decide(url, None, None));
        c.args(["ls-remote", url]);
        c
    }

    #[tokio::test]
    async fn a_stalled_remote_stops_at_the_runs_deadline() {
        let (_server, url) = stalled_server();
        let deadline = Instant::now() + Duration::from_millis(300);
        let e = run(ls_remote(&url), "list the remote's branches", &Bound::new(deadline, &CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::Git, "{e:?}");
        assert!(e.message.contains("took too long"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_stalled_remote_stops_at_cancellation() {
        let (_server, url) = stalled_server();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let bound = Bound::new(Instant::now() + Duration::from_secs(3600), &cancel);
        let (r, ()) = tokio::join!(run(ls_remote(&url), "push", &bound), async move { trigger.cancel() });
        assert_eq!(r.unwrap_err().code, Code::Cancelled);
        let out =
            run(ls_remote(&url), "push", &Bound::new(Instant::now(), &CancellationToken::new())).await.unwrap_err();
        assert_eq!(out.code, Code::Budget, "no budget left: git is not even started");
    }

    #[test]
    fn only_plain_transports_are_allowed() {
        for ok in [
            "https://github.com/a/b.git",
            "ssh://git@h/a/b",
            "git@github.com:a/b.git",
            "/srv/git/x.git",
            "../origin.git",
            "file:///x",
            "https://github.com/acme/-x.git",
            "git@h:a/-b",
        ] {
            assert_eq!(url_refusal(ok), None, "{ok}");
        }
        for bad in ["ext::sh -c touch% /tmp/pwned", "fd::17", "foo::bar", "origin", "file://h/x", "file:///a%20b"] {
            assert!(url_refusal(bad).is_some(), "{bad}");
        }
        // Git would take these for options (`--upload-pack=CMD`), or pass them to ssh as one.
        for dash in [
            "-uhelp",
            "--upload-pack=touch${IFS}x;x@h:p",
            "-oProxyCommand=x@h:p",
            "git@-oProxyCommand=x:p",
            "git@h:-p",
            "ssh://-oProxyCommand=x/p",
            "ssh://-u@h/p",
            "https://-h/p",
        ] {
            assert!(url_refusal(dash).is_some_and(|w| w.contains("begins with `-`")), "{dash}");
        }
    }
}
