//! A listening socket on the loopback of a jail's network namespace, for hone's proxy outside
//! it: a helper (`hone __jail-listen`) joins the jail's user and network namespaces, listens on
//! 127.0.0.1, hands the socket to hone over a Unix socket (SCM_RIGHTS) and exits. The socket
//! stays in the jail's namespace: only the jail's processes can connect to it, and hone serves
//! it from outside, with its own network.

use nix::sched::{CloneFlags, setns};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use std::io::{Error, IoSlice, IoSliceMut, Result};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

/// The descriptor the helper finds its end of the Unix socket on.
const CHANNEL: RawFd = 3;
/// How long the helper may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A listener in the namespaces `user` and `net`, made by running `hone __jail-listen`.
pub fn listener(hone: &Path, user: BorrowedFd<'_>, net: BorrowedFd<'_>) -> Result<std::net::TcpListener> {
    let (ours, theirs) = UnixStream::pair()?;
    ours.set_read_timeout(Some(TIMEOUT))?;
    let (user, net, channel) = (user.as_raw_fd(), net.as_raw_fd(), theirs.as_raw_fd());
    let mut cmd = std::process::Command::new(hone);
    cmd.arg("__jail-listen").env_clear().stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    // SAFETY: runs in the forked child before exec; only system calls on descriptors opened
    // before the fork.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            setns(BorrowedFd::borrow_raw(user), CloneFlags::CLONE_NEWUSER)?;
            setns(BorrowedFd::borrow_raw(net), CloneFlags::CLONE_NEWNET)?;
            // dup2 clears close-on-exec on the copy: the helper inherits exactly this one.
            if libc::dup2(channel, CHANNEL) < 0 {
                return Err(Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(theirs);
    let got = receive(&ours);
    let _ = child.kill();
    let _ = child.wait();
    let fd = got?;
    Ok(std::net::TcpListener::from(fd))
}

fn receive(channel: &UnixStream) -> Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(channel.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(|e| Error::other(format!("the jail's listener was not handed over: {e}")))?;
    for c in msg.cmsgs().map_err(Error::other)? {
        if let ControlMessageOwned::ScmRights(fds) = c
            && let Some(&fd) = fds.first()
        {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    Err(Error::other("the jail's listener helper sent no socket"))
}

/// `hone __jail-listen`: in the jail's namespaces already (see `listener`); listen on a free
/// port of 127.0.0.1 and send the socket down descriptor 3.
pub fn main() -> i32 {
    let sent = std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| {
        let fds = [l.as_raw_fd()];
        sendmsg::<()>(CHANNEL, &[IoSlice::new(b"L")], &[ControlMessage::ScmRights(&fds)], MsgFlags::empty(), None)
            .map_err(Error::from)
    });
    i32::from(sent.is_err())
}
