//! The holder: a process (`hone __jail-holder PLAN`) that makes the run's user, mount, IPC,
//! network and PID namespaces; its child, PID 1 of the run, assembles the file system view of
//! the plan on a fresh root (with a `/proc` of the run's PID namespace), enters it, says `ready`,
//! and waits. Every command of the run joins these namespaces. Each jail (the run's, setup's,
//! each MCP server's) has a holder of its own, so none shares a home overlay, a temp dir, an
//! IPC namespace, a PID namespace or (without network) loopback with another.

use super::plan::{DEVICES, ETC_MASKS, HONE_IN_JAIL, Plan, SYSTEM_DIRS};
use super::sys::{self, step};
use nix::sched::{CloneFlags, unshare};
use std::io::{BufRead, ErrorKind, Result, Write};
use std::path::{Path, PathBuf};

/// How the holder starts an error line when the host refused a step (rather than hone failing).
pub const REFUSED: &str = "error refused: ";

/// The line that reports `e`: a refusal when the host would not make the namespaces at all, or
/// refused a later step (EPERM, EACCES: a container's seccomp, AppArmor).
fn error_line(e: &std::io::Error, namespaces: bool) -> String {
    if namespaces || e.kind() == ErrorKind::PermissionDenied { format!("{REFUSED}{e}") } else { format!("error: {e}") }
}

/// `hone __jail-holder PLAN_FILE`: prints `child PID` (the run's PID 1, as hone sees it) and
/// `ready` (or `error: …`), then holds the namespaces until stdin closes. Runs single-threaded,
/// before anything else in `main`.
pub fn main(args: &[String]) -> i32 {
    let plan = args.first().ok_or_else(|| std::io::Error::other("no plan file given")).and_then(|p| {
        let text = std::fs::read_to_string(p).map_err(|e| step("read the plan", e))?;
        serde_json::from_str::<Plan>(&text).map_err(|e| step("parse the plan", e))
    });
    let plan = match plan {
        Ok(p) => p,
        Err(e) => return say(&error_line(&e, false), 1),
    };
    if let Err(e) = namespaces(&plan) {
        return say(&error_line(&e, true), 1);
    }
    // SAFETY: single-threaded: nothing else runs in this process.
    match unsafe { nix::unistd::fork() } {
        Err(e) => say(&format!("error: start the run's first process: {e}"), 1),
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            say(&format!("child {child}"), 0);
            let _ = nix::sys::wait::waitpid(child, None);
            0
        }
        Ok(nix::unistd::ForkResult::Child) => {
            // PID 1 of the run: if the holder goes, so does the run.
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
            let code = match build(&plan) {
                Ok(()) => {
                    say("ready", 0);
                    // Hold the namespaces until hone closes our stdin (or dies).
                    let mut line = String::new();
                    while std::io::stdin().lock().read_line(&mut line).is_ok_and(|n| n > 0) {
                        line.clear();
                    }
                    0
                }
                Err(e) => say(&error_line(&e, false), 1),
            };
            // SAFETY: end the child without the parent's exit handlers.
            unsafe { libc::_exit(code) }
        }
    }
}

// The holder's stdout is its pipe to hone (the handshake), not a log a CI runner reads.
#[allow(clippy::disallowed_methods)]
fn say(line: &str, code: i32) -> i32 {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    code
}

/// The run's user, mount, IPC (System V and POSIX message queues), PID (for the child) and,
/// without network, network namespaces.
fn namespaces(plan: &Plan) -> Result<()> {
    let mut flags =
        CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWPID;
    if plan.isolate_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| step("create the user, mount, IPC, PID and network namespaces", e))?;
    sys::map_ids(plan.uid, plan.gid)
}

fn build(plan: &Plan) -> Result<()> {
    sys::make_private(Path::new("/"))?;
    let root = &plan.staging;
    sys::tmpfs(root, "0755", false)?;
    let at = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    base(root, &at)?;
    home(plan, &at)?;
    for d in &plan.ro_dirs {
        show_read_only(d, &at)?;
    }
    repo(plan, &at)?;
    git_configs(plan, &at)?;
    for w in &plan.writable {
        if w.exists() {
            sys::bind(w, &dir_at(&at(w))?, false)?;
        }
    }
    // Last, so that no bind above (a toolchain place, a PATH dir, the policy's trees) covers one.
    masks(plan, &at)?;
    if plan.read_only_repo {
        sys::remount_tree_read_only(&at(&plan.repo))?;
    }
    sys::bind(&plan.hone, &at(Path::new(HONE_IN_JAIL)), true)?;
    // A /proc of the run's PID namespace (this process is its PID 1): hone is not in it.
    sys::proc(&at(Path::new("/proc")))?;
    sys::enter_root(root)?;
    // The root itself (a tmpfs) takes no writes: only the mounts made writable above do.
    sys::remount_read_only(Path::new("/"))?;
    if plan.isolate_network {
        sys::loopback_up()?;
    }
    Ok(())
}

