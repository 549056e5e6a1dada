//! Bedrock's answers as a `Reply`: the Converse response (`output.message`, `stopReason`,
//! `usage`) and the ConverseStream events (`messageStart`, `contentBlockStart` with a
//! `toolUse`, `contentBlockDelta` with text or tool input, `contentBlockStop`, `messageStop`,
//! `metadata` with the usage). Bedrock's `inputTokens` leaves out the tokens read from or
//! written to the prompt cache, so hone's prompt tokens are the three added up.

use crate::model::{ModelError, check_reply};
use crate::protocol::{FinishReason, Message, ModelErrorKind, Reply, ToolCall, Usage};
use serde_json::Value;
use std::collections::BTreeMap;

/// Bedrock's `usage` object as hone's `Usage`.
pub fn usage(u: &Value) -> Usage {
    let get = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (read, write) = (get("cacheReadInputTokens"), get("cacheWriteInputTokens"));
    // Counts from the wire: added without overflow, whatever they are.
    let prompt = get("inputTokens").saturating_add(read).saturating_add(write);
    let completion = get("outputTokens");
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt.saturating_add(completion),
        cached_prompt_tokens: read,
        cache_write_tokens: write,
    }
}

/// Bedrock's `stopReason`.
pub fn finish_reason(stop: &str) -> FinishReason {
    match stop {
        "guardrail_intervened" | "content_filtered" => FinishReason::ContentFilter,
        "model_context_window_exceeded" => FinishReason::Length,
        other => FinishReason::parse(other),
    }
}

