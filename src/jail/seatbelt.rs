//! The macOS jail: every command runs under `sandbox-exec` with the run's Seatbelt profile
//! (`sbpl`), which its children inherit. Seatbelt checks each access against resolved paths, so
//! the profile is written with canonical paths. There is no PID namespace: a command's process
//! group is killed when it ends (`exec`), and a process that leaves the group can outlive it.

use super::{StartError, plan::Plan, sbpl};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// macOS's Seatbelt front end, part of the base system.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// How long the probe at start may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Jail {
    /// What the jail shows (kept to derive the jails of services from).
    plan: Plan,
    profile: sbpl::Profile,
    /// The run's private temp dir (the commands' TMPDIR): removed at drop.
    tmp: PathBuf,
}

impl Jail {
    /// The profile for `plan`, checked by running `/usr/bin/true` under it.
    pub fn start(plan: &Plan, _writable: Vec<PathBuf>) -> Result<Jail, StartError> {
        let fault = |e: &dyn std::fmt::Display| StartError::Fault(e.to_string());
        if !Path::new(SANDBOX_EXEC).exists() {
            return Err(StartError::Refused(format!("{SANDBOX_EXEC} is missing")));
        }
        let tmp = tempfile::Builder::new().prefix("hone-tmp-").tempdir().map_err(|e| fault(&e))?.keep();
        let tmp = tmp.canonicalize().map_err(|e| fault(&e))?;
        let profile = sbpl::profile(&canonical(plan), &tmp)?;
        let jail = Jail { plan: plan.clone(), profile, tmp };
        jail.probe()?;
        Ok(jail)
    }

    fn probe(&self) -> Result<(), StartError> {
        let mut child = std::process::Command::new(SANDBOX_EXEC)
            .args(self.args("/usr/bin/true", &[]))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| StartError::Refused(format!("cannot run {SANDBOX_EXEC}: {e}")))?;
        let deadline = std::time::Instant::now() + PROBE_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(s)) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    return Err(StartError::Refused(format!(
                        "{SANDBOX_EXEC} refused the profile ({s}): {}",
                        err.trim()
                    )));
                }
                Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(StartError::Fault(format!("{SANDBOX_EXEC} gave no answer")));
                }
            }
        }
    }

    /// `sandbox-exec`'s arguments for `program args`.
    fn args(&self, program: &str, args: &[&str]) -> Vec<String> {
        let mut out = vec!["-p".to_string(), self.profile.text.clone()];
        out.extend(self.profile.params.iter().map(|(k, v)| format!("-D{k}={v}")));
        out.push("--".into());
        out.push(program.into());
        out.extend(args.iter().map(|a| a.to_string()));
        out
    }

    /// A command that runs `program args` under the profile, in `cwd`.
    pub fn command(&self, program: &str, args: &[&str], cwd: &Path) -> std::io::Result<tokio::process::Command> {
        let mut cmd = tokio::process::Command::new(SANDBOX_EXEC);
        cmd.args(self.args(program, args)).current_dir(cwd);
        Ok(cmd)
    }

    /// The jail of a service (an MCP server): a profile of its own from the run's plan, with a
    /// temp dir of its own, the repository read-only and the policy's writable trees unreadable,
    /// so that it shares no place the run's commands can write. It reads the live repository:
    /// macOS has no bind mounts to show it a snapshot (docs/security.md says what follows).
    pub fn service(&self, isolate: bool) -> Result<Jail, StartError> {
        let mut plan = self.plan.for_service(None, PathBuf::new());
        plan.isolate_network = isolate;
        Jail::start(&plan, vec![])
    }

    /// hone's proxy needs a listener only the jail can reach; Seatbelt has no network namespace
    /// to put one in, so a network allow-list is Linux's alone (docs/security.md).
    pub fn listener(&self) -> std::io::Result<std::net::TcpListener> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "network allow-lists need Linux's network namespaces"))
    }

    /// The commands' temp dir.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// The plan with every path resolved (`/var` is `/private/var`, `/tmp` is `/private/tmp`), as
/// Seatbelt sees them. What is protected is protected both as given and resolved, so that
/// swapping a symlink on the way cannot uncover it; a path that does not exist is kept as given.
fn canonical(plan: &Plan) -> Plan {
    let c = |p: &PathBuf| p.canonicalize().unwrap_or_else(|_| p.clone());
    let one = |v: &[PathBuf]| v.iter().map(c).collect::<Vec<_>>();
    let both = |v: &[PathBuf]| {
        let mut out: Vec<PathBuf> = v.iter().flat_map(|p| [p.clone(), c(p)]).collect();
        out.dedup();
        out
    };
    Plan {
        repo: c(&plan.repo),
        git_dirs: both(&plan.git_dirs),
        ro_dirs: one(&plan.ro_dirs),
        home: plan.home.as_ref().map(c),
        toolchains: one(&plan.toolchains),
        masks: both(&plan.masks),
        ignored_files: both(&plan.ignored_files),
        ignored_dirs: both(&plan.ignored_dirs),
        writable: one(&plan.writable),
        ..plan.clone()
    }
}

/// No `hone __jail-*` entry points on macOS.
pub fn dispatch(_args: &[String]) -> Option<i32> {
    None
}
