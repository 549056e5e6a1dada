//! The jail every command the model influences runs in (its commands, the verify commands,
//! setup), and the jails of the job's stdio MCP servers (one each, sharing nothing the commands
//! can write: `Jail::service`). What a command sees is one plan for every platform (`plan`); how
//! it is enforced is the platform's: on Linux, user, mount, IPC, PID and network namespaces plus
//! Landlock (`linux`), a server seeing a snapshot of the repository (`snapshot`); on macOS, a
//! Seatbelt profile (`seatbelt`, written by the pure `sbpl`). See docs/security.md.

pub mod gitconfig;
pub mod plan;
pub mod sbpl;
pub mod toolchains;

#[cfg(target_os = "linux")]
mod holder;
#[cfg(target_os = "linux")]
mod init;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod listen;
#[cfg(target_os = "linux")]
pub mod snapshot;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
pub use linux::{Jail, dispatch};

#[cfg(target_os = "macos")]
mod seatbelt;
#[cfg(target_os = "macos")]
pub use seatbelt::{Jail, dispatch};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!("hone runs on Linux and macOS: its jail has no implementation for this platform");

/// Why a jail could not be made.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The machine refuses what the jail needs (user namespaces, mounts, the sandbox): a setting
    /// of the host, with a remedy (`sandbox::remedy`).
    #[error("{0}")]
    Refused(String),
    /// Anything else: a fault in hone.
    #[error("{0}")]
    Fault(String),
}

/// The Landlock ABI the kernel offers (`None` where there is none, or no Landlock at all).
pub fn landlock_abi() -> Option<i32> {
    #[cfg(target_os = "linux")]
    return Some(landlock::abi()).filter(|a| *a > 0);
    #[cfg(not(target_os = "linux"))]
    None
}
