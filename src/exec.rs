//! Runs one shell command: its own process group, a scrubbed environment, a timeout that kills
//! the whole group, cancellation, and output capped to its head and tail.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a finished command left behind.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CmdOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// stdout and stderr interleaved as they arrived, capped to head and tail.
    pub output: String,
    pub total_bytes: usize,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// The shell used for commands: bash when present (for `set -o pipefail` and friends), else sh.
pub fn shell() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        if std::env::split_paths(&path).any(|d| d.join("bash").is_file()) { "bash" } else { "sh" }
    })
}

/// Run `cmd` through the shell in `cwd`, with exactly the environment `env`.
pub async fn run(
    cmd: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cap: usize,
    cancel: &CancellationToken,
    sandbox: &crate::sandbox::Sandbox,
) -> std::io::Result<CmdOutput> {
    let start = Instant::now();
    let mut command = crate::sandbox::command(sandbox, shell(), &["-c", cmd], cwd)?;
    own_session(&mut command, env, sandbox);
    // The connections it makes through the jail's proxy are its own, and end with it.
    let network = sandbox.egress.as_ref().map(|p| p.command());
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    // If this future is dropped (wall-time budget, cancellation), still kill the whole group.
    let _guard = GroupGuard(pgid);
    let capture = Arc::new(Mutex::new(Capture::new(cap)));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(out, capture.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, capture.clone())));
    }
    let (mut timed_out, mut cancelled) = (false, false);
    let status = tokio::select! {
        s = child.wait() => Some(s?),
        () = tokio::time::sleep(timeout) => { timed_out = true; None }
        () = cancel.cancelled() => { cancelled = true; None }
    };
    // Kill the whole group: on timeout or cancel, and also after a normal exit, so that
    // background children cannot outlive the command or hold its pipes open.
    kill_group(pgid);
    let status = match status {
        Some(s) => s,
        None => child.wait().await?,
    };
    // Its processes are gone: what it opened through the proxy is cut, and recorded, now.
    if let Some(n) = network {
        n.end().await;
    }
    for r in readers {
        // A process that escaped the group (setsid) could hold a pipe open: do not wait on it forever.
        if tokio::time::timeout(Duration::from_secs(2), r).await.is_err() {
            tracing::warn!("a command's output pipe stayed open after it exited; output may be incomplete");
        }
    }
    let (output, total_bytes) = capture.lock().map(|c| (c.render(), c.total)).unwrap_or_default();
    Ok(CmdOutput {
        exit_code: if timed_out || cancelled { None } else { status.code() },
        timed_out,
        cancelled,
        duration: start.elapsed(),
        output,
        total_bytes,
    })
}

/// Give `command` exactly the environment `env` (with the jail's own temp dir) and a session of
/// its own.
fn own_session(command: &mut tokio::process::Command, env: &[(String, String)], sandbox: &crate::sandbox::Sandbox) {
    // A jailed command's temp dir is the run's own (a host TMPDIR would be out of its reach),
    // whether or not the policy passes TMPDIR.
    let tmp = sandbox.jail.as_ref().map(|j| j.tmp().to_string_lossy().into_owned());
    // With hone's proxy, its variables, and no other proxy's.
    let proxy = sandbox.proxy_env();
    let env = env
        .iter()
        .filter(|(k, _)| tmp.is_none() || k != "TMPDIR")
        .filter(|(k, _)| proxy.is_empty() || !crate::egress::Proxy::VARS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()));
    command.env_clear().envs(env).envs(proxy);
    if let Some(t) = &tmp {
        command.env("TMPDIR", t);
    }
    // A session of its own (and so a process group, killed as one): no controlling terminal, so
    // nothing the command runs can read from or type into the terminal hone runs in.
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        command.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
}

/// A long-lived process (an MCP server) started like a command, in its jail when there is one
/// (`sandbox::services`: its own, the repository read-only), with its stdin and stdout piped to
/// hone and the tail of its stderr kept. Its whole process group is killed when this is dropped.
pub struct Service {
    pub child: tokio::process::Child,
    pub stderr: Arc<Mutex<Capture>>,
    /// The task copying stderr into `stderr`, until the pipe closes.
    pumping: Option<tokio::task::JoinHandle<()>>,
    _group: GroupGuard,
}

impl Service {
    pub fn spawn(
        program: &str,
        args: &[&str],
        cwd: &Path,
        env: &[(String, String)],
        sandbox: &crate::sandbox::Sandbox,
    ) -> std::io::Result<Service> {
        let mut command = crate::sandbox::command(sandbox, program, args, cwd)?;
        own_session(&mut command, env, sandbox);
        // Unjailed (`sandbox: off`), it still dies with hone (in the jail, the jail sees to it).
        #[cfg(target_os = "linux")]
        if sandbox.jail.is_none() {
            // SAFETY: prctl is async-signal-safe and touches no memory.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                    Ok(())
                });
            }
        }
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let group = GroupGuard(child.id().map(|id| Pid::from_raw(id as i32)));
        let stderr = Arc::new(Mutex::new(Capture::new(4096)));
        let pumping = child.stderr.take().map(|err| tokio::spawn(pump(err, stderr.clone())));
        Ok(Service { child, stderr, pumping, _group: group })
    }

    /// Wait, at most `within`, for the service to exit and for what it wrote to stderr to be read
    /// to the end: a server that failed has said why before its tail is taken.
    pub async fn settle(&mut self, within: std::time::Duration) {
        let until = tokio::time::Instant::now() + within;
        let _ = tokio::time::timeout_at(until, self.child.wait()).await;
        if let Some(task) = self.pumping.take() {
            let _ = tokio::time::timeout_at(until, task).await;
        }
    }

    /// The last lines of what it wrote to stderr.
    pub fn stderr_tail(&self, lines: usize) -> String {
        last_lines(&self.stderr, lines)
    }
}

