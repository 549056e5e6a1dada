//! The tests of a task repository run as a run's checks are: the job's check, in a jail built for
//! that tree from the job's policy (network as the policy says for commands), bounded by its
//! timeout and the cancel, its JUnit report read back (a regular file, bounded) for every case.

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
}

impl Tester for Jailed {
    async fn outcomes(&self, root: &Path) -> Result<Outcomes, HoneError> {
        let Some(junit) = self.check.junit.clone() else {
            return Err(HoneError::new(Code::Spec, format!("the check `{}` has no `junit:` report", self.check.name))
                .hint("give the check `junit: PATH`, the JUnit XML file its tests write: hone eval reads each test's outcome from it"));
        };
        let ws = crate::git::Workspace::open_for_run(root, Vec::new(), &self.env)?;
        let ledger = crate::egress::Ledger::new(None);
        let site = crate::sandbox::Site { ws: &ws, env: &self.env, report_dir: &self.report_dir, run_id: "eval" };
        let (jail, _) = crate::sandbox::start(&self.policy, &site, &[], "commands", &ledger).await?;
        let env = crate::sandbox::command_env(&self.policy, &self.env, root);
        let deadline = tokio::time::Instant::now() + self.check.timeout;
        let r = crate::verify::run_check(&self.check, 0, root, &env, deadline, &self.cancel, &jail).await;
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
