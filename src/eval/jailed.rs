//! The tests of a task repository run as a run's checks are: the job's `setup` first (once per
//! tree, in setup's jail: the network `setup.network` gives), then the job's check, in a jail
//! built for that tree from the job's policy (network as the policy says for commands), bounded
//! by its timeout and the cancel, its JUnit report read back (a regular file, bounded).

use super::validate::Tester;
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::policy::Policy;
use crate::spec::VerifySpec;
use crate::verify::junit_in::Outcomes;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// The largest JUnit report read.
const MAX_REPORT: u64 = 64 << 20;

/// Runs `check` (which names its JUnit report) in a jail for each tree.
pub struct Jailed {
    pub check: VerifySpec,
    pub policy: Policy,
    pub env: std::sync::Arc<RunEnv>,
    pub cancel: CancellationToken,
    /// Hidden from the commands (where the mining report goes).
    pub report_dir: std::path::PathBuf,
    /// The job's setup commands, run once in each tree before its first test run.
    pub setup: Vec<crate::spec::CommandSpec>,
    /// The trees set up already.
    pub set_up: std::sync::Mutex<std::collections::HashSet<std::path::PathBuf>>,
    /// Milliseconds spent in the commands themselves (setup and tests): the rest is hone's.
    pub spent_ms: std::sync::atomic::AtomicU64,
}

impl Jailed {
    fn count(&self, ms: u64) {
        self.spent_ms.fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Jailed {
    /// The job's setup in `root`, unless it ran there already; an error names the command.
    async fn set_up(&self, ws: &crate::git::Workspace, root: &Path) -> Result<(), HoneError> {
        let done = self.set_up.lock().map(|s| s.contains(root)).unwrap_or(false);
        if done || self.setup.is_empty() {
            return Ok(());
        }
        let mut policy = self.policy.clone();
        (policy.network, policy.read_only_repo) = (self.policy.setup_egress(), false);
        let ledger = crate::egress::Ledger::new(None);
        let site = crate::sandbox::Site { ws, env: &self.env, report_dir: &self.report_dir, run_id: "eval-setup" };
        let (jail, _) = crate::sandbox::start(&policy, &site, &[], "setup", &ledger).await?;
        let env = crate::sandbox::command_env(&policy, &self.env, root);
        for s in &self.setup {
            let deadline = tokio::time::Instant::now() + s.timeout;
            let r = crate::verify::run_check(&s.as_check(), 0, root, &env, deadline, &self.cancel, &jail).await;
            self.count(r.duration_ms);
            if !r.passed {
                let tail = crate::verify::tail_lines(&r.output_tail, 12);
                return Err(HoneError::new(
                    Code::Setup,
                    format!("setup command `{}` failed in the task's tree:\n{tail}", s.name),
                ));
            }
        }
        if let Ok(mut set) = self.set_up.lock() {
            set.insert(root.to_path_buf());
        }
        Ok(())
    }
}

impl Tester for Jailed {
    async fn outcomes(&self, root: &Path) -> Result<Outcomes, HoneError> {
        let Some(junit) = self.check.junit.clone() else {
            return Err(HoneError::new(Code::Spec, format!("the check `{}` has no `junit:` report", self.check.name))
                .hint("give the check `junit: PATH`, the JUnit XML file its tests write: hone eval reads each test's outcome from it"));
        };
        let ws = crate::git::Workspace::open_for_run(root, Vec::new(), &self.env)?;
        self.set_up(&ws, root).await?;
        let ledger = crate::egress::Ledger::new(None);
        let site = crate::sandbox::Site { ws: &ws, env: &self.env, report_dir: &self.report_dir, run_id: "eval" };
        let (jail, _) = crate::sandbox::start(&self.policy, &site, &[], "commands", &ledger).await?;
        let env = crate::sandbox::command_env(&self.policy, &self.env, root);
        let deadline = tokio::time::Instant::now() + self.check.timeout;
        let r = crate::verify::run_check(&self.check, 0, root, &env, deadline, &self.cancel, &jail).await;
        self.count(r.duration_ms);
        drop(jail);
        if r.cancelled {
            return Err(HoneError::new(Code::Cancelled, "cancelled"));
        }
        if r.timed_out {
            return Err(HoneError::new(
                Code::ToolTimeout,
                format!("the check `{}` ran past its timeout", self.check.name),
            ));
        }
        let rel = Path::new(&junit);
        let name = rel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let unread = |e: std::io::Error| {
            HoneError::new(Code::Check, format!("the check `{}` left no readable `{junit}`: {e}", self.check.name))
        };
        let dir =
            crate::safe_fs::open_existing_dir_below(root, rel.parent().unwrap_or(Path::new(""))).map_err(unread)?;
        let xml = crate::safe_fs::read_regular_at(&dir, &name, MAX_REPORT).map_err(unread)?;
        crate::verify::junit_in::outcomes(&String::from_utf8_lossy(&xml))
            .map_err(|e| HoneError::new(Code::Check, format!("`{junit}`: {e}")))
    }
}
