//! The system calls the jail is made of, each with the step it belongs to in its error: mounts
//! (with recursive read-only through `mount_setattr`), `pivot_root`, namespaces, id maps,
//! capabilities and loopback.

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::ffi::CString;
use std::io::{Error, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An error that names the step that failed, of the kind its errno says (so that a refusal by
/// the host, `PermissionDenied`, stays one).
pub fn step(what: impl std::fmt::Display, e: impl std::fmt::Display + Errno) -> Error {
    let kind = e.errno().map_or(std::io::ErrorKind::Other, |n| Error::from_raw_os_error(n).kind());
    Error::new(kind, format!("{what}: {e}"))
}

/// The errno behind an error, where there is one.
pub trait Errno {
    fn errno(&self) -> Option<i32>;
}

impl Errno for Error {
    fn errno(&self) -> Option<i32> {
        self.raw_os_error().or_else(|| (self.kind() == std::io::ErrorKind::PermissionDenied).then_some(libc::EPERM))
    }
}

impl Errno for nix::errno::Errno {
    fn errno(&self) -> Option<i32> {
        Some(*self as i32)
    }
}

impl Errno for serde_json::Error {
    fn errno(&self) -> Option<i32> {
        None
    }
}

impl Errno for landlock::RulesetError {
    fn errno(&self) -> Option<i32> {
        None
    }
}

pub fn bind(src: &Path, dst: &Path, read_only: bool) -> Result<()> {
    mount(Some(src), dst, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
        .map_err(|e| step(format!("bind {} on {}", src.display(), dst.display()), e))?;
    if read_only { set_read_only(dst, true) } else { Ok(()) }
}

/// Make the mount at `dst` read-only (not the mounts beneath it).
pub fn remount_read_only(dst: &Path) -> Result<()> {
    set_read_only(dst, false)
}

/// Make the mount at `dst` and every mount beneath it read-only.
pub fn remount_tree_read_only(dst: &Path) -> Result<()> {
    set_read_only(dst, true)
}

/// Make the mount at `dst` (and with `recursive`, every mount beneath it) read-only, keeping
/// its other flags, which a user namespace may not clear.
fn set_read_only(dst: &Path, recursive: bool) -> Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let path = cstr(dst)?;
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: a NUL-terminated path and a correctly sized, initialised mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            if recursive { AT_RECURSIVE } else { 0 },
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        return Err(step(format!("make {} read-only", dst.display()), Error::last_os_error()));
    }
    Ok(())
}

pub fn tmpfs(dst: &Path, mode: &str, read_only: bool) -> Result<()> {
    let mut flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    if read_only {
        flags |= MsFlags::MS_RDONLY;
    }
    mount(Some("tmpfs"), dst, Some("tmpfs"), flags, Some(format!("mode={mode}").as_str()))
        .map_err(|e| step(format!("mount a tmpfs on {}", dst.display()), e))
}

/// An overlay of `lower` on `dst`, its writes going to `upper`. The paths (a directory's name can
/// be the repository's or a setup script's) are escaped into the options, byte for byte: a `,`
/// in one would start an option of the name's choosing (`upperdir=` elsewhere on the host) and a
/// `:` would add a lower layer (a host directory shown in the jail).
pub fn overlay(lower: &Path, upper: &Path, work: &Path, dst: &Path) -> Result<()> {
    let mut opts = Vec::new();
    for (key, path) in [("lowerdir=", lower), ("upperdir=", upper), ("workdir=", work)] {
        opts.extend_from_slice(key.as_bytes());
        opts.extend(overlay_escaped(path));
        opts.push(b',');
    }
    opts.extend_from_slice(b"userxattr");
    let opts = std::ffi::OsStr::from_bytes(&opts);
    mount(Some("overlay"), dst, Some("overlay"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV, Some(opts))
        .map_err(|e| step(format!("mount an overlay on {}", dst.display()), e))
}

/// `path` as an overlayfs option value: `\`, `,` and `:` escaped with a backslash (overlayfs
/// splits options at `,` and lower layers at `:`, and takes a backslash as an escape).
fn overlay_escaped(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for &b in path.as_os_str().as_bytes() {
        if matches!(b, b'\\' | b',' | b':') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

pub fn proc(dst: &Path) -> Result<()> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), dst, Some("proc"), flags, None::<&str>).map_err(|e| step("mount a fresh /proc", e))
}

pub fn make_private(root: &Path) -> Result<()> {
    mount(None::<&str>, root, None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| step("make the mounts private", e))
}

/// Enter `new_root` and detach the old one, so nothing outside the new root stays reachable.
pub fn enter_root(new_root: &Path) -> Result<()> {
    let old = new_root.join(".old-root");
    std::fs::create_dir_all(&old).map_err(|e| step("create the old root's mount point", e))?;
    nix::unistd::pivot_root(new_root, &old).map_err(|e| step("pivot_root", e))?;
    nix::unistd::chdir("/").map_err(|e| step("chdir /", e))?;
    umount2("/.old-root", MntFlags::MNT_DETACH).map_err(|e| step("detach the old root", e))?;
    std::fs::remove_dir("/.old-root").map_err(|e| step("remove the old root's mount point", e))
}

/// Map the caller's user and group into the new user namespace as themselves. Only the caller's
/// own ids can be mapped from inside (even by root); other owners show as `nobody`.
pub fn map_ids(uid: u32, gid: u32) -> Result<()> {
    let write = |p: &str, data: String| std::fs::write(p, data).map_err(|e| step(format!("write {p}"), e));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

/// Give up every capability for good: no new privileges, an empty bounding set, no ambient
/// set, securebits that keep root from regaining them on exec, and empty cap sets.
pub fn drop_capabilities() -> Result<()> {
    // SAFETY: prctl and capset calls with constant arguments and a correctly sized header/data.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(step("set no_new_privs", Error::last_os_error()));
        }
        for cap in 0..=63 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        // SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | its lock | KEEP_CAPS_LOCKED.
        let bits = 0x1 | 0x2 | 0x4 | 0x8 | 0x20;
        if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
            return Err(step("set securebits", Error::last_os_error()));
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let header = Header { version: 0x2008_0522, pid: 0 };
        let data =
            [Data { effective: 0, permitted: 0, inheritable: 0 }, Data { effective: 0, permitted: 0, inheritable: 0 }];
        if libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) != 0 {
            return Err(step("drop the capability sets", Error::last_os_error()));
        }
    }
    Ok(())
}

