//! Assembles an OpenAI-style streamed answer from its chunks: text deltas, tool-call deltas
//! (joined by `index`), the finish reason and the final usage chunk. Pure: no I/O.

use super::{ModelError, ModelErrorKind};
use crate::protocol::{FinishReason, Message, Reply, ToolCall, Usage};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Default, Debug)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default, Debug)]
pub struct Assembler {
    content: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl Assembler {
    /// Feed one parsed `data:` chunk.
    pub fn push(&mut self, chunk: &Value) -> Result<(), ModelError> {
        if let Some(err) = chunk.get("error") {
            return Err(error_chunk(err));
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(parse_usage(u));
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            self.model = Some(m.to_string());
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                self.content.push_str(t);
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (pos, c) in calls.iter().enumerate() {
                    let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                    let p = self.calls.entry(index).or_default();
                    if let Some(id) = c.get("id").and_then(Value::as_str) {
                        p.id.push_str(id);
                    }
                    if let Some(f) = c.get("function") {
                        if let Some(n) = f.get("name").and_then(Value::as_str) {
                            p.name.push_str(n);
                        }
                        match f.get("arguments") {
                            Some(Value::String(a)) => p.arguments.push_str(a),
                            Some(v @ Value::Object(_)) => p.arguments.push_str(&v.to_string()),
                            _ => {}
                        }
                    }
                }
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        Ok(())
    }

    /// The stream ended: build the answer, or fail if it ended without a finish reason.
    pub fn finish(self) -> Result<Reply, ModelError> {
        let Some(finish) = self.finish else {
            return Err(ModelError::retryable(
                ModelErrorKind::StreamCut,
                "the stream ended before the model finished its answer",
            ));
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(i, p)| ToolCall {
                id: if p.id.is_empty() { format!("call_{i}") } else { p.id },
                name: p.name,
                arguments: p.arguments,
            })
            .collect();
        super::check_reply(Reply {
            message: Message::assistant(self.content, tool_calls),
            finish_reason: FinishReason::parse(&finish),
            usage: self.usage,
            model: self.model,
        })
    }
}

pub fn parse_usage(u: &Value) -> Usage {
    let get = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let prompt = get("prompt_tokens");
    let completion = get("completion_tokens");
    let total = u.get("total_tokens").and_then(Value::as_u64).unwrap_or(prompt.saturating_add(completion));
    let cached = u.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: total,
        cached_prompt_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// An `{"error": {...}}` object inside a stream or body.
pub fn error_chunk(err: &Value) -> ModelError {
    let message = err.get("message").and_then(Value::as_str).unwrap_or("the provider reported an error").to_string();
    let sig = format!(
        "{} {} {}",
        err.get("type").map(Value::to_string).unwrap_or_default(),
        err.get("code").map(Value::to_string).unwrap_or_default(),
        message
    )
    .to_lowercase();
    classify_message(None, &sig, message)
}

/// Classify by status and by the provider's error text.
pub fn classify_message(status: Option<u16>, signature: &str, message: String) -> ModelError {
    if signature.contains("context_length")
        || signature.contains("maximum context")
        || signature.contains("context window")
    {
        return ModelError::Permanent { kind: ModelErrorKind::ContextLength, status, message };
    }
    let permanent = [
        "invalid_request",
        "bad_request",
        "authentication",
        "permission",
        "forbidden",
        "not_found",
        "unsupported",
        "content_filter",
        "invalid_api_key",
    ];
    match status {
        Some(429) => ModelError::Retryable { kind: ModelErrorKind::RateLimited, message, retry_after: None },
        Some(s) if s >= 500 => ModelError::Retryable { kind: ModelErrorKind::ServerError, message, retry_after: None },
        Some(401 | 403) => ModelError::Permanent { kind: ModelErrorKind::Auth, status, message },
        Some(404) => ModelError::Permanent { kind: ModelErrorKind::NotFound, status, message },
        Some(s) if (400..500).contains(&s) => {
            ModelError::Permanent { kind: ModelErrorKind::BadRequest, status, message }
        }
        _ if signature.contains("overloaded") || signature.contains("rate_limit") => {
            ModelError::Retryable { kind: ModelErrorKind::RateLimited, message, retry_after: None }
        }
        _ if permanent.iter().any(|p| signature.contains(p)) => {
            ModelError::Permanent { kind: ModelErrorKind::BadRequest, status, message }
        }
        _ => ModelError::Retryable { kind: ModelErrorKind::ServerError, message, retry_after: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn joins_tool_call_deltas_by_index() {
        let mut a = Assembler::default();
        a.push(&json!({"choices":[{"delta":{"content":"Let me "}}]})).unwrap();
        a.push(&json!({"choices":[{"delta":{"content":"look.","tool_calls":[{"index":1,"id":"b","function":{"name":"grep","arguments":"{\"pat"}}]}}]})).unwrap();
        a.push(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]})).unwrap();
        a.push(&json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]}}]}))
            .unwrap();
        a.push(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.py\"}"}}]},"finish_reason":"tool_calls"}]})).unwrap();
        a.push(&json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}})).unwrap();
        let r = a.finish().unwrap();
        assert_eq!(r.message.content, "Let me look.");
        assert_eq!(
            r.message.tool_calls[0],
            ToolCall { id: "a".into(), name: "read_file".into(), arguments: "{\"path\":\"a.py\"}".into() }
        );
        assert_eq!(r.message.tool_calls[1].arguments, "{\"pattern\":\"x\"}");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.usage.unwrap().total_tokens, 15);
    }

    #[test]
    fn a_stream_without_finish_is_retryable() {
        let mut a = Assembler::default();
        a.push(&json!({"choices":[{"delta":{"content":"half an ans"}}]})).unwrap();
        let e = a.finish().unwrap_err();
        assert_eq!((e.class(), e.kind().as_str()), ("retryable", "stream_cut"));
    }

    #[test]
    fn an_empty_answer_is_retryable() {
        let mut a = Assembler::default();
        a.push(&json!({"choices":[{"delta":{},"finish_reason":"stop"}]})).unwrap();
        assert_eq!(a.finish().unwrap_err().kind().as_str(), "empty_answer");
    }

    #[test]
    fn error_chunks_are_classified() {
        let mut a = Assembler::default();
        let e = a.push(&json!({"error":{"message":"This model's maximum context length is 8192","code":"context_length_exceeded"}})).unwrap_err();
        assert_eq!(e.kind().as_str(), "context_length");
        assert_eq!(classify_message(Some(429), "", "slow down".into()).class(), "retryable");
        assert_eq!(classify_message(Some(503), "", "x".into()).class(), "retryable");
        for s in [400, 401, 403, 404] {
            assert_eq!(classify_message(Some(s), "", "x".into()).class(), "permanent", "{s}");
        }
    }

    /// Token counts come from the wire: added without overflow, whatever they are (found while
    /// writing the `sse` fuzz target; an overflow panics where overflow checks are on).
    #[test]
    fn token_counts_too_large_to_add_saturate() {
        let u = parse_usage(&json!({"prompt_tokens": u64::MAX, "completion_tokens": 1}));
        assert_eq!((u.prompt_tokens, u.total_tokens), (u64::MAX, u64::MAX));
    }
}
