//! The run record: the one account of what happened in a run. `report.json` is this type
//! serialized (and read back, typed, by `--continue`, fleets and replay); its schema,
//! `docs/report.schema.json`, is generated from it.

pub mod answer;
mod calls;
pub mod instructions;
pub mod memory;
mod models;
pub mod network;
pub mod spend;
mod status;
pub mod tries;

pub use spend::{Spend, TraceRef};
pub use status::Status;

use crate::error::{Code, HoneError};
use crate::git::FileChange;
use crate::protocol::{FaultClass, FaultKind, ModelErrorKind, SCHEMA_VERSION, Usage};
use crate::verify::CheckResult;
pub use calls::{HookRecord, ToolCallRecord};
pub use models::ModelUse;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How the model said its work ended (the `finish` tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishOutcome {
    Done,
    Blocked,
}

/// The `finish` call: also the tool's argument type.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishRecord {
    pub outcome: FinishOutcome,
    #[serde(default)]
    pub summary: String,
    /// For `blocked`: what stops the task.
    #[serde(default)]
    pub reason: Option<String>,
    /// The task's answer, when the job has an `output:` schema (checked against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CommitInfo {
    pub sha: String,
    pub branch: String,
    pub message: String,
}

/// One policy denial, as listed in the report.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Denial {
    pub turn: u32,
    pub tool: String,
    pub subject: String,
    pub rule: String,
}

#[derive(Debug, Clone, Serialize, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct PolicyReport {
    /// The policy file, or "built-in default".
    pub source: String,
    pub sandbox: crate::sandbox::SandboxReport,
    pub decisions: u32,
    pub denied: u32,
    pub denials: Vec<Denial>,
    /// Why the commit was refused by the diff or .git guard (empty when it was not).
    pub guard: Vec<String>,
    /// Where the jails could connect, and every connection through hone's proxy.
    pub network: network::NetworkReport,
}