/// Keep `CAP_SYS_ADMIN` and `CAP_SETPCAP` (which the caller has in the jail's user namespace)
/// across the next exec, as ambient capabilities: the helper needs them to make the command's
/// namespaces, and gives them up before the command runs. For use between fork and exec.
pub fn keep_admin_across_exec() -> Result<()> {
    const CAP_SETPCAP: u32 = 8;
    const CAP_SYS_ADMIN: u32 = 21;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header { version: 0x2008_0522, pid: 0 };
    let mut data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capget/capset with a correctly sized header and data; prctl with constants.
    unsafe {
        if libc::syscall(libc::SYS_capget, &header as *const Header, data.as_mut_ptr()) != 0 {
            return Err(Error::last_os_error());
        }
        data[0].inheritable |= (1 << CAP_SETPCAP) | (1 << CAP_SYS_ADMIN);
        if libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) != 0 {
            return Err(Error::last_os_error());
        }
        for cap in [CAP_SETPCAP, CAP_SYS_ADMIN] {
            if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_RAISE, cap as libc::c_ulong, 0, 0) != 0 {
                return Err(Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Bring up `lo` in a new network namespace, so tests using 127.0.0.1 among themselves work.
pub fn loopback_up() -> Result<()> {
    // SAFETY: an ioctl on a fresh socket with a zeroed, correctly sized ifreq.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(step("open a socket for loopback", Error::last_os_error()));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS as _, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(sock, libc::SIOCSIFFLAGS as _, &mut req);
        }
        let err = Error::last_os_error();
        libc::close(sock);
        if rc < 0 { Err(step("bring up loopback", err)) } else { Ok(()) }
    }
}

pub fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| Error::other("a path contains a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_paths_cannot_start_an_option_or_a_layer() {
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/r/b,upperdir=/x:/y\\\xff"));
        assert_eq!(overlay_escaped(p), b"/r/b\\,upperdir=/x\\:/y\\\\\xff");
    }
}
