//! Plain serde types shared by every layer: chat messages, tool calls and results, usage, the
//! kinds of faults, the records of a run (plan, states, PR), and the `Event` stream behind
//! `events.jsonl` and `--json`. Nothing here does I/O.

mod events;
mod kinds;
mod record;

pub use events::{Connection, Event, EventRecord, Stage};
pub use kinds::{FaultClass, FaultKind, ModelErrorKind};
pub use record::*;
pub mod transcript;

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
    /// For `Role::Assistant` from the Responses API: its reasoning items (JSON, with their
    /// encrypted content), sent back as they came with the next request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self { role: Role::System, content: text.into(), tool_calls: vec![], tool_call_id: None, reasoning: vec![] }
    }
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: text.into(), tool_calls: vec![], tool_call_id: None, reasoning: vec![] }
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self { role: Role::Assistant, content: text.into(), tool_calls, tool_call_id: None, reasoning: vec![] }
    }
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: text.into(),
            tool_calls: vec![],
            tool_call_id: Some(call_id.into()),
            reasoning: vec![],
        }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    /// Every prompt token, cached or not.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Prompt tokens the provider read from its prompt cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`).
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

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
    /// The model id the provider says answered (it may differ from the one asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
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
            try_no: None,
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
