//! Starting a run's jail from its policy (the jail is also the probe: a machine that cannot jail
//! stops the run), and the environment its commands get.

use super::{Sandbox, SandboxReport};
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::git::Workspace;
use crate::policy::Policy;
use crate::redact::is_secret_name;
use std::path::Path;

/// The environment commands get: only the variables the policy passes (never a secret-looking
/// one unless named in `env.pass_secrets`), plus settings that stop git from running programs
/// named in a poisoned repo config, and `root` (the work tree) as git's one safe directory.
pub fn command_env(policy: &Policy, run_env: &RunEnv, root: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    for name in &policy.env_pass {
        if is_secret_name(name) && !policy.pass_secrets.contains(name) {
            continue;
        }
        if let Some(v) = run_env.var(name) {
            env.push((name.clone(), v.to_string()));
        }
    }
    for name in &policy.pass_secrets {
        if let Some(v) = run_env.var(name)
            && !env.iter().any(|(k, _)| k == name)
        {
            env.push((name.clone(), v.to_string()));
        }
    }
    let git: &[(&str, &str)] = &[
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_CONFIG_COUNT", "5"),
        ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
        ("GIT_CONFIG_VALUE_0", "false"),
        ("GIT_CONFIG_KEY_1", "core.hooksPath"),
        ("GIT_CONFIG_VALUE_1", "/dev/null"),
        ("GIT_CONFIG_KEY_2", "core.sshCommand"),
        ("GIT_CONFIG_VALUE_2", "false"),
        ("GIT_CONFIG_KEY_3", "core.pager"),
        ("GIT_CONFIG_VALUE_3", "cat"),
        // The checkout may be another user's, which hone works in only where the user's
        // `safe.directory` lets git (`git::safe`), and which the jail's git cannot read that
        // config to know: it trusts what hone decided, for the work tree alone (below).
        ("GIT_CONFIG_KEY_4", "safe.directory"),
        // Bytecode caches check source mtimes in whole seconds: an edit within the same second
        // as a test run would run stale code.
        ("PYTHONDONTWRITEBYTECODE", "1"),
    ];
    env.extend(git.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    env.push(("GIT_CONFIG_VALUE_4".into(), root.display().to_string()));
    env.sort();
    env
}

/// The run a jail is built for: its checkout, its environment, its report dir (hidden from
/// commands) and its id.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub ws: &'a Workspace,
    pub env: &'a RunEnv,
    pub report_dir: &'a Path,
    pub run_id: &'a str,
}

/// Build the jail (which is also the probe: a machine that cannot jail stops the run here), or
/// run commands unconfined when the policy says `sandbox: off`. Its proxy records connections
/// in `ledger` under `purpose`.
pub async fn start(
    policy: &Policy,
    site: &Site<'_>,
    ignored: &[String],
    purpose: &str,
    ledger: &crate::egress::Ledger,
) -> Result<(Sandbox, SandboxReport), HoneError> {
    let Site { ws, env, report_dir, run_id } = *site;
    if !policy.sandbox {
        tracing::warn!("the policy turns the sandbox off: commands run with the host's network and file access");
        return Ok((Sandbox::default(), SandboxReport::default()));
    }
    let command_env = command_env(policy, env, ws.root());
    let path_var = command_env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default();
    let home = env.home();
    let mut toolchains = crate::jail::toolchains::candidates(home.as_deref(), &|k| env.var(k).map(String::from));
    toolchains.extend(crate::jail::toolchains::on_path(&path_var, home.as_deref()));
    let toolchains = crate::jail::toolchains::outermost(toolchains, home.as_deref());
    let inputs = super::Inputs {
        policy,
        root: ws.root(),
        git_paths: ws.git_paths(),
        ignored,
        hone_paths: vec![ws.root().join(crate::spec::HONE_DIR), report_dir.to_path_buf()],
        path_var,
        home,
        toolchains,
        run_id,
    };
    let fail = |e: crate::jail::StartError| {
        let help = match e {
            crate::jail::StartError::Refused(_) => super::remedy(),
            crate::jail::StartError::Fault(_) => {
                "this is a fault in hone's jail; please report it with this message".into()
            }
        };
        HoneError::new(Code::Policy, format!("this machine cannot jail commands: {e}"))
            .hint(format!("{help}; or set `sandbox: off` in the policy to run commands unconfined on purpose"))
    };
    let fault = |e: &dyn std::fmt::Display| fail(crate::jail::StartError::Fault(e.to_string()));
    let (plan, writable) = super::plan(&inputs).map_err(|e| fault(&e))?;
    let report = SandboxReport {
        enabled: true,
        network_isolated: plan.isolate_network,
        landlock_abi: crate::jail::landlock_abi(),
        writable: writable.iter().map(|p| p.display().to_string()).collect(),
        masked: plan.masks.len(),
        protected_ignored: plan.ignored_dirs.len() + plan.ignored_files.len(),
        view: plan.shown(&writable),
    };
    let (egress, purpose, ledger) = (policy.network.clone(), purpose.to_string(), ledger.clone());
    let started = tokio::task::spawn_blocking(move || {
        crate::jail::Jail::start(&plan, writable).map(|j| Sandbox::jailed(j, &egress, &purpose, &ledger))
    })
    .await
    .map_err(|e| fault(&e))?;
    let sandbox = started.map_err(fail)?.map_err(|e| fault(&e))?;
    Ok((sandbox, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The jail's git trusts the work tree hone decided on, and nothing else (another user's
    /// repository above it, say).
    #[test]
    fn the_jails_git_trusts_the_work_tree_alone() {
        let dir = tempfile::tempdir().unwrap();
        let env = command_env(&Policy::builtin(), &RunEnv::default(), dir.path());
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let i = (0..5).find(|i| get(&format!("GIT_CONFIG_KEY_{i}")).as_deref() == Some("safe.directory")).unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(get(&format!("GIT_CONFIG_VALUE_{i}")), Some(real.display().to_string()));
        assert!(!env.iter().any(|(_, v)| v == "*"));
    }
}
