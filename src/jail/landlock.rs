//! Landlock on top of the mounts: writes only beneath the writable roots, no connecting to
//! abstract unix sockets or signalling processes outside the jail. Best effort: the ABI the
//! kernel offers is used, and reported.

use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules};
use std::path::PathBuf;

/// The newest ABI hone asks for.
const ABI_WANTED: ABI = ABI::V6;

/// The Landlock ABI the kernel supports (0 when none).
pub fn abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if v < 0 { 0 } else { v as i32 }
}

/// Restrict this process (and what it runs) to writing beneath `writable`.
pub fn restrict(writable: &[PathBuf]) -> std::io::Result<()> {
    if abi() == 0 {
        return Ok(());
    }
    let existing: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
    let write = AccessFs::from_write(ABI_WANTED);
    Ruleset::default()
        .handle_access(write)
        .and_then(|r| r.scope(Scope::from_all(ABI_WANTED)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(existing, write)))
        .and_then(|r| r.restrict_self())
        .map(|_| ())
        .map_err(|e| super::sys::step("apply Landlock", e))
}