fn dir_at(p: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(p).map_err(|e| step(format!("create {}", p.display()), e))?;
    Ok(p.to_path_buf())
}

fn file_at(p: &Path) -> Result<PathBuf> {
    if let Some(parent) = p.parent() {
        dir_at(parent)?;
    }
    if !p.exists() {
        std::fs::write(p, b"").map_err(|e| step(format!("create {}", p.display()), e))?;
    }
    Ok(p.to_path_buf())
}

/// The system trees, `/run` with hone's own files, a minimal `/dev`, private temp dirs, `/proc`.
fn base(root: &Path, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    let run = dir_at(&at(Path::new("/run")))?;
    sys::tmpfs(&run, "0755", false)?;
    file_at(&at(Path::new(HONE_IN_JAIL)))?;
    let empty_file = file_at(&run.join("hone/empty"))?;
    dir_at(&run.join("hone/empty.d"))?;
    std::fs::set_permissions(&empty_file, std::os::unix::fs::PermissionsExt::from_mode(0o444))
        .map_err(|e| step("make the empty file read-only", e))?;
    for d in SYSTEM_DIRS.iter().map(Path::new) {
        show_read_only(d, at)?;
    }
    for f in ETC_MASKS.iter().map(Path::new).filter(|f| f.is_file()) {
        mask(f, &at(f), root)?;
    }
    let dev = dir_at(&at(Path::new("/dev")))?;
    sys::tmpfs(&dev, "0755", false)?;
    for d in DEVICES {
        let host = Path::new("/dev").join(d);
        if host.exists() {
            sys::bind(&host, &file_at(&dev.join(d))?, false)?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(name)).map_err(|e| step(format!("link /dev/{name}"), e))?;
    }
    sys::tmpfs(&dir_at(&dev.join("shm"))?, "1777", false)?;
    // Nothing new can appear in /dev: no device a command could write, not even a fake one.
    sys::remount_read_only(&dev)?;
    for t in ["/tmp", "/var/tmp"] {
        sys::tmpfs(&dir_at(&at(Path::new(t)))?, "1777", false)?;
    }
    let var_run = at(Path::new("/var/run"));
    if !var_run.exists() {
        std::os::unix::fs::symlink("/run", &var_run).map_err(|e| step("link /var/run", e))?;
    }
    dir_at(&at(Path::new("/proc")))?;
    Ok(())
}

/// Show the directory `d` read-only at its own path (a link as the same link).
fn show_read_only(d: &Path, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    match std::fs::symlink_metadata(d) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(d).map_err(|e| step(format!("read the link {}", d.display()), e))?;
            let link = at(d);
            if std::fs::symlink_metadata(&link).is_ok() {
                return Ok(()); // already in the view (a link inside a shown tree)
            }
            if let Some(parent) = link.parent() {
                dir_at(parent)?;
            }
            std::os::unix::fs::symlink(&target, &link).map_err(|e| step(format!("link {}", d.display()), e))
        }
        Ok(m) if m.is_dir() => sys::bind(d, &dir_at(&at(d))?, true),
        _ => Ok(()),
    }
}

/// Show `target` (seen at `inside`) empty and read-only: an empty file, or an empty directory.
/// A symlink is masked where it leads (the link itself then leads to the mask).
fn mask(target: &Path, inside: &Path, root: &Path) -> Result<()> {
    if std::fs::symlink_metadata(inside).is_err() {
        return Ok(()); // not in the jail's view at all
    }
    let meta = std::fs::symlink_metadata(target).map_err(|e| step(format!("look at {}", target.display()), e))?;
    if meta.file_type().is_symlink() {
        return match target.canonicalize() {
            Ok(real) if real.starts_with("/") => {
                let seen = root.join(real.strip_prefix("/").unwrap_or(&real));
                if std::fs::symlink_metadata(&seen).is_ok() { mask(&real, &seen, root) } else { Ok(()) }
            }
            _ => Ok(()),
        };
    }
    if meta.is_dir() {
        sys::bind(&root.join("run/hone/empty.d"), inside, true)
    } else {
        // A file, socket or FIFO: an empty read-only file stands in for it.
        sys::bind(&root.join("run/hone/empty"), inside, true)
    }
}

