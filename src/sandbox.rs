//! From the policy to the jail: what a run's commands see (the plan: the repository read-write
//! with `.git` read-only and read-denied paths masked, the system read-only, private temp dirs)
//! and how a command is started in it. Started at intake, so hone never runs commands unjailed
//! without saying so; `sandbox: off` is the only way out, and it is reported.

mod error;
mod start;
pub mod tree;
pub use start::{Site, command_env, start};

pub use error::Error;

use crate::egress::Ledger;
use crate::jail::{Jail, plan::Plan};
use crate::policy::Policy;
use crate::policy::network::Egress;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How commands are confined: in the run's jail, or (`sandbox: off`) not at all; and, when the
/// policy lists hosts, the proxy that is the jail's one way out.
#[derive(Clone, Default)]
pub struct Sandbox {
    pub jail: Option<Arc<Jail>>,
    pub egress: Option<Arc<crate::egress::Proxy>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("jail", &self.jail)
            .field("proxy", &self.egress.as_ref().map(|p| p.port()))
            .finish()
    }
}

impl Sandbox {
    /// `jail`, with a proxy for `purpose` serving a listener in it when `egress` lists hosts
    /// (the jail was made without network). Run where blocking is allowed, in a Tokio runtime.
    pub fn jailed(jail: Jail, egress: &Egress, purpose: &str, ledger: &Ledger) -> Result<Sandbox, Error> {
        let proxy = match egress.rules() {
            None => None,
            Some(rules) => {
                let listener = jail.listener().map_err(Error::ProxySetup)?;
                let proxy =
                    crate::egress::Proxy::start(listener, purpose, rules, ledger.clone()).map_err(Error::ProxyStart)?;
                Some(Arc::new(proxy))
            }
        };
        Ok(Sandbox { jail: Some(Arc::new(jail)), egress: proxy })
    }

    /// The variables that send a command's connections through the proxy (none without one).
    pub fn proxy_env(&self) -> Vec<(String, String)> {
        self.egress.as_ref().map(|p| p.env()).unwrap_or_default()
    }
}

/// What the run's confinement was, as reported in `report.json`.
#[derive(Debug, Clone, Serialize, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct SandboxReport {
    pub enabled: bool,
    pub network_isolated: bool,
    /// The Landlock ABI the kernel offers (null when none).
    pub landlock_abi: Option<i32>,
    /// Where commands may write (inside the jail).
    pub writable: Vec<String>,
    /// Paths shown empty to commands (read-denied files, credentials, hone's own directory).
    pub masked: usize,
    /// Ignored entries that existed before the run, protected from commands' writes.
    pub protected_ignored: usize,
    /// What the view holds, built from what commands need (docs/security.md, "What a command
    /// sees"): nothing of the host outside it is reachable.
    #[serde(default)]
    pub view: Vec<crate::jail::plan::Shown>,
}

/// A command running `program args` in `cwd`, in the jail when there is one.
pub fn command(sb: &Sandbox, program: &str, args: &[&str], cwd: &Path) -> std::io::Result<tokio::process::Command> {
    match &sb.jail {
        Some(j) => j.command(program, args, cwd),
        None => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).current_dir(cwd);
            Ok(c)
        }
    }
}

/// The jails of `count` stdio MCP servers, one each, made from the run's jail `sb` (before the
/// model's first turn, and before the baseline runs anything): each with its own namespaces,
/// home overlay and temp dirs, and on Linux a snapshot of the repository at `root` taken now (in
/// hone's directory, which commands cannot see), read-only. So nothing a server is given
/// (its `env`) is in any place the model's commands can read, and nothing they write later
/// reaches a server. Without a jail (`sandbox: off`), servers run unconfined like commands.
/// A jail that cannot be made is that server's start error.
pub async fn services(
    sb: &Sandbox,
    names: &[String],
    egress: &Egress,
    ledger: &Ledger,
    root: &Path,
    stop: impl Fn() -> bool + Send + 'static,
) -> Vec<Result<Sandbox, Error>> {
    let count = names.len();
    let Some(jail) = sb.jail.clone().filter(|_| count > 0) else {
        return (0..count).map(|_| Ok(Sandbox::default())).collect();
    };
    let (root, names, egress, ledger) = (root.to_path_buf(), names.to_vec(), egress.clone(), ledger.clone());
    let made = tokio::task::spawn_blocking(move || {
        let jails = service_jails(&jail, count, &root, !egress.is_open(), &stop);
        let purposes = names.iter().map(|n| format!("mcp:{n}"));
        jails
            .into_iter()
            .zip(purposes)
            .map(|(j, purpose)| j.and_then(|j| Sandbox::jailed(j, &egress, &purpose, &ledger)))
            .collect::<Vec<_>>()
    })
    .await;
    made.unwrap_or_else(|e| {
        let e = Arc::new(e);
        (0..count).map(|_| Err(Error::Task(e.clone()))).collect()
    })
}