/// Tool input as the JSON text hone keeps (`{}` for none).
fn arguments(input: &Value) -> String {
    match input {
        Value::Null => "{}".into(),
        Value::String(s) if s.trim().is_empty() => "{}".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A Converse response body.
pub fn parse_response(v: &Value) -> Result<Reply, ModelError> {
    let Some(content) = v.pointer("/output/message/content").and_then(Value::as_array) else {
        return Err(ModelError::retryable(ModelErrorKind::EmptyAnswer, "the response had no output message"));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        if let Some(t) = block.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if let Some(u) = block.get("toolUse") {
            calls.push(ToolCall {
                id: u.get("toolUseId").and_then(Value::as_str).unwrap_or_default().to_string(),
                name: u.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                arguments: arguments(u.get("input").unwrap_or(&Value::Null)),
            });
        }
    }
    let stop = v.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
    check_reply(Reply {
        message: Message::assistant(text, calls),
        finish_reason: finish_reason(stop),
        usage: v.get("usage").map(usage),
        model: None,
    })
}

/// Assembles a streamed answer from its events. Pure.
#[derive(Default)]
pub struct Assembler {
    text: String,
    /// contentBlockIndex -> (id, name, input JSON so far)
    tools: BTreeMap<u64, (String, String, String)>,
    stop: Option<String>,
    usage: Option<Usage>,
}

impl Assembler {
    /// One event, by its `:event-type`. Unknown events (reasoning, …) are passed over.
    pub fn push(&mut self, event: &str, data: &Value) {
        let index = data.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
        match event {
            "contentBlockStart" => {
                if let Some(u) = data.pointer("/start/toolUse") {
                    let s = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    self.tools.insert(index, (s("toolUseId"), s("name"), String::new()));
                }
            }
            "contentBlockDelta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                if let Some(t) = delta.get("text").and_then(Value::as_str) {
                    self.text.push_str(t);
                } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str)
                    && let Some(tool) = self.tools.get_mut(&index)
                {
                    tool.2.push_str(input);
                }
            }
            "messageStop" => {
                self.stop = Some(data.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn").to_string());
            }
            "metadata" => self.usage = data.get("usage").map(usage),
            _ => {} // messageStart, contentBlockStop
        }
    }

    /// The stream ended: the answer, or a retryable cut when it ended before `messageStop`.
    pub fn finish(self) -> Result<Reply, ModelError> {
        let Some(stop) = self.stop else {
            return Err(ModelError::retryable(ModelErrorKind::StreamCut, "the stream ended before messageStop"));
        };
        let calls = self
            .tools
            .into_values()
            .map(|(id, name, input)| ToolCall { id, name, arguments: arguments(&Value::String(input)) })
            .collect();
        check_reply(Reply {
            message: Message::assistant(self.text, calls),
            finish_reason: finish_reason(&stop),
            usage: self.usage,
            model: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_converse_response_with_text_tools_and_cache_usage() {
        let v = json!({
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Reading."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "read_file", "input": {"path": "a.py"}}}
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 14, "outputTokens": 258, "totalTokens": 1567, "cacheReadInputTokens": 0, "cacheWriteInputTokens": 1295},
            "metrics": {"latencyMs": 1}
        });
        let r = parse_response(&v).unwrap();
        assert_eq!(r.message.content, "Reading.");
        assert_eq!(
            r.message.tool_calls[0],
            ToolCall { id: "tooluse_1".into(), name: "read_file".into(), arguments: r#"{"path":"a.py"}"#.into() }
        );
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (1309, 258, 1567),
            "as Bedrock's totalTokens"
        );
        assert_eq!((u.cached_prompt_tokens, u.cache_write_tokens), (0, 1295));
        assert_eq!(parse_response(&json!({"message": "x"})).unwrap_err().kind(), ModelErrorKind::EmptyAnswer);
        let empty = json!({"output": {"message": {"content": []}}, "stopReason": "end_turn"});
        assert_eq!(parse_response(&empty).unwrap_err().kind(), ModelErrorKind::EmptyAnswer);
    }

    #[test]
    fn assembles_converse_stream_events() {
        let mut a = Assembler::default();
        for (ev, data) in [
            ("messageStart", json!({"role": "assistant", "p": "abc"})),
            ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}})),
            ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "look."}})),
            ("contentBlockStop", json!({"contentBlockIndex": 0})),
            (
                "contentBlockStart",
                json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tu_a", "name": "grep"}}}),
            ),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"pattern\":"}}})),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"x\"}"}}})),
            ("contentBlockStop", json!({"contentBlockIndex": 1})),
            (
                "contentBlockStart",
                json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tu_b", "name": "list_dir"}}}),
            ),
            ("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"reasoningContent": {"text": "hmm"}}})),
            ("messageStop", json!({"stopReason": "tool_use"})),
            (
                "metadata",
                json!({"usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 90}, "metrics": {"latencyMs": 3}}),
            ),
        ] {
            a.push(ev, &data);
        }
        let r = a.finish().unwrap();
        assert_eq!(r.message.content, "Let me look.");
        assert_eq!(r.message.tool_calls.len(), 2);
        assert_eq!(r.message.tool_calls[0].arguments, r#"{"pattern":"x"}"#);
        assert_eq!(r.message.tool_calls[1].arguments, "{}", "a tool with no input");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let want = Usage {
            prompt_tokens: 100,
            completion_tokens: 5,
            total_tokens: 105,
            cached_prompt_tokens: 90,
            cache_write_tokens: 0,
        };
        assert_eq!(r.usage, Some(want));
    }

    #[test]
    fn a_stream_without_message_stop_is_cut_and_one_without_content_is_empty() {
        let mut a = Assembler::default();
        a.push("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "half"}}));
        let e = a.finish().unwrap_err();
        assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::StreamCut));
        let mut a = Assembler::default();
        a.push("messageStop", &json!({"stopReason": "end_turn"}));
        assert_eq!(a.finish().unwrap_err().kind(), ModelErrorKind::EmptyAnswer);
        assert_eq!(finish_reason("guardrail_intervened"), FinishReason::ContentFilter);
        assert_eq!(finish_reason("max_tokens"), FinishReason::Length);
    }
}