/// The run's own home at the home's path: a fresh, empty, writable tmpfs, with nothing of the
/// host's home in it but the toolchain places, each through an overlay whose writes stay in the
/// jail (read-only where the kernel refuses the overlay). A credential anywhere else in the
/// host's home is not in the view. The known credential places are masked as a second line,
/// where a toolchain place shows one.
fn home(plan: &Plan, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    if let Some(home) = plan.home.as_ref().filter(|h| h.is_absolute() && h.as_path() != Path::new("/")) {
        sys::tmpfs(&dir_at(&at(home))?, "0700", false)?;
    }
    let scratch = at(Path::new("/run/hone/tools"));
    for (i, place) in plan.toolchains.iter().enumerate() {
        let inside = dir_at(&at(place))?;
        let (upper, work) = (dir_at(&scratch.join(format!("u{i}")))?, dir_at(&scratch.join(format!("w{i}")))?);
        if sys::overlay(place, &upper, &work, &inside).is_err() {
            sys::bind(place, &inside, true)?;
        }
    }
    Ok(())
}

/// The git config files the plan shows in place of the repository's (`gitconfig`): written to a
/// tmpfs of their own, made read-only, and bound over the originals, read-only.
fn git_configs(plan: &Plan, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    if plan.git_configs.is_empty() {
        return Ok(());
    }
    let dir = dir_at(&at(Path::new("/run/hone/git")))?;
    sys::tmpfs(&dir, "0755", false)?;
    for (i, (_, text)) in plan.git_configs.iter().enumerate() {
        std::fs::write(dir.join(i.to_string()), text).map_err(|e| step("write the jail's git config", e))?;
    }
    sys::remount_read_only(&dir)?;
    for (i, (target, _)) in plan.git_configs.iter().enumerate() {
        let inside = at(target);
        if std::fs::symlink_metadata(&inside).is_ok_and(|m| m.is_file()) {
            sys::bind(&dir.join(i.to_string()), &inside, true)?;
        }
    }
    Ok(())
}

/// The repository read-write (or its snapshot, read-only), its git dirs read-only, ignored
/// entries that existed before the run protected.
fn repo(plan: &Plan, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    let shown = plan.snapshot.as_deref().unwrap_or(&plan.repo);
    sys::bind(shown, &dir_at(&at(&plan.repo))?, false)?;
    for (i, d) in plan.ignored_dirs.iter().enumerate() {
        let overlaid = plan.upper.as_ref().is_some_and(|up| {
            let (u, w) = (up.join(format!("u{i}")), up.join(format!("w{i}")));
            std::fs::create_dir_all(&u).is_ok()
                && std::fs::create_dir_all(&w).is_ok()
                && sys::overlay(d, &u, &w, &at(d)).is_ok()
        });
        if !overlaid {
            sys::bind(d, &at(d), true)?;
        }
    }
    // Ignored files, and directories past the overlay limit: read-only (never through a symlink).
    for f in plan.ignored_files.iter().filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file() || m.is_dir()))
    {
        sys::bind(f, &at(f), true)?;
    }
    for g in &plan.git_dirs {
        if std::fs::symlink_metadata(g).is_ok_and(|m| m.is_dir() || m.is_file()) {
            let inside = at(g);
            if g.is_dir() {
                dir_at(&inside)?;
            } else {
                file_at(&inside)?;
            }
            sys::bind(g, &inside, true)?;
        }
    }
    Ok(())
}

/// The masks: the plan's (read-denied paths, hidden credentials, hone's own directories), and
/// the home's known credential places wherever a toolchain place or the policy shows one.
fn masks(plan: &Plan, at: &dyn Fn(&Path) -> PathBuf) -> Result<()> {
    let root = at(Path::new("/"));
    let home = plan.home.iter().flat_map(|h| super::plan::HOME_MASKS.iter().map(move |m| h.join(m)));
    for m in plan.masks.iter().cloned().chain(home) {
        if std::fs::symlink_metadata(&m).is_ok() {
            mask(&m, &at(&m), &root)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_by_the_host_is_told_apart_from_a_fault() {
        let denied = sys::step("mount a fresh /proc", nix::errno::Errno::EPERM);
        assert!(error_line(&denied, false).starts_with(REFUSED), "{}", error_line(&denied, false));
        let missing = sys::step("create /x", std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(error_line(&missing, false), "error: create /x: No such file or directory (os error 2)");
        // Making the namespaces fails only where the host forbids them, whatever the errno.
        let limit = sys::step("create the namespaces", nix::errno::Errno::ENOSPC);
        assert!(error_line(&limit, true).starts_with(REFUSED));
        let parse = sys::step("parse the plan", serde_json::from_str::<Plan>("{").unwrap_err());
        assert!(error_line(&parse, false).starts_with("error: parse the plan"));
    }
}
