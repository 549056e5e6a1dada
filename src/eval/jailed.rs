//! The tests of a task repository run as a run's checks are: when a tree is opened, the job's
//! `setup` runs in it (in setup's jail: the network `setup.network` gives) and one jail is built
//! for it from the job's policy (network as the policy says for commands); each test run is then
//! the job's check in that jail, bounded by its timeout and the cancel, its JUnit report removed
//! before the run and read back after it (a regular file, bounded).

use super::validate::Tester;
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::policy::Policy;
use crate::sandbox::Sandbox;
use crate::spec::VerifySpec;
use crate::verify::junit_in::Outcomes;
use std::path::{Path, PathBuf};
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
    pub report_dir: PathBuf,
    /// The job's setup commands, run once in each tree when it is opened.
    pub setup: Vec<crate::spec::CommandSpec>,
    /// Milliseconds spent in the commands themselves (setup and tests): the rest is hone's.
    pub spent_ms: std::sync::atomic::AtomicU64,
}

/// A tree set up, with its jail: every test run in it shares them.
pub struct Tree {
    root: PathBuf,
    /// The check, its `{test_files}` and `{test_dirs}` put in.
    check: VerifySpec,
    jail: Sandbox,
    env: Vec<(String, String)>,
}

impl Jailed {
    fn count(&self, ms: u64) {
        self.spent_ms.fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The check's JUnit report path, or why there is none.
    fn junit(&self) -> Result<String, HoneError> {
        self.check.junit.clone().ok_or_else(|| {
            HoneError::new(Code::Spec, format!("the check `{}` has no `junit:` report", self.check.name))
                .hint("give the check `junit: PATH`, the JUnit XML file its tests write: hone eval reads each test's outcome from it")
        })
    }

    /// The job's setup in `root`; an error names the command.
    async fn set_up(&self, ws: &crate::git::Workspace, root: &Path) -> Result<(), HoneError> {
        if self.setup.is_empty() {
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
        Ok(())
    }
}

impl Tester for Jailed {
    type Tree = Tree;

    async fn open(&self, root: &Path, tests: &[String]) -> Result<Tree, HoneError> {
        self.junit()?;
        let ws = crate::git::Workspace::open_for_run(root, Vec::new(), &self.env)?;
        self.set_up(&ws, root).await?;
        let ledger = crate::egress::Ledger::new(None);
        let site = crate::sandbox::Site { ws: &ws, env: &self.env, report_dir: &self.report_dir, run_id: "eval" };
        let (jail, _) = crate::sandbox::start(&self.policy, &site, &[], "commands", &ledger).await?;
        let env = crate::sandbox::command_env(&self.policy, &self.env, root);
        let mut check = self.check.clone();
        check.run = super::select::command(&check.run, tests);
        Ok(Tree { root: root.to_path_buf(), check, jail, env })
    }

    async fn outcomes(&self, tree: &Tree) -> Result<Outcomes, HoneError> {
        let junit = self.junit()?;
        let (rel, root) = (Path::new(&junit), &tree.root);
        let name = rel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let unread = |e: std::io::Error| {
            HoneError::new(Code::Check, format!("the check `{}` left no readable `{junit}`: {e}", self.check.name))
        };
        // An earlier run's report is gone before this run: a run that writes none is read as none.
        crate::safe_fs::remove_beneath(root, &junit).map_err(unread)?;
        let deadline = tokio::time::Instant::now() + self.check.timeout;
        let r = crate::verify::run_check(&tree.check, 0, root, &tree.env, deadline, &self.cancel, &tree.jail).await;
        self.count(r.duration_ms);
        if r.cancelled {
            return Err(HoneError::new(Code::Cancelled, "cancelled"));
        }
        if r.timed_out {
            return Err(HoneError::new(
                Code::ToolTimeout,
                format!("the check `{}` ran past its timeout", self.check.name),
            ));
        }
        let read = crate::safe_fs::open_existing_dir_below(root, rel.parent().unwrap_or(Path::new("")))
            .and_then(|dir| crate::safe_fs::read_regular_at(&dir, &name, MAX_REPORT));
        let xml = match read {
            // The tests ran and reported nothing (they could not be collected, say): no case.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !matches!(r.exit_code, None | Some(127)) => {
                return Ok(Outcomes::default());
            }
            other => other.map_err(unread)?,
        };
        crate::verify::junit_in::outcomes(&String::from_utf8_lossy(&xml))
            .map_err(|e| HoneError::new(Code::Check, format!("`{junit}`: {e}")))
    }
}