/// The last `n` lines a capture holds.
pub fn last_lines(capture: &Mutex<Capture>, n: usize) -> String {
    let text = capture.lock().map(|c| c.render()).unwrap_or_default();
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(n)..].join("\n")
}

struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

pub fn kill_group(pgid: Option<Pid>) {
    if let Some(p) = pgid {
        // ESRCH (no such group) is the normal case once everything has exited.
        let _ = killpg(p, Signal::SIGKILL);
    }
}

async fn pump(mut r: impl tokio::io::AsyncRead + Unpin, cap: Arc<Mutex<Capture>>) {
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut c) = cap.lock() {
                    c.push(&buf[..n]);
                }
            }
        }
    }
}

/// Keeps the first and last `cap / 2` bytes of a stream and counts the rest.
pub struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl Capture {
    pub fn new(cap: usize) -> Self {
        let half = (cap / 2).max(1);
        Capture { half, head: Vec::new(), tail: VecDeque::new(), total: 0 }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        if self.head.len() < self.half {
            let take = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        while self.tail.len() > self.half {
            self.tail.pop_front();
        }
    }

    pub fn render(&self) -> String {
        self.render_with("narrow the command (| head, | tail, grep) to see them")
    }

    /// Render head and tail, with `hint` saying how to see what was cut.
    pub fn render_with(&self, hint: &str) -> String {
        let kept = self.head.len() + self.tail.len();
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            out.push_str(&format!(
                "\n[... {} bytes omitted from the middle of {} bytes of output; {hint} ...]\n",
                self.total - kept,
                self.total
            ));
        }
        let (a, b) = self.tail.as_slices();
        out.push_str(&String::from_utf8_lossy(&[a, b].concat()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        c.push(b"abcdefghij");
        let r = c.render();
        assert!(r.starts_with("01234\n[... 10 bytes omitted"), "{r}");
        assert!(r.ends_with("fghij"), "{r}");
        let mut small = Capture::new(100);
        small.push(b"short");
        assert_eq!(small.render(), "short");
    }

    fn env() -> Vec<(String, String)> {
        vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())]
    }

    /// `cmd` in a temp dir, unjailed, with a 10 s timeout and 1000 bytes of output.
    async fn quick(cmd: &str) -> CmdOutput {
        let dir = tempfile::tempdir().unwrap();
        let (timeout, cancel) = (Duration::from_secs(10), CancellationToken::new());
        run(cmd, dir.path(), &env(), timeout, 1000, &cancel, &Default::default()).await.unwrap()
    }

    /// The command has a session of its own: it cannot reach hone's controlling terminal.
    #[tokio::test]
    async fn a_command_runs_in_a_session_of_its_own() {
        let ours = nix::unistd::getsid(None).unwrap().as_raw();
        let o = quick("exec python3 -c 'import os; print(os.getsid(0), os.getpid())'").await;
        let nums: Vec<i32> = o.output.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        assert_eq!(nums.len(), 2, "{}", o.output);
        assert_ne!(nums[0], ours, "the command shares hone's session");
        assert_eq!(nums[0], nums[1], "the command leads its own session");
    }

    #[tokio::test]
    async fn exit_code_and_output() {
        let o = quick("echo out; echo err >&2; exit 3").await;
        assert_eq!(o.exit_code, Some(3));
        assert!(o.output.contains("out") && o.output.contains("err"));
        assert!(!o.success());
    }

    #[tokio::test]
    async fn environment_is_exactly_what_was_given() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: test-only; no other thread reads this variable.
        unsafe { std::env::set_var("HONE_TEST_LEAK", "leaked") };
        let o = run(
            "echo \"[$HONE_TEST_LEAK]\"",
            dir.path(),
            &env(),
            Duration::from_secs(10),
            1000,
            &CancellationToken::new(),
            &Default::default(),
        )
        .await
        .unwrap();
        assert_eq!(o.output.trim(), "[]");
    }

    #[tokio::test]
    async fn background_children_do_not_hold_the_command_open() {
        let dir = tempfile::tempdir().unwrap();
        let o = run(
            "sleep 600 & echo started",
            dir.path(),
            &env(),
            Duration::from_secs(60),
            1000,
            &CancellationToken::new(),
            &Default::default(),
        )
        .await
        .unwrap();
        assert_eq!(o.exit_code, Some(0));
        assert!(o.duration < Duration::from_secs(30), "{:?}", o.duration);
    }

    #[tokio::test]
    async fn cancellation_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let o = run("sleep 600", dir.path(), &env(), Duration::from_secs(600), 1000, &cancel, &Default::default())
            .await
            .unwrap();
        assert!(o.cancelled && !o.success());
    }

    /// A service that exits before what it (or a child) wrote to stderr is read: `settle` waits
    /// for the pipe to close, so the tail says why.
    #[tokio::test]
    async fn a_settled_service_has_said_everything_it_wrote_to_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let script = "(sleep 0.3; echo the-reason >&2) & exit 3";
        let sandbox = Default::default();
        let mut s = Service::spawn("sh", &["-c", script], dir.path(), &env(), &sandbox).unwrap();
        s.settle(Duration::from_secs(20)).await;
        assert_eq!(s.stderr_tail(4), "the-reason");
    }
}
