//! Landlock on top of the mounts: writes only beneath the writable roots (FIFOs only in the temp
//! dirs), no connecting to abstract unix sockets or signalling processes outside the jail. Best effort: the ABI the
//! kernel offers is used, and reported.

use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules};
use std::path::{Path, PathBuf};

/// The newest ABI hone asks for.
const ABI_WANTED: ABI = ABI::V6;

/// The Landlock ABI the kernel supports (0 when none).
pub fn abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if v < 0 { 0 } else { v as i32 }
}

/// Restrict this process (and what it runs) to writing beneath `writable`, and to making FIFOs
/// only in the temp dirs (see [`fifo_ok`]).
pub fn restrict(writable: &[PathBuf]) -> std::io::Result<()> {
    if abi() == 0 {
        return Ok(());
    }
    let existing: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
    let write = AccessFs::from_write(ABI_WANTED);
    let (fifo, no_fifo): (Vec<&PathBuf>, Vec<&PathBuf>) = existing.iter().partition(|p| fifo_ok(p, &existing));
    Ruleset::default()
        .handle_access(write)
        .and_then(|r| r.scope(Scope::from_all(ABI_WANTED)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(fifo, write)))
        .and_then(|r| r.add_rules(path_beneath_rules(no_fifo, write & !AccessFs::MakeFifo)))
        .and_then(|r| r.restrict_self())
        .map(|_| ())
        .map_err(|e| super::sys::step("apply Landlock", e))
}

/// Whether commands may make FIFOs beneath the writable root `p`: only in a temp dir, and only
/// when no other writable root (the repository) lies beneath it. hone's own walks of the
/// repository (git's status and diffs, the search tools, the repo map) open every `.gitignore`
/// and `.gitattributes` they meet to read it, and a FIFO there would block them for good.
fn fifo_ok(p: &Path, all: &[&PathBuf]) -> bool {
    let temp = p == Path::new("/tmp") || p == Path::new("/var/tmp");
    temp && !all.iter().any(|o| o.as_path() != p && o.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_only_in_temp_dirs_that_hold_no_repository() {
        let (tmp, var, repo, home) =
            (PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), PathBuf::from("/w/repo"), PathBuf::from("/home/u"));
        let all = [&repo, &tmp, &var, &home];
        assert!(fifo_ok(&tmp, &all) && fifo_ok(&var, &all));
        assert!(!fifo_ok(&repo, &all) && !fifo_ok(&home, &all));
        let under_tmp = PathBuf::from("/tmp/x/repo");
        let all = [&under_tmp, &tmp, &var];
        assert!(!fifo_ok(&tmp, &all), "a FIFO in /tmp could be made in the repository beneath it");
        assert!(fifo_ok(&var, &all));
    }
}
