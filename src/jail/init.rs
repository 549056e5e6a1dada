//! One command in the jail (`hone __jail-exec WRITABLE... -- PROGRAM ARGS...`), started inside
//! the run's namespaces with a new mount and PID namespace of its own. It forks the command as
//! PID 1 of that namespace, so that when the command ends every process it started ends too;
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
        spawn(|| {
            let e = run_as_init(&writable, &argv);
            eprintln!("hone: jail: {e}");
            126
        })
    })
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

/// PID 1 of the command's namespace: set up and exec; returns only on failure.
fn run_as_init(writable: &[PathBuf], argv: &[CString]) -> std::io::Error {
    if let Err(e) = sys::proc(std::path::Path::new("/proc")) {
        return e;
    }
    if let Err(e) = super::landlock::restrict(writable) {
        return e;
    }
    if let Err(e) = sys::drop_capabilities() {
        return e;
    }
    match nix::unistd::execvp(&argv[0], argv) {
        Err(nix::errno::Errno::ENOENT) => {
            std::io::Error::other(format!("{}: command not found", argv[0].to_string_lossy()))
        }
        Err(e) => std::io::Error::other(format!("cannot run {}: {e}", argv[0].to_string_lossy())),
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
