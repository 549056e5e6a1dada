//! Plain serde types shared by every layer: chat messages, tool calls and results, usage,
//! and the `Event` stream behind `events.jsonl` and `--json`. Nothing here does I/O.

use crate::error::Code;
use serde::{Deserialize, Serialize};

/// Version of the event and report schemas; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One chat message, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self { role: Role::System, content: text.into(), tool_calls: vec![], tool_call_id: None }
    }
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: text.into(), tool_calls: vec![], tool_call_id: None }
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self { role: Role::Assistant, content: text.into(), tool_calls, tool_call_id: None }
    }
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { role: Role::Tool, content: text.into(), tool_calls: vec![], tool_call_id: Some(call_id.into()) }
    }
}

/// A tool call as the model made it. `arguments` is the raw JSON text, unparsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool offered to the model: name, description, JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Token usage of one model request, or summed over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// Why a model request failed. Each kind has a stable name, used in reports and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelErrorKind {
    RateLimited,
    ServerError,
    Overloaded,
    Timeout,
    Connection,
    StreamCut,
    IdleTimeout,
    EmptyAnswer,
    ContextLength,
    Auth,
    NotFound,
    BadRequest,
    ScriptExhausted,
    Cancelled,
}

impl ModelErrorKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::ServerError => "server_error",
            Self::Overloaded => "overloaded",
            Self::Timeout => "timeout",
            Self::Connection => "connection",
            Self::StreamCut => "stream_cut",
            Self::IdleTimeout => "idle_timeout",
            Self::EmptyAnswer => "empty_answer",
            Self::ContextLength => "context_length",
            Self::Auth => "auth",
            Self::NotFound => "not_found",
            Self::BadRequest => "bad_request",
            Self::ScriptExhausted => "script_exhausted",
            Self::Cancelled => "cancelled",
        }
    }
}

/// How a fault was absorbed: retried as it was, handled by changing course (an error result,
/// a compaction, a rollback, a note to the model), or the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultClass {
    Retryable,
    Recoverable,
    Permanent,
}

impl FaultClass {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Retryable => "retryable",
            Self::Recoverable => "recoverable",
            Self::Permanent => "permanent",
        }
    }
}

/// A fault hone absorbed during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// A model request that failed and was retried.
    Model(ModelErrorKind),
    /// Tool arguments that were not JSON or did not match the schema.
    InvalidToolCall,
    /// A degenerate answer, dropped and asked for again.
    Repetition,
    /// The same call with the same result three times: the model was warned.
    LoopWarning,
    /// The same call with the same result five times: the run ended.
    Loop,
    /// The provider said the context was too long: the history was compacted.
    ContextLength,
    /// A step made the checks worse and was rolled back.
    Rollback,
}

impl FaultKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Model(k) => k.as_str(),
            Self::InvalidToolCall => "invalid_tool_call",
            Self::Repetition => "repetition",
            Self::LoopWarning => "loop_warning",
            Self::Loop => "loop",
            Self::ContextLength => "context_length",
            Self::Rollback => "rollback",
        }
    }

    pub const fn class(self) -> FaultClass {
        match self {
            Self::Model(_) => FaultClass::Retryable,
            Self::Loop => FaultClass::Permanent,
            _ => FaultClass::Recoverable,
        }
    }
}

macro_rules! serialize_as_str {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    )*};
}
serialize_as_str!(ModelErrorKind, FaultClass, FaultKind);

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(ModelErrorKind, FaultClass, FaultKind);

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// One complete model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub message: Message,
    pub finish_reason: FinishReason,
    pub usage: Option<Usage>,
}

/// What a tool returned. `content` is what the model sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    pub content: String,
    /// For a command: its exit code (`None` when it did not run or was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self { ok: true, code: None, content: content.into(), exit_code: None }
    }
    pub fn err(code: Code, message: impl Into<String>) -> Self {
        Self { ok: false, code: Some(code), content: format!("error {code}: {}", message.into()), exit_code: None }
    }
}

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
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The model set or updated its plan.
    PlanUpdated {
        turn: u32,
        plan: serde_json::Value,
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
        from: String,
        to: String,
        reason: String,
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
    TurnCompleted {
        turn: u32,
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
    RunCompleted {
        status: String,
        exit_code: i32,
        duration_ms: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_records_are_flat_tagged_json() {
        let r = EventRecord {
            schema_version: SCHEMA_VERSION,
            ts: "2026-01-01T00:00:00Z".into(),
            run_id: "r1".into(),
            repo: None,
            event: Event::TurnStarted { turn: 3, estimated_tokens: 10, prefix_reuse: 0.5 },
        };
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v["type"], "turn_started");
        assert_eq!(v["turn"], 3);
        assert_eq!(v["schema_version"], 1);
        let back: EventRecord = serde_json::from_value(v).unwrap();
        assert!(matches!(back.event, Event::TurnStarted { turn: 3, .. }));
    }

    #[test]
    fn finish_reasons_from_both_vendors() {
        assert_eq!(FinishReason::parse("tool_use"), FinishReason::ToolCalls);
        assert_eq!(FinishReason::parse("max_tokens"), FinishReason::Length);
        assert_eq!(FinishReason::parse("weird"), FinishReason::Other("weird".into()));
    }
}
