//! The calls a run made on the model's behalf: its tool calls and the job's hooks.

use crate::error::Code;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ToolCallRecord {
    pub turn: u32,
    pub id: String,
    pub name: String,
    /// The arguments, shortened for the report.
    pub args: String,
    pub ok: bool,
    pub code: Option<Code>,
    pub duration_ms: u64,
    /// `run_cmd`: the command as the model gave it (redacted, at most 400 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `run_cmd`: its exit code (null when it did not run, was denied or timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// One run of a hook (`hooks:` in the job spec).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct HookRecord {
    /// `after_edit` or `before_verify`.
    pub kind: String,
    pub name: String,
    /// The turn it followed (for `before_verify`, the turn that ended in verification).
    pub turn: u32,
    /// The command as run, with `{files}` substituted.
    pub command: String,
    pub passed: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Files it was given that it changed.
    pub changed: Vec<String>,
    /// The policy rule that refused it, when it was not run.
    pub denied: Option<String>,
}
