//! What a tool may touch (`ToolContext`): the root, the limits, the policy and the paths the
//! tools may not write, the jail, the run's cancellation and deadline; and the path and command
//! checks every tool goes through, which record each decision for the audit trail.

use super::{beneath, io_err, patch, paths};
use crate::bound::Bound;
use crate::error::Code;
use crate::policy::{Access, Decision, Policy, decide_command, decide_path, decide_tool_write};
use crate::protocol::ToolOutput;
use crate::redact::Redactor;
use crate::spec::ToolLimits;
use paths::Root;
use std::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything a tool may touch.
pub struct ToolContext {
    pub root: Root,
    pub limits: ToolLimits,
    /// The environment commands run with (already scrubbed of secrets).
    pub env: Vec<(String, String)>,
    pub redactor: Redactor,
    /// The run's deadline and cancellation: commands are cut off at whichever comes first.
    pub bound: Bound,
    pub changes: Mutex<patch::ChangeLog>,
    pub policy: Policy,
    /// Repo-relative entries the tools may not write (hone's own directory, the report dir,
    /// ignored entries that were there before the run and what setup made): the jail keeps them
    /// from commands, and the tools run outside it.
    pub protected: Vec<String>,
    pub sandbox: crate::sandbox::Sandbox,
    /// Every policy decision since the last drain, for the audit trail.
    pub decisions: Mutex<Vec<Decision>>,
    /// The job's MCP servers, once started (before the first request).
    pub mcp: std::sync::OnceLock<crate::mcp::Hub>,
}

impl ToolContext {
    /// A context outside any run (the benchmarks, unit tests): the built-in policy with commands
    /// allowed, no jail, an hour to the deadline.
    pub fn standalone(root: &std::path::Path, limits: ToolLimits, env: Vec<(String, String)>) -> std::io::Result<Self> {
        let mut policy = Policy::builtin();
        policy.default_allow = true;
        Ok(ToolContext {
            root: Root::new(root)?,
            limits,
            env,
            redactor: Redactor::new(),
            bound: Bound::new(Instant::now() + std::time::Duration::from_secs(3600), &CancellationToken::new()),
            changes: Mutex::new(patch::ChangeLog::default()),
            policy,
            protected: Vec::new(),
            sandbox: Default::default(),
            decisions: Mutex::new(Vec::new()),
            mcp: Default::default(),
        })
    }

    fn record(&self, d: &Decision) {
        if let Ok(mut v) = self.decisions.lock() {
            v.push(d.clone());
        }
    }

    /// Take the decisions recorded since the last call.
    pub fn drain_decisions(&self) -> Vec<Decision> {
        self.decisions.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }

    /// Resolve `input` and check it against the path rules for `access`.
    pub fn resolve(&self, input: &str, access: Access) -> Result<paths::Resolved, ToolOutput> {
        let r = self.root.resolve(input).map_err(ToolOutput::from)?;
        if r.target == "." && access == Access::Read {
            return Ok(r);
        }
        // The rules hold for the name and for what it leads to: `l -> .env` is `.env`.
        for path in [&r.rel, &r.target] {
            let d = match access {
                Access::Read => decide_path(&self.policy, path, access),
                Access::Write => decide_tool_write(&self.policy, path, &self.protected),
            };
            self.record(&d);
            if !d.allowed {
                return Err(denied(&d));
            }
            if r.target == r.rel {
                break;
            }
        }
        Ok(r)
    }

    /// Open the regular file `rel` (a path a walk found, or a resolved one) beneath the root
    /// for reading, refused when what it really is (through any symlink beneath the root) is a
    /// file the policy does not let the model read.
    pub fn open_readable(&self, root_dir: &std::fs::File, rel: &str) -> Result<std::fs::File, ToolOutput> {
        let f = beneath::open_file(root_dir, rel).map_err(|e| io_err(&format!("cannot read `{rel}`"), &e))?;
        let real = beneath::real_rel(self.root.path(), &f).unwrap_or_else(|| rel.to_string());
        if !self.readable(&real) {
            return Err(self.refuse_read(&real));
        }
        Ok(f)
    }

    /// The denial of a read of `rel`, which the read rules refuse, recorded for the audit trail.
    pub fn refuse_read(&self, rel: &str) -> ToolOutput {
        let d = decide_path(&self.policy, rel, Access::Read);
        self.record(&d);
        denied(&d)
    }

    /// Whether a read of `rel` is allowed, without recording it (for filtering search results).
    /// `rel` is a path the walker produced (normalized, relative to the root).
    pub fn readable(&self, rel: &str) -> bool {
        crate::policy::read_denied_by(&self.policy, rel).is_none()
    }

    pub fn check_command(&self, cmd: &str) -> Result<(), ToolOutput> {
        let d = decide_command(&self.policy, cmd);
        self.record(&d);
        if d.allowed { Ok(()) } else { Err(denied(&d)) }
    }
}

/// The error result for a denial: the code, the rule that matched, and a hint.
pub fn denied(d: &Decision) -> ToolOutput {
    ToolOutput::err(Code::PolicyDenied, format!("denied by the policy: `{}` (rule: {}). {}", d.subject, d.rule, d.hint))
}
