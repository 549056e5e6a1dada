//! The run's state: owned by the turn loop and the steps after it (guards, commit, ship), and
//! turned into the report once, at the end (`RunReport::from(&Run)`). Checkpoints keep their
//! commit as a git id; the state machine and its history live here too.

use super::state::Machine;
use crate::git::FileChange;
use crate::protocol::{FaultKind, Plan, PrReport, Usage};
use crate::report::{
    CheckpointRecord, CommitInfo, ErrorRecord, FinishRecord, PolicyReport, RetryStats, RollbackRecord, RunReport,
    Status, ToolCallRecord,
};
use crate::verify::CheckResult;
use std::collections::BTreeMap;
use tokio::time::Instant;

/// What is known of a run from its start: which job, where, with which model.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub job: String,
    pub run_id: String,
    pub started_at: String,
    pub started: Instant,
    pub provider: String,
    pub model: String,
    pub repo: String,
    /// `repo.base` as given (default `HEAD`).
    pub base: String,
    pub branch: String,
    pub context_window: u64,
    pub pricing: Option<crate::spec::pricing::Pricing>,
    pub max_cost_usd: Option<f64>,
}

/// A snapshot of the work tree the run can roll back to.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub id: u32,
    /// What it follows: the baseline, a plan step, or a verification round.
    pub label: String,
    pub commit: git2::Oid,
    /// (checks not accepted, failing tests) at this point: lower is better.
    pub score: (usize, usize),
}

pub struct Run {
    pub meta: RunMeta,
    pub machine: Machine,
    pub status: Status,
    pub base_sha: String,
    /// The branch a PR targets: `repo.base` when it is a branch, else the branch hone started on.
    pub base_branch: String,
    pub turns: u32,
    pub usage: Usage,
    pub fix_attempts: u32,
    pub tool_calls: Vec<ToolCallRecord>,
    pub setup: Vec<CheckResult>,
    pub hooks: Vec<crate::report::HookRecord>,
    pub mcp: Vec<crate::protocol::McpServerRecord>,
    /// The model id the provider last said answered.
    pub model_id: Option<String>,
    /// `--continue`: the saved work this run took up (`REF (sha)`).
    pub continued_from: Option<String>,
    /// What was said, for `transcript.jsonl`.
    pub transcript: Vec<crate::protocol::transcript::Entry>,
    pub baseline: Vec<CheckResult>,
    pub verify: Vec<CheckResult>,
    pub files_changed: Vec<FileChange>,
    pub commit: Option<CommitInfo>,
    pub saved_ref: Option<String>,
    pub errors: Vec<ErrorRecord>,
    pub warnings: Vec<String>,
    pub model_retries: RetryStats,
    pub faults: BTreeMap<FaultKind, u32>,
    pub policy: PolicyReport,
    pub plan: Option<Plan>,
    pub checkpoints: Vec<Checkpoint>,
    pub rollbacks: Vec<RollbackRecord>,
    pub clarification: Vec<String>,
    pub compactions: u32,
    pub prefix_reuse_avg: f64,
    pub summary: String,
    pub final_message: String,
    pub finish: Option<FinishRecord>,
    pub pr: Option<PrReport>,
}

impl Run {
    pub fn new(meta: RunMeta) -> Run {
        Run {
            meta,
            machine: Machine::new(),
            status: Status::Error,
            base_sha: String::new(),
            base_branch: String::new(),
            turns: 0,
            usage: Usage::default(),
            fix_attempts: 0,
            tool_calls: vec![],
            setup: vec![],
            hooks: vec![],
            mcp: vec![],
            model_id: None,
            transcript: vec![],
            continued_from: None,
            baseline: vec![],
            verify: vec![],
            files_changed: vec![],
            commit: None,
            saved_ref: None,
            errors: vec![],
            warnings: vec![],
            model_retries: RetryStats::default(),
            faults: BTreeMap::new(),
            policy: PolicyReport::default(),
            plan: None,
            checkpoints: vec![],
            rollbacks: vec![],
            clarification: vec![],
            compactions: 0,
            prefix_reuse_avg: 0.0,
            summary: String::new(),
            final_message: String::new(),
            finish: None,
            pr: None,
        }
    }

    /// What the run has cost so far, when the job gives prices.
    pub fn cost(&self) -> Option<crate::spec::pricing::Cost> {
        let pricing = self.meta.pricing?;
        let usd = (pricing.cost(&self.usage) * 1e6).round() / 1e6;
        Some(crate::spec::pricing::Cost { usd, limit_usd: self.meta.max_cost_usd, pricing })
    }

    /// The last verification round's results.
    pub fn final_checks(&self) -> Vec<&CheckResult> {
        crate::report::final_checks(&self.verify)
    }
}

impl From<&Run> for RunReport {
    fn from(r: &Run) -> RunReport {
        let m = &r.meta;
        let mut report = RunReport::new(&m.job, &m.run_id, m.started_at.clone());
        report.status = r.status;
        report.exit_code = r.status.exit_code();
        report.duration_ms = m.started.elapsed().as_millis() as u64;
        (report.provider, report.model, report.repo) = (m.provider.clone(), m.model.clone(), m.repo.clone());
        (report.base, report.branch, report.context_window) = (m.base.clone(), m.branch.clone(), m.context_window);
        (report.base_sha, report.base_branch) = (r.base_sha.clone(), r.base_branch.clone());
        (report.turns, report.usage, report.fix_attempts) = (r.turns, r.usage, r.fix_attempts);
        report.tool_calls = r.tool_calls.clone();
        report.model_id = r.model_id.clone();
        report.continued_from = r.continued_from.clone();
        report.cost = r.cost();
        (report.setup, report.baseline, report.verify) = (r.setup.clone(), r.baseline.clone(), r.verify.clone());
        report.hooks = r.hooks.clone();
        report.mcp = r.mcp.clone();
        report.files_changed = r.files_changed.clone();
        (report.commit, report.saved_ref) = (r.commit.clone(), r.saved_ref.clone());
        (report.errors, report.warnings) = (r.errors.clone(), r.warnings.clone());
        (report.model_retries, report.faults) = (r.model_retries.clone(), r.faults.clone());
        (report.policy, report.plan) = (r.policy.clone(), r.plan.clone());
        report.checkpoints = r
            .checkpoints
            .iter()
            .map(|c| CheckpointRecord {
                id: c.id,
                label: c.label.clone(),
                commit: c.commit.to_string(),
                score: c.score,
            })
            .collect();
        (report.rollbacks, report.clarification) = (r.rollbacks.clone(), r.clarification.clone());
        (report.compactions, report.prefix_reuse_avg) = (r.compactions, r.prefix_reuse_avg);
        report.states = r.machine.history();
        (report.pr, report.summary) = (r.pr.clone(), r.summary.clone());
        (report.final_message, report.finish) = (r.final_message.clone(), r.finish.clone());
        report.classify_faults();
        report
    }
}

/// A run's metadata for unit tests.
#[cfg(test)]
pub fn test_meta(job: &str) -> RunMeta {
    RunMeta {
        job: job.into(),
        run_id: "run".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        started: Instant::now(),
        provider: "script".into(),
        model: "m".into(),
        repo: "/r".into(),
        base: "HEAD".into(),
        branch: format!("hone/{job}"),
        context_window: 32_768,
        pricing: None,
        max_cost_usd: None,
    }
}
