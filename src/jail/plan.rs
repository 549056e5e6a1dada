//! What a command sees: the jail's file system view, built once per run. Plain data, serialized
//! to the holder process; deciding it (which paths, which masks) is pure and tested by examples.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// System trees a command needs to run the project's tools, bound read-only when they exist.
pub const SYSTEM_DIRS: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/snap", "/sys"];

/// Files under `/etc` that hold secrets of the host; an empty file stands in for each.
pub const ETC_MASKS: &[&str] = &["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers"];

/// Places in the home directory that hold credentials or sockets of host processes.
pub const HOME_MASKS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".gitconfig",
    ".npmrc",
    ".pypirc",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".config/git/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".vscode-server",
];

/// The devices a command may use; nothing else of the host's `/dev` is visible.
pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Where the hone binary is bound inside the jail, to start each command.
pub const HONE_IN_JAIL: &str = "/run/hone/hone";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Plan {
    /// The repository root: bound read-write at its own path.
    pub repo: PathBuf,
    /// The git directory (and a worktree's common dir): bound read-only.
    pub git_dirs: Vec<PathBuf>,
    /// Read-only system trees (and directories on `PATH` outside them).
    pub ro_dirs: Vec<PathBuf>,
    /// The home directory: visible through an overlay whose writes are private to the run.
    pub home: Option<PathBuf>,
    /// Paths shown empty: credentials, read-denied files, hone's own directories.
    pub masks: Vec<PathBuf>,
    /// Ignored files and directories that existed before the run: files read-only; directories
    /// overlaid so writes land in `upper` and never reach the work tree.
    pub ignored_files: Vec<PathBuf>,
    pub ignored_dirs: Vec<PathBuf>,
    /// Where overlay upper and work directories for `ignored_dirs` go (on the repo's file system).
    pub upper: Option<PathBuf>,
    /// Extra read-write trees (`paths.sandbox_writable`).
    pub writable: Vec<PathBuf>,
    /// A network namespace with only loopback.
    pub isolate_network: bool,
    /// The hone binary, bound at `HONE_IN_JAIL`: the running one (see `sandbox::running_binary`).
    pub hone: PathBuf,
    /// A private copy of the running binary, made when its path no longer holds it; removed
    /// with the jail.
    pub hone_copy: Option<PathBuf>,
    /// An empty directory on the host where the new root is assembled.
    pub staging: PathBuf,
    pub uid: u32,
    pub gid: u32,
}

/// Whether `p` is `base` or lies beneath it.
pub fn under(p: &Path, base: &Path) -> bool {
    p.starts_with(base)
}

/// Directories on `PATH` not already inside a system tree, the home or the repo.
pub fn path_dirs(path_var: &str, covered: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for d in std::env::split_paths(path_var) {
        if !d.is_absolute() || covered.iter().any(|c| under(&d, c)) || out.iter().any(|o| under(&d, o)) {
            continue;
        }
        // A PATH entry under /tmp, /run or /dev would expose host temp files or sockets.
        if ["/tmp", "/var/tmp", "/run", "/var/run", "/dev", "/proc"].iter().any(|b| under(&d, Path::new(b))) {
            continue;
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_dirs_outside_the_system_trees_are_added_once_and_temp_dirs_never() {
        let covered = vec![PathBuf::from("/usr"), PathBuf::from("/root")];
        let got =
            path_dirs("/usr/bin:/root/.cargo/bin:/opt2/tool/bin:/opt2/tool/bin/x:/tmp/evil:rel:/run/user/1", &covered);
        assert_eq!(got, [PathBuf::from("/opt2/tool/bin")]);
    }
}
