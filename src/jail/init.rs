//! One command in the jail (`hone __jail-exec WRITABLE... -- PROGRAM ARGS...`), started inside
//! the run's namespaces with a new mount and PID namespace of its own, whose PID 1 is hone's
//! init and the command its child: when the command ends, or the helper is killed, every
//! process it started ends too;
//! mounts a `/proc` that shows only the jail's processes; applies Landlock; gives up every
//! capability; and reports the command's exit status as its own.

use super::sys;
use std::ffi::CString;
use std::path::PathBuf;

/// The exit status for a command killed by signal `sig`, as shells report it.
fn signalled(sig: i32) -> i32 {
    128 + sig
}

pub fn main(args: &[String]) -> i32 {
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("hone: __jail-exec: usage: WRITABLE... -- PROGRAM ARGS...");
        return 126;
    };
    let writable: Vec<PathBuf> = args[..split].iter().map(PathBuf::from).collect();
    let argv: Vec<CString> = match args[split + 1..].iter().map(|a| CString::new(a.as_str())).collect() {
        Ok(v) => v,
        Err(_) => {
            eprintln!("hone: __jail-exec: an argument contains a NUL byte");
            return 126;
        }
    };
    if argv.is_empty() {
        eprintln!("hone: __jail-exec: no program given");
        return 126;
    }
    // The first child is born in the run's PID namespace; it makes the command's own namespace
    // and its first process is the command.
    spawn(|| {
        if let Err(e) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS | nix::sched::CloneFlags::CLONE_NEWPID)
        {
            eprintln!("hone: jail: cannot make the command's namespaces: {e}");
            return 126;
        }
        spawn(|| init(&writable, &argv))
    })
}

/// PID 1 of the command's namespace: hone's own code, which the command cannot change. It sets
/// the namespace up, starts the command as its child, reaps every process the command leaves
/// behind, and returns the command's status. Because it keeps its parent-death signal and never
/// leaves its process group, killing the helper (a timeout, a cancel) kills it, and the kernel
/// then ends everything in the namespace: a command that calls `setsid()` and clears its own
/// parent-death signal still cannot outlive its timeout.
fn init(writable: &[PathBuf], argv: &[CString]) -> i32 {
    let setup = sys::proc(std::path::Path::new("/proc"))
        .and_then(|()| super::landlock::restrict(writable))
        .and_then(|()| sys::drop_capabilities());
    if let Err(e) = setup {
        eprintln!("hone: jail: {e}");
        return 126;
    }
    // SAFETY: this process is single-threaded (forked from the single-threaded helper).
    match unsafe { nix::unistd::fork() } {
        Err(e) => {
            eprintln!("hone: jail: cannot start the command: {e}");
            126
        }
        Ok(nix::unistd::ForkResult::Child) => {
            let e = exec(argv);
            eprintln!("hone: jail: {e}");
            // SAFETY: leave the child without running the parent's exit handlers.
            unsafe { libc::_exit(126) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => reap_until(child),
    }
}

/// Fork: the child runs `f` (dying with its parent) and exits with its result; the parent
/// waits and returns the child's status.
fn spawn(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: this process is single-threaded (it was just exec'd and started no threads).
    match unsafe { nix::unistd::fork() } {
        Err(e) => {
            eprintln!("hone: jail: cannot start the command: {e}");
            126
        }
        Ok(nix::unistd::ForkResult::Child) => {
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
            let code = f();
            // SAFETY: leave the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => wait(child),
    }
}

/// Run the command; returns only on failure.
fn exec(argv: &[CString]) -> std::io::Error {
    match nix::unistd::execvp(&argv[0], argv) {
        Err(nix::errno::Errno::ENOENT) => {
            std::io::Error::other(format!("{}: command not found", argv[0].to_string_lossy()))
        }
        Err(e) => std::io::Error::other(format!("cannot run {}: {e}", argv[0].to_string_lossy())),
    }
}

/// As the namespace's init: reap every child (the command's orphans are re-parented here) until
/// `command` itself ends; its status (128 + signal when killed). Returning ends the namespace.
fn reap_until(command: nix::unistd::Pid) -> i32 {
    use nix::sys::wait::{WaitStatus, waitpid};
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == command => return code,
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == command => return signalled(sig as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                eprintln!("hone: jail: lost the command: {e}");
                return 126;
            }
        }
    }
}

/// Wait for the command and return its status (128 + signal when killed).
fn wait(child: nix::unistd::Pid) -> i32 {
    use nix::sys::wait::{WaitStatus, waitpid};
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, sig, _)) => return signalled(sig as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                eprintln!("hone: jail: lost the command: {e}");
                return 126;
            }
        }
    }
}
