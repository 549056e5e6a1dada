//! What a command sees: the jail's file system view, built once per run. Plain data, serialized
//! to the holder process; deciding it (which paths, which masks) is pure and tested by examples.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// System trees a command needs to run the project's tools, bound read-only when they exist.
pub const SYSTEM_DIRS: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/snap", "/sys"];

/// Files under `/etc` that hold secrets of the host; an empty file stands in for each.
pub const ETC_MASKS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    // npm's global config (`npm config set --global`) for a Node in /usr or /usr/local.
    "/etc/npmrc",
    "/usr/etc/npmrc",
    "/usr/local/etc/npmrc",
];

/// Places in the home directory that hold credentials or sockets of host processes. The jail's
/// home holds none of the host's home but its toolchain places, so these are a second line: masked
/// where a toolchain place or the policy shows them after all (and on macOS, whose jail cannot
/// build a home of its own).
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
    /// The repository root: bound read-write at its own path (read-only with `read_only_repo`).
    pub repo: PathBuf,
    /// What is shown at `repo`'s path instead of the repository itself: a copy hone made when a
    /// service (an MCP server) started (`snapshot`), so that nothing the model's commands write
    /// later reaches it. Linux only.
    #[serde(default)]
    pub snapshot: Option<PathBuf>,
    /// The repository (or its snapshot) and every mount beneath it are read-only: a service has
    /// no business writing there.
    #[serde(default)]
    pub read_only_repo: bool,
    /// The git directory (and a worktree's common dir): bound read-only.
    pub git_dirs: Vec<PathBuf>,
    /// Read-only trees beyond the system's: directories on `PATH` outside the other places, and
    /// the policy's `paths.sandbox_readable`.
    pub ro_dirs: Vec<PathBuf>,
    /// The home directory's path: a fresh, empty, writable home of the run's own is there, with
    /// nothing of the host's home in it but `toolchains`.
    pub home: Option<PathBuf>,
    /// Toolchain places (`toolchains::candidates` that exist): each through an overlay whose
    /// writes are private to the run (read-only where the kernel refuses the overlay).
    #[serde(default)]
    pub toolchains: Vec<PathBuf>,
    /// The git config files the jail shows in place of the repository's (`gitconfig`): where
    /// each goes, and its text.
    #[serde(default)]
    pub git_configs: Vec<(PathBuf, String)>,
    /// Of `ro_dirs`, those the policy names (`paths.sandbox_readable`), for the report.
    #[serde(default)]
    pub readable: Vec<PathBuf>,
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

impl Plan {
    /// The entries of the repository that are never copied into a service's snapshot but bound
    /// from the host (commands cannot write them: the git dirs, and the ignored and setup-made
    /// entries, which their jail protects), and those left out of it altogether (read-denied
    /// paths, hone's own directories).
    pub fn snapshot_rules(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let inside = |v: &[PathBuf]| v.iter().filter(|p| under(p, &self.repo) && *p != &self.repo).cloned().collect();
        let mut kept: Vec<PathBuf> = inside(&self.git_dirs);
        kept.extend(inside(&self.ignored_dirs));
        kept.extend(inside(&self.ignored_files));
        (kept, inside(&self.masks))
    }

    /// The plan of a service (an MCP server) started beside this run's commands, sharing
    /// nothing they can write: the home and temp dirs are its own (each jail has its own), the
    /// repository is read-only (on Linux, `snapshot` with the protected entries in `placed` bound
    /// from the host; elsewhere the repository itself), and the policy's writable trees, which
    /// the commands write, are masked.
    pub fn for_service(&self, snapshot: Option<(&Path, &[PathBuf])>, staging: PathBuf) -> Plan {
        let shown = |p: &PathBuf| snapshot.is_none_or(|(_, placed)| !under(p, &self.repo) || placed.contains(p));
        let mut masks = self.masks.clone();
        masks.extend(self.writable.iter().cloned());
        let mut ignored_files: Vec<PathBuf> = self.ignored_files.iter().filter(|p| shown(p)).cloned().collect();
        let mut ignored_dirs: Vec<PathBuf> = self.ignored_dirs.iter().filter(|p| shown(p)).cloned().collect();
        if snapshot.is_some() {
            // Read-only binds, not overlays: a service writes nothing there.
            ignored_files.append(&mut ignored_dirs);
        }
        Plan {
            repo: self.repo.clone(),
            snapshot: snapshot.map(|(dir, _)| dir.to_path_buf()),
            read_only_repo: true,
            git_dirs: self.git_dirs.iter().filter(|p| shown(p)).cloned().collect(),
            ro_dirs: self.ro_dirs.clone(),
            home: self.home.clone(),
            toolchains: self.toolchains.clone(),
            git_configs: self.git_configs.clone(),
            readable: self.readable.clone(),
            masks,
            ignored_files,
            ignored_dirs,
            upper: None,
            writable: vec![],
            isolate_network: self.isolate_network,
            hone: self.hone.clone(),
            hone_copy: None,
            staging,
            uid: self.uid,
            gid: self.gid,
        }
    }
}

