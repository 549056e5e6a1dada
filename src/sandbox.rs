//! Confinement for commands (Linux): no network (a new network namespace with only loopback),
//! and Landlock limiting writes to the repo and temp dirs. Probed at intake so that hone never
//! runs unsandboxed without saying so.

use serde::Serialize;
use std::path::PathBuf;
use tokio::process::Command;

/// How commands are confined.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    /// Run in a network namespace of their own (loopback only, not shared with the host).
    pub isolate_network: bool,
    /// With Landlock: the only trees commands may write beneath. `None`: no write confinement.
    pub writable: Option<Vec<PathBuf>>,
    /// One network namespace for all of a run's commands, made once (see `shared_netns`): making a
    /// namespace per command costs the kernel tens of milliseconds each.
    pub netns: Option<std::sync::Arc<SharedNetns>>,
}

/// A network namespace kept alive by open descriptors (its maker has exited).
#[derive(Debug)]
pub struct SharedNetns {
    net: std::os::fd::OwnedFd,
    /// The user namespace it belongs to, when hone is not root.
    user: Option<std::os::fd::OwnedFd>,
}

/// Make a network namespace (loopback up) that later commands join with `setns`.
pub async fn shared_netns() -> Result<SharedNetns, String> {
    let mut cmd = Command::new("sleep");
    cmd.arg("600")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    apply(&mut cmd, &Sandbox { isolate_network: true, writable: None, netns: None }).map_err(|e| e.to_string())?;
    let mut child = cmd.spawn().map_err(|e| format!("cannot start the namespace holder: {e}"))?;
    let pid = child.id().ok_or("the namespace holder exited at once")?;
    let open = |kind: &str| std::fs::File::open(format!("/proc/{pid}/ns/{kind}")).map(std::os::fd::OwnedFd::from);
    // The namespace is ready once the holder is inside it (its ns link differs from ours).
    let ours = std::fs::read_link("/proc/self/ns/net").map_err(|e| e.to_string())?;
    for _ in 0..1000 {
        match std::fs::read_link(format!("/proc/{pid}/ns/net")) {
            Ok(l) if l != ours => break,
            _ => tokio::task::yield_now().await,
        }
    }
    let net = open("net").map_err(|e| format!("cannot open the namespace: {e}"))?;
    let user = if nix::unistd::getuid().is_root() { None } else { Some(open("user").map_err(|e| e.to_string())?) };
    let _ = child.kill().await;
    Ok(SharedNetns { net, user })
}

/// What the machine provides, as reported in `report.json`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct SandboxReport {
    pub enabled: bool,
    pub network_isolated: bool,
    /// The Landlock ABI version enforced, or null when unavailable.
    pub landlock_abi: Option<i32>,
    pub writable: Vec<String>,
}

/// The Landlock ABI the kernel supports (0 when none).
pub fn landlock_abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if v < 0 { 0 } else { v as i32 }
}

/// The probe's answer, once per process: a fleet would otherwise pay for a network namespace
/// per repository just to ask.
static NETNS_PROBE: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();

/// Check (once per process) that a new network namespace can be created here.
pub async fn probe_netns() -> Result<(), String> {
    NETNS_PROBE.get_or_init(probe_netns_now).await.clone()
}