#[cfg(target_os = "linux")]
fn service_jails(
    jail: &Jail,
    count: usize,
    root: &Path,
    isolate: bool,
    stop: &dyn Fn() -> bool,
) -> Vec<Result<Jail, Error>> {
    let started = std::time::Instant::now();
    // hone's scratch dir in the work tree, reached without following a link the repository has.
    let rel = Path::new(crate::spec::HONE_DIR).join("jail");
    let snapshot =
        crate::safe_fs::open_dir_below(root, &rel).and_then(|_| jail.snapshot(&root.join(&rel), stop)).map(Arc::new);
    let snapshot = match snapshot {
        Ok(s) => s,
        Err(e) => {
            let e = Arc::new(e);
            return (0..count).map(|_| Err(Error::Snapshot(e.clone()))).collect();
        }
    };
    tracing::debug!(
        "snapshot of the repository for MCP servers: {} files, {} bytes, {} ms",
        snapshot.files,
        snapshot.bytes,
        started.elapsed().as_millis()
    );
    (0..count).map(|_| jail.service(&snapshot, isolate).map_err(Error::Jail)).collect()
}

#[cfg(not(target_os = "linux"))]
fn service_jails(
    jail: &Jail,
    count: usize,
    _root: &Path,
    isolate: bool,
    _stop: &dyn Fn() -> bool,
) -> Vec<Result<Jail, Error>> {
    (0..count).map(|_| jail.service(isolate).map_err(Error::Jail)).collect()
}

/// What the jail needs to know about the run.
pub struct Inputs<'a> {
    pub policy: &'a Policy,
    pub root: &'a Path,
    pub git_paths: Vec<PathBuf>,
    /// Ignored entries (repo-relative) that exist before the run.
    pub ignored: &'a [String],
    /// Paths hone writes itself (its directory, the report dir): masked.
    pub hone_paths: Vec<PathBuf>,
    /// The `PATH` commands run with.
    pub path_var: String,
    pub home: Option<PathBuf>,
    /// Where the toolchains may be (`jail::toolchains::candidates`): those that exist are shown.
    pub toolchains: Vec<PathBuf>,
    pub run_id: &'a str,
}

/// Overlays are per ignored directory; past this many, directories are made read-only instead.
const MAX_OVERLAYS: usize = 64;

/// The plan for a run, and the Landlock roots.
pub fn plan(i: &Inputs<'_>) -> std::io::Result<(Plan, Vec<PathBuf>)> {
    // Where the Linux jail assembles its root; Seatbelt needs none.
    let staging = if cfg!(target_os = "linux") {
        tempfile::Builder::new().prefix("hone-root-").tempdir()?.keep()
    } else {
        PathBuf::new()
    };
    let (hone, hone_copy) = running_binary()?;
    let toolchains = toolchains(i);
    let readable: Vec<PathBuf> = i.policy.sandbox_readable.iter().filter(|p| p.exists()).cloned().collect();
    let mut covered: Vec<PathBuf> = crate::jail::plan::SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    covered.extend(toolchains.iter().chain(&readable).cloned());
    covered.push(i.root.to_path_buf());
    let mut ro_dirs = crate::jail::plan::path_dirs(&i.path_var, &covered, i.home.as_deref());
    ro_dirs.extend(readable.iter().cloned());
    let tree = tree::walk(i.policy, i.root);
    let (git_configs, mut masks) = tree::git_configs(&i.git_paths, &tree.nested_git);
    masks.extend(tree.denied);
    masks.extend(toolchains.iter().flat_map(|t| crate::jail::toolchains::credential_files(t)));
    masks.extend(i.hone_paths.iter().chain(&i.policy.hidden_files).filter(|p| p.exists()).cloned());
    // A path inside a masked directory is hidden already (and has no mount point to mask).
    masks.sort();
    masks.dedup();
    let nested: Vec<PathBuf> =
        masks.iter().filter(|m| masks.iter().any(|o| o != *m && m.starts_with(o))).cloned().collect();
    masks.retain(|m| !nested.contains(m));
    let (mut ignored_dirs, mut ignored_files) = (Vec::new(), Vec::new());
    for rel in i.ignored {
        let p = i.root.join(rel);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => ignored_dirs.push(p),
            Ok(m) if m.is_file() => ignored_files.push(p),
            _ => {}
        }
    }
    // hone's scratch dir for the overlays' upper layers, reached without following a link the
    // repository may have committed in its place (the holder creates the run's dir in it).
    let jail_dir = Path::new(crate::spec::HONE_DIR).join("jail");
    crate::safe_fs::open_dir_below(i.root, &jail_dir)?;
    let upper = i.root.join(jail_dir).join(i.run_id);
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let plan = Plan {
        repo: i.root.to_path_buf(),
        snapshot: None,
        read_only_repo: i.policy.read_only_repo,
        git_dirs: i.git_paths.clone(),
        ro_dirs,
        home: i.home.clone(),
        toolchains,
        git_configs,
        readable,
        masks,
        ignored_files,
        ignored_dirs: ignored_dirs.iter().take(MAX_OVERLAYS).cloned().collect(),
        upper: Some(upper),
        writable: extra_writable(i.policy, i.root),
        isolate_network: !i.policy.network.is_open(),
        hone,
        hone_copy,
        staging,
        uid,
        gid,
    };
    // Directories past the overlay limit are read-only: protected, if not writable.
    let mut plan = plan;
    plan.ignored_files.extend(ignored_dirs.into_iter().skip(MAX_OVERLAYS));
    let mut writable: Vec<PathBuf> = vec!["/tmp".into(), "/var/tmp".into(), "/dev".into()];
    if !i.policy.read_only_repo {
        writable.push(i.root.to_path_buf());
    }
    writable.extend(i.home.iter().cloned());
    // A toolchain place is an overlay: its writes (a cache, a lock) stay in the run, wherever it lies.
    let outside_home = |t: &&PathBuf| i.home.as_ref().is_none_or(|h| !t.starts_with(h));
    writable.extend(plan.toolchains.iter().filter(outside_home).cloned());
    writable.extend(plan.writable.iter().cloned());
    Ok((plan, writable))
}