/// One place in a jail's view, as `report.json` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shown {
    pub path: String,
    /// `read-only`; `read-write`; `private-writes` (an overlay: the host's copy is never
    /// written, a command's writes last as long as the run's jail).
    pub access: String,
    /// Why the view holds it: `system`, `toolchain`, `path` (a directory on `PATH`), `policy`
    /// (`paths.sandbox_readable` or `sandbox_writable`), `repository`, `git`, `home` (the run's
    /// own, empty), `temp`.
    pub why: String,
}

impl Plan {
    /// What the view holds (the system trees that exist on this host, then the rest in the
    /// order they are mounted); `writable` are Landlock's writable roots.
    pub fn shown(&self, writable: &[PathBuf]) -> Vec<Shown> {
        let one = |p: &Path, access: &str, why: &str| Shown {
            path: p.display().to_string(),
            access: access.to_string(),
            why: why.to_string(),
        };
        let mut out: Vec<Shown> =
            SYSTEM_DIRS.iter().map(Path::new).filter(|d| d.exists()).map(|d| one(d, "read-only", "system")).collect();
        let temp = ["/tmp", "/var/tmp"].map(PathBuf::from);
        out.extend(temp.iter().map(|t| one(t, "read-write", "temp")));
        out.extend(self.home.iter().map(|h| one(h, "read-write", "home")));
        out.extend(self.toolchains.iter().map(|t| one(t, "private-writes", "toolchain")));
        for d in &self.ro_dirs {
            out.push(one(d, "read-only", if self.readable.contains(d) { "policy" } else { "path" }));
        }
        let repo_access = if self.read_only_repo { "read-only" } else { "read-write" };
        out.push(one(&self.repo, repo_access, "repository"));
        out.extend(self.git_dirs.iter().map(|g| one(g, "read-only", "git")));
        out.extend(self.writable.iter().filter(|w| writable.contains(w)).map(|w| one(w, "read-write", "policy")));
        out
    }
}

/// Whether `p` is `base` or lies beneath it.
pub fn under(p: &Path, base: &Path) -> bool {
    p.starts_with(base)
}