/// A snapshot of the work tree that hone can roll back to.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CheckpointRecord {
    pub id: u32,
    /// What it follows: the baseline, a plan step, or a verification round.
    pub label: String,
    pub commit: String,
    /// (checks not accepted, failing tests) at this point: lower is better.
    pub score: (usize, usize),
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RollbackRecord {
    pub turn: u32,
    pub to_checkpoint: u32,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct RetryStats {
    pub total: u32,
    /// Retries per failure kind (rate_limited, server_error, stream_cut, empty_answer, ...).
    pub by_kind: BTreeMap<ModelErrorKind, u32>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    /// The version of this format (1); it changes only when a field changes meaning or goes.
    pub schema_version: u32,
    /// The job's name.
    pub job: String,
    /// A UUID, also in every event.
    pub run_id: String,
    /// How the run ended: each status maps to one exit code.
    pub status: Status,
    /// 0 success/no_change/skipped, 1 failed/budget_exhausted/needs_clarification, 2 invalid_input, 3 error, 130 cancelled.
    pub exit_code: i32,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// How long the run took.
    pub duration_ms: u64,
    /// The hone that ran it.
    pub hone_version: String,
    /// The model provider (`openai`, `anthropic`, `openai-compatible`, `script`, …).
    pub provider: String,
    /// The model asked for (`model.name`).
    pub model: String,
    /// The model id the provider said answered (it may differ from `model`, the one asked for).
    pub model_id: Option<String>,
    /// What the run cost (null without `model.pricing`).
    pub cost: Option<crate::spec::pricing::Cost>,
    /// `--continue`: the saved work the run started from, `REF (sha)`.
    pub continued_from: Option<String>,
    /// The repository's absolute path.
    pub repo: String,
    /// The base as given (`repo.base`, or `HEAD`).
    pub base: String,
    /// The commit the base resolved to.
    pub base_sha: String,
    /// The branch a PR targets: `repo.base` when it is a branch, else the branch hone started on.
    pub base_branch: String,
    /// The branch the change is committed on.
    pub branch: String,
    /// Model requests made.
    pub turns: u32,
    /// When each turn's request went out, in milliseconds since the run started (for the
    /// timeline in `summary.md`).
    #[serde(default)]
    pub turn_started_ms: Vec<u64>,
    /// Tokens used, as the provider counted them.
    pub usage: Usage,
    /// The models that were asked, in order: the job's, then each fallback the run moved on to,
    /// with its turns, tokens, prices and why it took over.
    #[serde(default)]
    pub models: Vec<ModelUse>,
    /// Verification rounds that failed and were fed back to the model.
    pub fix_attempts: u32,
    /// Every tool call the model made, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The job's setup commands, in order (the last one is the one that failed, if any did).
    pub setup: Vec<CheckResult>,
    /// Every hook run.
    pub hooks: Vec<HookRecord>,
    /// The job's MCP servers: whether each started, the tools offered and kept back, calls.
    pub mcp: Vec<crate::protocol::McpServerRecord>,
    /// The checks as they were before any change (attempt 0).
    pub baseline: Vec<CheckResult>,
    /// Every check run, per verification round (`attempt`).
    pub verify: Vec<CheckResult>,
    /// The files the change touches, with lines added and removed.
    pub files_changed: Vec<FileChange>,
    /// The commit made (null when nothing was committed).
    pub commit: Option<CommitInfo>,
    /// Where the work of a failed run was saved (a ref, not a branch).
    pub saved_ref: Option<String>,
    /// A killed run found at the start (its marker left in the git dir, its process gone): where
    /// its work was saved and where the checkout was put back before this run began.
    #[serde(default)]
    pub recovered: Option<crate::git::Recovered>,
    /// Why the run did not succeed: each error's code, message and what to do, first cause first.
    pub errors: Vec<HoneError>,
    /// What the user should know that did not stop the run.
    pub warnings: Vec<String>,
    /// Model requests retried, by failure kind.
    pub model_retries: RetryStats,
    /// Every fault hone absorbed, by kind: model retries, invalid tool calls, repetition, loops.
    pub faults: BTreeMap<FaultKind, u32>,
    /// The same faults by class: `retryable` (retried as they were),
    /// `recoverable` (handled by changing course: error results, compaction, rollback, notes) and
    /// `permanent` (they ended the run).
    pub fault_classes: BTreeMap<FaultClass, u32>,
    /// The policy in force: its source, the jail, its decisions and denials, the guards' refusals and the network.
    pub policy: PolicyReport,
    /// The plan with its final step statuses (null when planning is off or the model made none).
    pub plan: Option<crate::protocol::Plan>,
    /// The snapshots the run could roll back to.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Every rollback to a checkpoint, and why.
    pub rollbacks: Vec<RollbackRecord>,
    /// The model's questions, when it stopped with NEEDS_CLARIFICATION.
    pub clarification: Vec<String>,
    /// The model's context window used for compaction, in tokens.
    pub context_window: u64,
    /// How often the history was compacted.
    pub compactions: u32,
    /// The average share of each request's prefix reused from the previous one (prompt caching).
    pub prefix_reuse_avg: f64,
    /// The state machine's history, with timings.
    pub states: Vec<crate::protocol::StateSpan>,
    /// Push and pull request (null when the run had nothing to ship).
    pub pr: Option<crate::protocol::PrReport>,
    /// SUMMARIZING's text: what changed and why, verification, risks, roll-back, blockers.
    pub summary: String,
    /// The model's last message (or its `finish` summary).
    pub final_message: String,
    /// How the model ended its work with `finish` (null when it ended with a plain answer).
    pub finish: Option<FinishRecord>,
    /// What the job does with a change: `commit`, `review` (suggestions on the PR) or `none`.
    pub change: crate::spec::answer::Change,
    /// The task's answer, valid against the job's `output:` schema (null without a schema, or
    /// when no valid answer came).
    pub output: Option<serde_json::Value>,
    /// How the answer was checked: the schema, the attempts, the last errors.
    pub output_check: Option<answer::OutputCheck>,
    /// Review mode: the review posted on the PR (null when none was).
    pub review: Option<crate::protocol::ReviewReport>,
    /// hone's memory of the repository: the entries the model was given and what the run recorded.
    #[serde(default)]
    pub memory: memory::MemoryReport,
    /// The repository's instruction files the model was given (`context.instructions`).
    #[serde(default)]
    pub instructions: Vec<instructions::InstructionFile>,
    /// The commit the instruction files were read from: the run's base, or for a pull request
    /// (autofix, review) its base commit as the forge names it, never its head. Null when none
    /// were read (no such commit could be had, or `context.instructions` is off).
    #[serde(default)]
    pub instructions_commit: Option<String>,
    /// The job's tries (`attempts:`), in order; absent for a job of one try.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tries: Vec<tries::TryRecord>,
    /// The try whose change landed, and why; absent for a job of one try, and when no try's could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<tries::Choice>,
    /// The OpenTelemetry trace the run was exported as; absent when telemetry is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<spend::TraceRef>,
}

impl RunRecord {
    pub fn new(job: &str, run_id: &str, started_at: String) -> Self {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            job: job.into(),
            run_id: run_id.into(),
            status: Status::Error,
            exit_code: Status::Error.exit_code(),
            started_at,
            duration_ms: 0,
            hone_version: env!("CARGO_PKG_VERSION").into(),
            provider: String::new(),
            model: String::new(),
            model_id: None,
            cost: None,
            continued_from: None,
            repo: String::new(),
            base: String::new(),
            base_sha: String::new(),
            base_branch: String::new(),
            branch: String::new(),
            turns: 0,
            turn_started_ms: vec![],
            usage: Usage::default(),
            models: Vec::new(),
            fix_attempts: 0,
            tool_calls: vec![],
            setup: vec![],
            hooks: vec![],
            mcp: vec![],
            baseline: vec![],
            verify: vec![],
            files_changed: vec![],
            commit: None,
            saved_ref: None,
            recovered: None,
            errors: vec![],
            warnings: vec![],
            model_retries: RetryStats::default(),
            faults: BTreeMap::new(),
            fault_classes: BTreeMap::new(),
            policy: PolicyReport::default(),
            states: vec![],
            context_window: 0,
            compactions: 0,
            prefix_reuse_avg: 0.0,
            plan: None,
            checkpoints: vec![],
            rollbacks: vec![],
            clarification: vec![],
            summary: String::new(),
            pr: None,
            final_message: String::new(),
            finish: None,
            change: Default::default(),
            output: None,
            output_check: None,
            trace: None,
            review: None,
            memory: Default::default(),
            instructions: vec![],
            instructions_commit: None,
            tries: vec![],
            chosen: None,
        }
    }

    /// Compute the fields derived for output, in this one place: the exit code from the status,
    /// the duration, the cost from the usage at the record's prices, the faults by class.
    pub fn seal(&mut self, elapsed: std::time::Duration) {
        self.exit_code = self.status.exit_code();
        self.duration_ms = elapsed.as_millis() as u64;
        let spent = self.spent_usd();
        if let Some(cost) = &mut self.cost {
            cost.usd = (spent * 1e6).round() / 1e6;
        }
        let mut classes: BTreeMap<FaultClass, u32> = BTreeMap::new();
        for (kind, n) in &self.faults {
            *classes.entry(kind.class()).or_default() += n;
        }
        let permanent = self.errors.iter().filter(|e| e.code == Code::Model).count() as u32;
        if permanent > 0 {
            *classes.entry(FaultClass::Permanent).or_default() += permanent;
        }
        self.fault_classes = classes;
    }

    /// The last verification round's results.
    pub fn final_checks(&self) -> Vec<&CheckResult> {
        final_checks(&self.verify)
    }

    /// Why the run did not succeed, in one line: the first error (its code and the start of its
    /// message).
    pub fn reason(&self) -> Option<String> {
        let e = self.errors.first()?;
        Some(format!("{}: {}", e.code, e.headline(300)))
    }

    /// The one line printed to stdout at the end.
    pub fn one_line(&self, dir: Option<&Path>) -> String {
        let what = match (&self.commit, self.status) {
            (Some(c), _) => format!(" commit {} on {}", &c.sha[..c.sha.len().min(12)], c.branch),
            (None, Status::NoChange) => " nothing to change".into(),
            _ => String::new(),
        };
        let why = match self.status {
            Status::Success | Status::NoChange => None,
            _ => self.reason(),
        };
        let why = why.map(|w| format!(": {w}")).unwrap_or_default();
        let reports = dir.map_or("no reports written".to_string(), |d| format!("reports in {}", d.display()));
        format!("hone: {}{what} (exit {}){why}; {reports}", self.status.as_str(), self.exit_code)
    }
}

/// The results of the last verification round in `verify`.
pub fn final_checks(verify: &[CheckResult]) -> Vec<&CheckResult> {
    let last = verify.iter().map(|c| c.attempt).max().unwrap_or(0);
    verify.iter().filter(|c| c.attempt == last).collect()
}

#[cfg(test)]
mod tests {
    /// The data flows one way: the record is filled in by the run and written by `output`;
    /// neither knows the loop, the forge or the fleet. Using one of them here would turn it
    /// back into a cycle.
    #[test]
    fn the_record_and_its_outputs_are_leaves() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut read = 0;
        for dir in ["src/record", "src/output"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                for module in ["agent", "forge", "fleet"] {
                    let upstream = format!("crate::{module}");
                    assert!(!text.contains(&upstream), "{} uses {upstream}", path.display());
                }
                read += 1;
            }
        }
        assert!(read >= 8, "every file of the record and output modules was read");
    }
}