/// The toolchain places that exist, as directories, outside the repository (which the view
/// holds already) and not holding it.
fn toolchains(i: &Inputs<'_>) -> Vec<PathBuf> {
    let fits = |p: &&PathBuf| !p.starts_with(i.root) && !i.root.starts_with(p);
    let is_dir = |p: &&PathBuf| std::fs::metadata(p).is_ok_and(|m| m.is_dir());
    i.toolchains.iter().filter(fits).filter(is_dir).cloned().collect()
}

/// The policy's writable trees, less any that holds the repository: made writable whole, it
/// would make `.git` and the protected entries writable too.
fn extra_writable(policy: &Policy, root: &Path) -> Vec<PathBuf> {
    let (keep, drop): (Vec<PathBuf>, Vec<PathBuf>) =
        policy.sandbox_writable.iter().cloned().partition(|w| !root.starts_with(w));
    for w in drop {
        tracing::warn!("paths.sandbox_writable `{}` holds the repository; it stays read-only", w.display());
    }
    keep
}

#[cfg(target_os = "linux")]
fn running_binary() -> std::io::Result<(PathBuf, Option<PathBuf>)> {
    use std::os::unix::fs::MetadataExt;
    let running = std::fs::metadata("/proc/self/exe")?;
    let same = |p: &Path| std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == (running.dev(), running.ino()));
    if let Ok(path) = std::env::current_exe().and_then(|p| p.canonicalize())
        && same(&path)
    {
        return Ok((path, None));
    }
    let dir = tempfile::Builder::new().prefix("hone-exe-").tempdir()?.keep();
    let copy = dir.join("hone");
    std::fs::copy("/proc/self/exe", &copy)?;
    tracing::warn!("hone's binary changed on disk during the run; the jail runs a copy of the running one");
    Ok((copy, Some(dir)))
}

/// On macOS the jail runs no copy of hone.
#[cfg(not(target_os = "linux"))]
fn running_binary() -> std::io::Result<(PathBuf, Option<PathBuf>)> {
    Ok((std::env::current_exe()?, None))
}

/// Why the machine cannot jail commands, and what to do about it.
#[cfg(not(target_os = "linux"))]
pub fn remedy() -> String {
    "hone jails commands with macOS's Seatbelt (/usr/bin/sandbox-exec), which refuses to run inside another sandbox (an App Sandbox, some CI agents): run hone outside it".into()
}

/// Why the machine cannot jail commands, and what to do about it.
#[cfg(target_os = "linux")]
pub fn remedy() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
        return "AppArmor restricts unprivileged user namespaces here (Ubuntu 23.10 and later, and `ubuntu-latest` GitHub runners): run `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` before hone (the hone Action does it for you)".into();
    }
    if read("/proc/sys/user/max_user_namespaces") == "0" {
        return "user namespaces are disabled: run `sudo sysctl -w user.max_user_namespaces=15000`".into();
    }
    if Path::new("/.dockerenv").exists() || read("/proc/1/cgroup").contains("docker") {
        return "in a container, user namespaces need `--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined` (or `--privileged`)".into();
    }
    "allow unprivileged user namespaces on this machine".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository that commits `.hone/jail` as a link: the plan puts the overlays' upper layers
    /// in a real directory in the repository, never where the link points.
    #[test]
    fn the_overlays_dir_is_never_reached_through_a_link() {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".hone")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join(".hone/jail")).unwrap();
        let policy = Policy::builtin();
        let inputs = Inputs {
            policy: &policy,
            root: &root,
            git_paths: vec![],
            ignored: &[],
            hone_paths: vec![],
            path_var: String::new(),
            home: None,
            toolchains: vec![],
            run_id: "r1",
        };
        let (plan, _) = plan(&inputs).unwrap();
        assert!(std::fs::symlink_metadata(root.join(".hone/jail")).unwrap().is_dir(), "the link was replaced");
        if let Some(up) = plan.upper {
            assert!(up.starts_with(&root), "{}", up.display());
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