/// Directories on `PATH` not already inside a system tree, a toolchain place or the repo; never
/// the home itself or a directory above it (that would show the whole home).
pub fn path_dirs(path_var: &str, covered: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for d in std::env::split_paths(path_var) {
        if !d.is_absolute() || covered.iter().any(|c| under(&d, c)) || out.iter().any(|o| under(&d, o)) {
            continue;
        }
        // Never the home itself, `/`, or (outside the home) a temp, device or runtime tree, which
        // would expose host temp files or sockets: the rule of toolchain places.
        if !super::toolchains::fits(&d, home) || home.is_some_and(|h| h == d) {
            continue;
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_plan() -> Plan {
        Plan {
            repo: "/w/repo".into(),
            git_dirs: vec!["/w/repo/.git".into(), "/w/main/.git".into()],
            home: Some("/home/u".into()),
            masks: vec!["/w/repo/.env".into(), "/w/repo/.hone".into(), "/home/u/.ssh".into()],
            ignored_files: vec!["/w/repo/local.cfg".into()],
            ignored_dirs: vec!["/w/repo/node_modules".into(), "/w/repo/gone".into()],
            upper: Some("/w/repo/.hone/jail/run".into()),
            writable: vec!["/home/u/.cache/pip".into()],
            isolate_network: true,
            hone_copy: Some("/tmp/hone-exe".into()),
            ..Plan::default()
        }
    }

    #[test]
    fn a_snapshot_binds_what_commands_cannot_write_and_leaves_out_what_is_masked() {
        let (kept, omitted) = run_plan().snapshot_rules();
        let p = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(kept, p(&["/w/repo/.git", "/w/repo/node_modules", "/w/repo/gone", "/w/repo/local.cfg"]));
        assert_eq!(omitted, p(&["/w/repo/.env", "/w/repo/.hone"]), "not the home's masks");
    }

    #[test]
    fn a_service_shares_nothing_writable_with_the_commands() {
        let run = run_plan();
        let placed = [PathBuf::from("/w/repo/.git"), "/w/repo/node_modules".into(), "/w/repo/local.cfg".into()];
        let s = run.for_service(Some((Path::new("/w/repo/.hone/jail/mcp-1"), &placed)), "/tmp/stage".into());
        assert_eq!(s.snapshot.as_deref(), Some(Path::new("/w/repo/.hone/jail/mcp-1")));
        assert!(s.read_only_repo && s.writable.is_empty() && s.upper.is_none() && s.hone_copy.is_none());
        assert!(s.masks.contains(&"/home/u/.cache/pip".into()), "the commands' writable tree is masked");
        assert_eq!(s.ignored_dirs, Vec::<PathBuf>::new(), "no overlay: read-only binds");
        let bound: Vec<PathBuf> = vec!["/w/repo/local.cfg".into(), "/w/repo/node_modules".into()];
        assert_eq!(s.ignored_files, bound, "only what has a placeholder (`gone` has none)");
        assert_eq!(s.git_dirs, run.git_dirs, "the git dirs, in the snapshot and outside it");
        assert_eq!(
            (s.repo, s.home, s.isolate_network, s.staging),
            (run.repo.clone(), run.home.clone(), true, "/tmp/stage".into())
        );
        // Without a snapshot (macOS), every protected entry stays as it was.
        let m = run.for_service(None, PathBuf::new());
        assert!(m.snapshot.is_none() && m.read_only_repo && m.writable.is_empty());
        assert_eq!((m.ignored_dirs.len(), m.ignored_files.len()), (2, 1));
    }

    /// The report names what the view holds and why, and nothing of the home but its own.
    #[test]
    fn the_view_is_reported_by_what_each_place_is_for() {
        let mut plan = run_plan();
        plan.toolchains = vec!["/home/u/.rustup".into()];
        plan.ro_dirs = vec!["/home/u/bin".into(), "/srv/jdk".into()];
        plan.readable = vec!["/srv/jdk".into()];
        let shown = plan.shown(&["/home/u/.cache/pip".into()]);
        let find = |p: &str| shown.iter().find(|s| s.path == p).map(|s| (s.access.as_str(), s.why.as_str()));
        assert_eq!(find("/home/u"), Some(("read-write", "home")));
        assert_eq!(find("/home/u/.rustup"), Some(("private-writes", "toolchain")));
        assert_eq!(find("/home/u/bin"), Some(("read-only", "path")));
        assert_eq!(find("/srv/jdk"), Some(("read-only", "policy")));
        assert_eq!(find("/w/repo"), Some(("read-write", "repository")));
        assert_eq!(find("/w/repo/.git"), Some(("read-only", "git")));
        assert_eq!(find("/home/u/.cache/pip"), Some(("read-write", "policy")));
        assert_eq!(find("/tmp"), Some(("read-write", "temp")));
        assert!(find("/home/u/.ssh").is_none());
    }

    #[test]
    fn path_dirs_outside_the_system_trees_are_added_once_and_temp_dirs_never() {
        let covered = vec![PathBuf::from("/usr"), PathBuf::from("/root/.cargo/bin")];
        let path =
            "/usr/bin:/root/.cargo/bin:/opt2/tool/bin:/opt2/tool/bin/x:/tmp/evil:rel:/run/user/1:/root:/:/root/bin";
        let got = path_dirs(path, &covered, Some(Path::new("/root")));
        assert_eq!(got, [PathBuf::from("/opt2/tool/bin"), PathBuf::from("/root/bin")]);
    }
}
