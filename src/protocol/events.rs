//! The event stream: every step of a run as one JSON line.

use super::{FinishReason, Usage};
use crate::error::Code;
use serde::{Deserialize, Serialize};

/// One line of `events.jsonl` (and of stdout under `--json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventRecord {
    pub schema_version: u32,
    /// RFC 3339 UTC timestamp.
    pub ts: String,
    pub run_id: String,
    /// In a fleet: the repository the run belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// With `attempts:`: the try the event belongs to (from 1); absent for the job's own.
    #[serde(rename = "try", default, skip_serializing_if = "Option::is_none")]
    pub try_no: Option<u32>,
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The model's answer satisfied the job's `output:` schema.
    OutputAccepted {
        turn: u32,
        attempt: u32,
        result: serde_json::Value,
    },
    /// The model's answer did not satisfy the schema; the errors went back to it.
    OutputRejected {
        turn: u32,
        attempt: u32,
        errors: Vec<String>,
    },
    /// Review mode: hone's review was posted on the PR (or its earlier one updated).
    ReviewPosted {
        number: u64,
        operation: super::record::ReviewOperation,
        suggestions: usize,
        url: Option<String>,
    },
    /// The model set or updated its plan.
    PlanUpdated {
        turn: u32,
        plan: super::record::Plan,
    },
    /// hone saved the work tree as a checkpoint.
    Checkpoint {
        id: u32,
        label: String,
        commit: String,
        failing_checks: usize,
        failing_tests: usize,
    },
    /// hone rolled the work tree back to a checkpoint.
    Rollback {
        turn: u32,
        to_checkpoint: u32,
        reason: String,
    },
    /// The orchestrator moved from one state to another.
    StateChanged {
        from: super::record::State,
        to: super::record::State,
        reason: String,
    },
    /// A stage of the run began (and the one before it in the same lane ended). With
    /// `attempts:`, each try's `environment`, `session` and `land` carry its `try`.
    Stage {
        stage: Stage,
    },
    RunStarted {
        job: String,
        repo: String,
        branch: String,
        provider: String,
        model: String,
    },
    TurnStarted {
        turn: u32,
        /// Estimated prompt tokens of this request.
        estimated_tokens: u64,
        /// Share of this request's prefix identical to the previous request's (cacheable).
        prefix_reuse: f64,
    },
    /// The history was compacted to fit the context window.
    Compacted {
        turn: u32,
        before_tokens: u64,
        after_tokens: u64,
        reason: String,
    },
    ModelRetry {
        turn: u32,
        attempt: u32,
        class: String,
        reason: String,
        delay_ms: u64,
    },
    /// The model stayed unavailable after its retries: the run goes on with the next one, with
    /// the same history.
    ModelSwitched {
        turn: u32,
        from: String,
        to: String,
        reason: String,
    },
    TurnCompleted {
        turn: u32,
        /// The model that answered (`provider/name`).
        model: String,
        finish_reason: FinishReason,
        tool_calls: usize,
        usage: Option<Usage>,
        duration_ms: u64,
    },
    ToolCallStarted {
        turn: u32,
        call_id: String,
        tool: String,
        args: String,
    },
    ToolCallCompleted {
        turn: u32,
        call_id: String,
        tool: String,
        ok: bool,
        code: Option<Code>,
        /// For `run_cmd`: the command's exit code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// An MCP server of the job started (with the tools offered), failed to start, or stopped
    /// answering during the run.
    McpServer {
        name: String,
        status: super::McpStatus,
        /// The names the model sees for its tools (empty unless it started).
        tools: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A connection through hone's proxy (a policy `network: { allow: [...] }`) ended: allowed
    /// by `rule`, or refused (or failed) for `reason`.
    Egress(Connection),
    /// A setup command (job spec `setup:`) finished; setup stops at the first that fails.
    SetupCompleted {
        name: String,
        passed: bool,
        exit_code: Option<i32>,
        timed_out: bool,
        /// The run was cancelled while the command ran: it was stopped.
        #[serde(default)]
        cancelled: bool,
        duration_ms: u64,
    },
    /// A hook (job spec `hooks:`) ran, or was refused by the policy (`passed: false`, no code).
    HookCompleted {
        kind: String,
        name: String,
        passed: bool,
        exit_code: Option<i32>,
        timed_out: bool,
        /// Files it was given that it changed.
        changed: Vec<String>,
        duration_ms: u64,
    },
    VerifyStarted {
        attempt: u32,
        check: String,
        command: String,
    },
    /// A check finished. Attempt 0 is the baseline, taken before any change.
    VerifyCompleted {
        attempt: u32,
        check: String,
        passed: bool,
        /// It meets its `expect` (for `no-regression`: nothing fails that passed at the baseline).
        accepted: bool,
        new_failures: Vec<String>,
        exit_code: Option<i32>,
        timed_out: bool,
        /// The run was cancelled while the check ran: it was stopped.
        #[serde(default)]
        cancelled: bool,
        /// Why the check's `junit:` file could not be read (then it is never accepted).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        junit_error: Option<String>,
        duration_ms: u64,
    },
    FixRequested {
        attempt: u32,
        failing: Vec<String>,
    },
    Commit {
        sha: String,
        branch: String,
        files_changed: usize,
    },
    Warning {
        code: Code,
        message: String,
    },
    /// An audit record: every policy decision, allowed or denied, with the rule that decided.
    PolicyDecision {
        trace_id: String,
        turn: u32,
        tool: String,
        subject: String,
        allowed: bool,
        rule: String,
    },
    /// In a fleet: the repository was not run, the campaign's pace being spent (`pr.hourly_limit`,
    /// `pr.open_limit`); a `run_completed` with status `waiting` follows.
    Waiting {
        reason: String,
    },
    RunCompleted {
        status: String,
        exit_code: i32,
        duration_ms: u64,
    },
}

/// The stages of a run after intake, in their order (`Event::Stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The run's branch, setup, the tools and the baseline.
    Environment,
    /// The model's turns and the verification rounds.
    Session,
    /// The guards, then the commit (or saved work), and the checkout put back.
    Land,
    /// The push and the PR.
    Ship,
}

impl Stage {
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Environment => "environment",
            Stage::Session => "session",
            Stage::Land => "land",
            Stage::Ship => "ship",
        }
    }
}

/// One connection through hone's egress proxy, as it ended (the `egress` event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connection {
    /// Whose jail asked: `setup`, `commands`, `mcp:NAME`.
    pub purpose: String,
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// The rule that allowed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why it was refused, failed or was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The address hone connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub duration_ms: u64,
}
