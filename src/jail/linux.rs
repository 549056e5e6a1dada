//! The Linux jail: new user, mount, IPC, PID and network namespaces plus Landlock. The run's
//! namespaces and file system view are made once by a holder process; each command joins them
//! with a mount and PID namespace of its own under hone's init, so nothing it starts outlives it. An MCP
//! server gets a jail of its own (`service`), made the same way from the run's plan.

use super::{StartError, holder, init, plan, sys};
use nix::sched::{CloneFlags, setns};
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the holder may take to build the view.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's jail: its namespaces, held open by descriptors.
#[derive(Debug)]
pub struct Jail {
    /// What the jail shows (kept to derive the jails of services from).
    plan: plan::Plan,
    user: OwnedFd,
    mnt: OwnedFd,
    ipc: OwnedFd,
    net: Option<OwnedFd>,
    pid: OwnedFd,
    /// The holder: the run's PID namespace lives as long as its first process.
    holder: std::sync::Mutex<std::process::Child>,
    /// Landlock's writable roots, as seen inside.
    writable: Vec<PathBuf>,
    /// Host directories the jail used (the staging mount point, overlay uppers): removed at drop.
    scratch: Vec<PathBuf>,
    /// A service's snapshot of the repository: kept while any service's jail shows it.
    snapshot: Option<std::sync::Arc<super::snapshot::Snapshot>>,
}