/// Run `true` in a new network namespace.
async fn probe_netns_now() -> Result<(), String> {
    let mut cmd = Command::new("true");
    apply(&mut cmd, &Sandbox { isolate_network: true, writable: None, netns: None }).map_err(|e| e.to_string())?;
    match cmd.status().await {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("a test command in a new network namespace exited with {s}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Configure `cmd` to start inside the sandbox.
pub fn apply(cmd: &mut Command, sb: &Sandbox) -> std::io::Result<()> {
    if !sb.isolate_network && sb.writable.is_none() {
        return Ok(());
    }
    let shared = sb
        .netns
        .as_ref()
        .map(|n| (std::os::fd::AsRawFd::as_raw_fd(&n.net), n.user.as_ref().map(std::os::fd::AsRawFd::as_raw_fd)));
    let mut ruleset = match &sb.writable {
        Some(roots) if landlock_abi() > 0 => Some(build_ruleset(roots).map_err(std::io::Error::other)?),
        _ => None,
    };
    let isolate = sb.isolate_network;
    // Prepared before fork: the child only makes system calls.
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let root = uid.is_root();
    let uid_map = format!("0 {uid} 1\n").into_bytes();
    let gid_map = format!("0 {gid} 1\n").into_bytes();
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (unshare, writes to /proc/self, ioctl, landlock); it allocates nothing new.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((net, user)) = shared {
                // Join the run's namespace: user namespace first when not root.
                if let Some(u) = user
                    && libc::setns(u, libc::CLONE_NEWUSER) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::setns(net, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if isolate {
                use nix::sched::{CloneFlags, unshare};
                if root {
                    unshare(CloneFlags::CLONE_NEWNET)?;
                } else {
                    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)?;
                    write_proc(c"/proc/self/setgroups", b"deny")?;
                    write_proc(c"/proc/self/uid_map", &uid_map)?;
                    write_proc(c"/proc/self/gid_map", &gid_map)?;
                }
                loopback_up()?;
            }
            if let Some(rs) = ruleset.take() {
                rs.restrict_self().map_err(std::io::Error::other)?;
            }
            Ok(())
        });
    }
    Ok(())
}

fn build_ruleset(roots: &[PathBuf]) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    use landlock::{ABI, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules};
    let abi = ABI::V5;
    let existing: Vec<&PathBuf> = roots.iter().filter(|p| p.exists()).collect();
    Ruleset::default()
        .handle_access(AccessFs::from_write(abi))?
        .create()?
        .add_rules(path_beneath_rules(existing, AccessFs::from_write(abi)))
}

fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: plain open/write/close on a NUL-terminated path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
    }
}

/// Bring up `lo` in the new namespace, so that tests using 127.0.0.1 among themselves still work.
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: an ioctl on a fresh socket with a zeroed, correctly sized ifreq.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(sock, libc::SIOCSIFFLAGS, &mut req);
        }
        let err = std::io::Error::last_os_error();
        libc::close(sock);
        if rc < 0 { Err(err) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec;
    use tokio_util::sync::CancellationToken;

    fn env() -> Vec<(String, String)> {
        vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())]
    }

    #[tokio::test]
    async fn a_runs_commands_share_one_isolated_namespace_with_loopback() {
        let dir = tempfile::tempdir().unwrap();
        let shared = std::sync::Arc::new(shared_netns().await.expect("a shared namespace"));
        let sb = Sandbox { isolate_network: true, writable: None, netns: Some(shared) };
        let run = |cmd: &'static str| {
            let (dir, sb) = (dir.path().to_path_buf(), sb.clone());
            async move {
                exec::run(cmd, &dir, &env(), std::time::Duration::from_secs(20), 10_000, &CancellationToken::new(), &sb)
                    .await
                    .unwrap()
                    .output
            }
        };
        let a = run("readlink /proc/self/ns/net").await;
        let b = run("readlink /proc/self/ns/net").await;
        let host = std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string();
        assert_eq!(a, b, "both commands are in the run's namespace");
        assert_ne!(a.trim(), host, "and it is not the host's");
        // /proc/net reflects the reader's own namespace (sysfs would show the host's).
        let devs = run("cat /proc/net/dev").await;
        assert!(devs.contains("lo:"), "{devs}");
        assert!(!devs.contains("eth0:"), "no host interface: {devs}");
    }

    #[tokio::test]
    async fn landlock_confines_writes_to_the_given_roots() {
        if landlock_abi() == 0 {
            eprintln!("landlock is not available on this kernel; nothing to test");
            return;
        }
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir_in(std::env::var("HOME").unwrap_or("/root".into())).unwrap();
        let sb = Sandbox { isolate_network: false, writable: Some(vec![repo.path().to_path_buf()]), netns: None };
        let target = outside.path().join("x");
        let cmd = format!("echo in > inside.txt; echo out > {}", target.display());
        let o = exec::run(
            &cmd,
            repo.path(),
            &env(),
            std::time::Duration::from_secs(20),
            10_000,
            &CancellationToken::new(),
            &sb,
        )
        .await
        .unwrap();
        assert!(repo.path().join("inside.txt").exists(), "{}", o.output);
        assert!(!target.exists(), "a write outside the roots got through: {}", o.output);
        assert!(o.output.contains("Permission denied"), "{}", o.output);
    }
}
