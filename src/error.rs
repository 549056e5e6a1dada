//! Stable error codes shared by every layer, and the crate's top-level error type.

use crate::diag::Diagnostic;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable, machine-readable error code. The strings never change once published:
/// reports, events and tool results carry them, and users match on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Code {
    /// The policy refused an action.
    #[serde(rename = "E_POLICY_DENIED")]
    PolicyDenied,
    /// A file-system operation failed.
    #[serde(rename = "E_IO")]
    Io,
    /// A tool or command ran past its time limit.
    #[serde(rename = "E_TOOL_TIMEOUT")]
    ToolTimeout,
    /// Tool arguments were not JSON, failed the schema, or named an unknown tool.
    #[serde(rename = "E_INVALID_ARGS")]
    InvalidArgs,
    /// A patch did not apply, or a write conflicted with the file's current content.
    #[serde(rename = "E_CONFLICT")]
    Conflict,
    /// A verify command (lint, test, build) failed.
    #[serde(rename = "E_BUILD_FAIL")]
    BuildFail,
    /// The model or its API failed, or answered outside the protocol.
    #[serde(rename = "E_MODEL")]
    Model,
    /// The job spec is invalid.
    #[serde(rename = "E_SPEC")]
    Spec,
    /// The policy file is invalid.
    #[serde(rename = "E_POLICY")]
    Policy,
    /// A git operation failed.
    #[serde(rename = "E_GIT")]
    Git,
    /// A run budget (turns, wall time, tokens) ran out.
    #[serde(rename = "E_BUDGET")]
    Budget,
    /// The run was cancelled by a signal.
    #[serde(rename = "E_CANCELLED")]
    Cancelled,
    /// A path does not exist.
    #[serde(rename = "E_NOT_FOUND")]
    NotFound,
    /// The forge (GitHub) API failed or refused a request.
    #[serde(rename = "E_FORGE")]
    Forge,
    /// A verify command cannot run at all (not found, not executable, no JUnit file).
    #[serde(rename = "E_CHECK")]
    Check,
    /// A setup command (installing dependencies) failed: nothing else ran.
    #[serde(rename = "E_SETUP")]
    Setup,
    /// An MCP server failed: it could not start, stopped answering, or a call to it failed.
    #[serde(rename = "E_MCP")]
    Mcp,
    /// The model ended its work as blocked (`finish` with `outcome: blocked`).
    #[serde(rename = "E_BLOCKED")]
    Blocked,
    /// The model's answer never satisfied the job's `output:` schema.
    #[serde(rename = "E_OUTPUT")]
    Output,
    /// Telemetry could not be exported (or its variables are wrong): a warning, never the
    /// run's outcome.
    #[serde(rename = "E_TELEMETRY")]
    Telemetry,
    /// hone itself failed (a worker panicked): a bug to report, with the logs.
    #[serde(rename = "E_INTERNAL")]
    Internal,
}

impl Code {
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::PolicyDenied => "E_POLICY_DENIED",
            Code::Io => "E_IO",
            Code::ToolTimeout => "E_TOOL_TIMEOUT",
            Code::InvalidArgs => "E_INVALID_ARGS",
            Code::Conflict => "E_CONFLICT",
            Code::BuildFail => "E_BUILD_FAIL",
            Code::Model => "E_MODEL",
            Code::Spec => "E_SPEC",
            Code::Policy => "E_POLICY",
            Code::Git => "E_GIT",
            Code::Budget => "E_BUDGET",
            Code::Cancelled => "E_CANCELLED",
            Code::NotFound => "E_NOT_FOUND",
            Code::Forge => "E_FORGE",
            Code::Check => "E_CHECK",
            Code::Setup => "E_SETUP",
            Code::Mcp => "E_MCP",
            Code::Blocked => "E_BLOCKED",
            Code::Output => "E_OUTPUT",
            Code::Telemetry => "E_TELEMETRY",
            Code::Internal => "E_INTERNAL",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error a user sees: what went wrong (`message`, never with a rendered `error[…]` inside),
/// what to do about it, and where, for problems in a file hone reads. This is also each entry of
/// the report's `errors`; it is rendered for a terminal only at the edge (`render`).
#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize, schemars::JsonSchema)]
#[error("{code}: {message}")]
pub struct HoneError {
    pub code: Code,
    /// What went wrong, in plain text (for a located problem: `file:line:col at `key`: …` lines).
    pub message: String,
    /// What the user can do about it.
    #[serde(default)]
    pub hint: Option<String>,
    /// The problems in a spec, policy or fleet file, each with its position and help.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub located: Vec<Diagnostic>,
}

impl HoneError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), hint: None, located: Vec::new() }
    }

    /// Problems found in a file, each at its position.
    pub fn located(code: Code, diagnostics: Vec<Diagnostic>) -> Self {
        let message = diagnostics.iter().map(Diagnostic::summary).collect::<Vec<_>>().join("\n");
        Self { code, message, hint: None, located: diagnostics }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Render for stderr: `error[CODE]: message` and the help, or each located problem with its
    /// source line and caret.
    pub fn render(&self) -> String {
        if !self.located.is_empty() {
            return self.located.iter().map(|d| d.render(self.code.as_str())).collect::<Vec<_>>().join("\n");
        }
        match &self.hint {
            Some(h) => format!("error[{}]: {}\n  = help: {}", self.code, self.message, h),
            None => format!("error[{}]: {}", self.code, self.message),
        }
    }

    /// The first line of the message, at most `max` characters (an ellipsis when cut).
    pub fn headline(&self, max: usize) -> String {
        let first = self.message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        let short: String = first.chars().take(max).collect();
        let cut = if short.len() < first.len() { "…" } else { "" };
        format!("{short}{cut}")
    }
}

impl From<git2::Error> for HoneError {
    fn from(e: git2::Error) -> Self {
        HoneError::new(Code::Git, format!("git: {}", e.message()))
    }
}

pub type Result<T, E = HoneError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_to_their_stable_strings() {
        for code in [
            Code::PolicyDenied,
            Code::Io,
            Code::ToolTimeout,
            Code::InvalidArgs,
            Code::Conflict,
            Code::BuildFail,
            Code::Model,
            Code::Spec,
            Code::Policy,
            Code::Git,
            Code::Budget,
            Code::Cancelled,
            Code::NotFound,
            Code::Forge,
            Code::Check,
            Code::Setup,
            Code::Mcp,
            Code::Blocked,
            Code::Output,
            Code::Internal,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