impl Jail {
    /// Build the jail for `plan`. The error says which step the kernel refused.
    pub fn start(plan: &plan::Plan, writable: Vec<PathBuf>) -> Result<Jail, StartError> {
        let fault = |e: &dyn std::fmt::Display| StartError::Fault(e.to_string());
        let text = serde_json::to_string(plan).map_err(|e| fault(&e))?;
        let dir = tempfile::Builder::new().prefix("hone-jail-").tempdir().map_err(|e| fault(&e))?;
        let plan_file = dir.path().join("plan.json");
        std::fs::write(&plan_file, text).map_err(|e| fault(&e))?;
        let mut child = std::process::Command::new(&plan.hone)
            .arg("__jail-holder")
            .arg(&plan_file)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(|e| fault(&format!("cannot start the jail's holder: {e}")))?;
        let result = handshake(&mut child).and_then(|pid| open_namespaces(pid, plan.isolate_network));
        let (user, mnt, ipc, net, pid) = match result {
            Ok(fds) => fds,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        let mut scratch = vec![plan.staging.clone()];
        scratch.extend(plan.upper.clone());
        scratch.extend(plan.hone_copy.clone());
        let holder = std::sync::Mutex::new(child);
        Ok(Jail { plan: plan.clone(), user, mnt, ipc, net, pid, holder, writable, scratch, snapshot: None })
    }

    /// A copy of the repository as it is now, for services (`snapshot::take`), in a new
    /// directory under `parent` (on the repository's file system, where hone keeps its scratch).
    pub fn snapshot(&self, parent: &Path, stop: &dyn Fn() -> bool) -> std::io::Result<super::snapshot::Snapshot> {
        let dir = tempfile::Builder::new().prefix("mcp-").tempdir_in(parent)?.keep();
        let (kept, mut omitted) = self.plan.snapshot_rules();
        // Never into itself, even where hone's directory is not masked.
        omitted.push(parent.to_path_buf());
        super::snapshot::take(&self.plan.repo, dir, &kept, &omitted, stop)
    }

    /// The jail of a service (an MCP server): its own namespaces, home overlay and temp dirs,
    /// `snapshot` in place of the repository (read-only), and the policy's writable trees
    /// masked, so that it shares nothing the run's commands can write or read.
    /// With `isolate`, it has a network namespace of its own (loopback only).
    pub fn service(
        &self,
        snapshot: &std::sync::Arc<super::snapshot::Snapshot>,
        isolate: bool,
    ) -> Result<Jail, StartError> {
        let staging = tempfile::Builder::new()
            .prefix("hone-root-")
            .tempdir()
            .map_err(|e| StartError::Fault(e.to_string()))?
            .keep();
        let mut plan = self.plan.for_service(Some((&snapshot.dir, &snapshot.placed)), staging);
        plan.isolate_network = isolate;
        let mut writable: Vec<PathBuf> = vec!["/tmp".into(), "/var/tmp".into(), "/dev".into()];
        writable.extend(plan.home.iter().cloned());
        let mut jail = Jail::start(&plan, writable)?;
        jail.snapshot = Some(snapshot.clone());
        Ok(jail)
    }

    /// A command that runs `program args` in the jail, in `cwd` (a path inside the repository):
    /// `__jail-exec WRITABLE... -- PROGRAM ARGS...`, entered into the jail's namespaces.
    pub fn command(&self, program: &str, args: &[&str], cwd: &Path) -> std::io::Result<tokio::process::Command> {
        let mut cmd = tokio::process::Command::new(plan::HONE_IN_JAIL);
        cmd.arg("__jail-exec").args(&self.writable).arg("--").arg(program).args(args);
        let cwd = sys::cstr(cwd)?;
        let (user, mnt, ipc, pid) =
            (self.user.as_raw_fd(), self.mnt.as_raw_fd(), self.ipc.as_raw_fd(), self.pid.as_raw_fd());
        let net = self.net.as_ref().map(AsRawFd::as_raw_fd);
        // SAFETY: the closure runs in the forked child before exec and only makes system calls
        // on descriptors and a C string prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // If hone dies (even by SIGKILL), the helper does, and with it the command.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                let fd = |raw| BorrowedFd::borrow_raw(raw);
                setns(fd(user), CloneFlags::CLONE_NEWUSER)?;
                setns(fd(mnt), CloneFlags::CLONE_NEWNS)?;
                setns(fd(ipc), CloneFlags::CLONE_NEWIPC)?;
                if let Some(n) = net {
                    setns(fd(n), CloneFlags::CLONE_NEWNET)?;
                }
                // The helper's children are born in the run's PID namespace.
                setns(fd(pid), CloneFlags::CLONE_NEWPID)?;
                sys::keep_admin_across_exec()?;
                if libc::chdir(cwd.as_ptr()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// A socket listening on 127.0.0.1 in the jail's network namespace (`listen`), for hone's
    /// proxy to serve from outside. A jail with the host's network has none to give.
    pub fn listener(&self) -> std::io::Result<std::net::TcpListener> {
        let net = self.net.as_ref().ok_or_else(|| std::io::Error::other("the jail has the host's network"))?;
        super::listen::listener(&self.plan.hone, self.user.as_fd(), net.as_fd())
    }

    /// The commands' temp dir: the jail's own `/tmp`.
    pub fn tmp(&self) -> &Path {
        Path::new("/tmp")
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        if let Ok(mut h) = self.holder.lock() {
            drop(h.stdin.take());
            let _ = h.kill();
            let _ = h.wait();
        }
        for d in &self.scratch {
            remove_scratch(d);
        }
    }
}

/// Remove a scratch tree, including overlay work dirs the kernel left without permissions.
pub fn remove_scratch(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return;
    }
    for e in ignore::WalkBuilder::new(dir).standard_filters(false).build().flatten() {
        if e.file_type().is_some_and(|t| t.is_dir()) {
            let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o700));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Read the holder's `child PID` and `ready` lines (in either order): the run's first process.
/// An `error refused: …` line is the host refusing a step; `error: …` is anything else.
fn handshake(child: &mut std::process::Child) -> Result<u32, StartError> {
    let fault = |m: &str| StartError::Fault(m.to_string());
    let out = child.stdout.take().ok_or_else(|| fault("the jail's holder has no output"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line.trim().to_string()).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let (mut pid, mut ready) = (None, false);
    while pid.is_none() || !ready {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l == "ready" => ready = true,
            Ok(l) if l.starts_with("child ") => pid = l["child ".len()..].parse::<u32>().ok(),
            Ok(l) => match l.strip_prefix(holder::REFUSED) {
                Some(m) => return Err(StartError::Refused(m.to_string())),
                None => return Err(fault(l.trim_start_matches("error: "))),
            },
            Err(_) => return Err(fault("the jail's holder gave no answer")),
        }
    }
    pid.ok_or_else(|| fault("the jail's holder named no process"))
}

type Namespaces = (OwnedFd, OwnedFd, OwnedFd, Option<OwnedFd>, OwnedFd);

fn open_namespaces(pid: u32, net: bool) -> Result<Namespaces, StartError> {
    let open = |kind: &str| -> Result<OwnedFd, StartError> {
        std::fs::File::open(format!("/proc/{pid}/ns/{kind}"))
            .map(OwnedFd::from)
            .map_err(|e| StartError::Fault(format!("cannot hold the jail's {kind} namespace: {e}")))
    };
    Ok((open("user")?, open("mnt")?, open("ipc")?, if net { Some(open("net")?) } else { None }, open("pid")?))
}

/// `hone __jail-*` entry points, run before anything else in `main` (single-threaded).
pub fn dispatch(args: &[String]) -> Option<i32> {
    match args.get(1).map(String::as_str) {
        Some("__jail-holder") => Some(holder::main(&args[2..])),
        Some("__jail-exec") => Some(init::main(&args[2..])),
        Some("__jail-listen") => Some(super::listen::main()),
        _ => None,
    }
}
