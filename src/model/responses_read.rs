//! Reading a Responses API answer: a whole response object, or its stream of events
//! (`response.output_item.added`/`.done`, `response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed`/`.incomplete`/`.failed`,
//! `error`). Pure: no I/O.

use super::stream::error_chunk;
use super::{ModelError, ModelErrorKind, check_reply};
use crate::protocol::{FinishReason, Message, Reply, ToolCall, Usage};
use serde_json::Value;
use std::collections::BTreeMap;

/// Parse a whole response object (a non-streamed answer, or the one `response.completed` carries).
pub fn parse_response(v: &Value) -> Result<Reply, ModelError> {
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Err(error_chunk(e));
    }
    let items: Vec<Value> = v.get("output").and_then(Value::as_array).cloned().unwrap_or_default();
    reply(&items, v)
}

/// The reply made of output `items`, with the status, usage and model of `response`.
fn reply(items: &[Value], response: &Value) -> Result<Reply, ModelError> {
    let (mut text, mut calls, mut reasoning) = (String::new(), Vec::new(), Vec::new());
    for item in items {
        match item["type"].as_str() {
            Some("message") => {
                for c in item["content"].as_array().into_iter().flatten() {
                    if let Some(t) = c["text"].as_str().or_else(|| c["refusal"].as_str()) {
                        text.push_str(t);
                    }
                }
            }
            Some("function_call") => calls.push(ToolCall {
                id: item["call_id"].as_str().unwrap_or_default().to_string(),
                name: item["name"].as_str().unwrap_or_default().to_string(),
                arguments: match item["arguments"].as_str() {
                    Some(a) if !a.trim().is_empty() => a.to_string(),
                    _ => "{}".to_string(),
                },
            }),
            Some("reasoning") => reasoning.push(item.to_string()),
            _ => {}
        }
    }
    let finish =
        match (response["status"].as_str(), response.pointer("/incomplete_details/reason").and_then(Value::as_str)) {
            (Some("incomplete"), Some("max_output_tokens")) => FinishReason::Length,
            (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
            (Some("incomplete"), other) => FinishReason::Other(other.unwrap_or("incomplete").to_string()),
            _ if !calls.is_empty() => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
    // Reasoning cut at the output limit before any text or call is an answer to continue, not
    // an empty one to ask again: sent back, the reasoning lets the model go on from where it
    // was cut instead of starting over (and being cut at the same place).
    // (Only reasoning that can go back: a compatible server's, without its encrypted content,
    // cannot, and asking again is all there is.)
    let continued = finish == FinishReason::Length
        && reasoning.iter().any(|r| serde_json::from_str::<Value>(r).is_ok_and(|v| v["encrypted_content"].is_string()));
    let mut message = Message::assistant(text, calls);
    message.reasoning = reasoning;
    let reply = Reply {
        message,
        finish_reason: finish,
        usage: response.get("usage").filter(|u| u.is_object()).map(usage),
        model: response["model"].as_str().map(str::to_string),
    };
    if continued { Ok(reply) } else { check_reply(reply) }
}

fn usage(u: &Value) -> Usage {
    let get = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let (prompt, completion) = (get("/input_tokens"), get("/output_tokens"));
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: u.get("total_tokens").and_then(Value::as_u64).unwrap_or(prompt.saturating_add(completion)),
        cached_prompt_tokens: get("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

/// Builds a reply from stream events: the output items by index (deltas as they come, each
/// replaced by its final form at `output_item.done`), then the status, usage and model of the
/// final `response.completed` (or `.incomplete`).
#[derive(Default, Debug)]
pub struct Assembler {
    items: BTreeMap<u64, Value>,
    done: Option<Value>,
}

impl Assembler {
    /// Feed one event; `Ok(true)` once the response is complete.
    pub fn push(&mut self, ev: &Value) -> Result<bool, ModelError> {
        let index = ev["output_index"].as_u64().unwrap_or(0);
        match ev["type"].as_str().unwrap_or_default() {
            "response.output_item.added" | "response.output_item.done" => {
                self.items.insert(index, ev["item"].clone());
            }
            "response.output_text.delta" => {
                let item =
                    self.items.entry(index).or_insert_with(|| serde_json::json!({"type": "message", "content": []}));
                let delta = ev["delta"].as_str().unwrap_or_default();
                append_text(item, ev["content_index"].as_u64().unwrap_or(0) as usize, delta);
            }
            "response.function_call_arguments.delta" => {
                if let Some(item) = self.items.get_mut(&index).filter(|i| i.is_object()) {
                    let so_far = item["arguments"].as_str().unwrap_or_default().to_string();
                    item["arguments"] = Value::String(so_far + ev["delta"].as_str().unwrap_or_default());
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = Some(ev["response"].clone());
                return Ok(true);
            }
            "response.failed" => {
                let err = ev.pointer("/response/error").cloned().unwrap_or_default();
                return Err(error_chunk(&err));
            }
            "error" => return Err(error_chunk(ev.get("error").unwrap_or(ev))),
            _ => {}
        }
        Ok(false)
    }

    pub fn finish(self) -> Result<Reply, ModelError> {
        let Some(response) = self.done else {
            return Err(ModelError::retryable(ModelErrorKind::StreamCut, "the stream ended before response.completed"));
        };
        // The final response's own output, when it has one, is the authority.
        let final_items = response["output"].as_array().filter(|o| !o.is_empty()).cloned();
        let items = final_items.unwrap_or_else(|| self.items.into_values().collect());
        reply(&items, &response)
    }
}

fn append_text(item: &mut Value, content_index: usize, delta: &str) {
    let Some(fields) = item.as_object_mut() else { return };
    let Some(content) = fields.get_mut("content").and_then(Value::as_array_mut) else {
        fields.insert("content".into(), serde_json::json!([{"type": "output_text", "text": delta}]));
        return;
    };
    // An index far past the parts so far (from the wire) adds one part, not that many.
    let content_index = content_index.min(content.len());
    while content.len() <= content_index {
        content.push(serde_json::json!({"type": "output_text", "text": ""}));
    }
    let Some(part) = content[content_index].as_object_mut() else { return };
    let so_far = part.get("text").and_then(Value::as_str).unwrap_or_default().to_string();
    part.insert("text".into(), Value::String(so_far + delta));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_response_gives_text_calls_reasoning_usage_and_model() {
        let v = json!({"status": "completed", "model": "gpt-5-codex-2026", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"},
        ], "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 20, "total_tokens": 120}});
        let r = parse_response(&v).unwrap();
        assert_eq!((r.message.content.as_str(), r.message.tool_calls[0].id.as_str()), ("Reading.", "call_1"));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert!(r.message.reasoning[0].contains("gAAA"));
        let u = r.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.cached_prompt_tokens, u.total_tokens), (100, 64, 120));
        assert_eq!(r.model.as_deref(), Some("gpt-5-codex-2026"));
        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "par"}]}]});
        assert_eq!(parse_response(&cut).unwrap().finish_reason, FinishReason::Length);
    }

    #[test]
    fn stream_events_are_assembled_and_faults_classified() {
        let mut a = Assembler::default();
        let evs = [
            json!({"type": "response.created", "response": {}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "look."}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"pattern\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"x\"}"}),
        ];
        for e in &evs {
            assert!(!a.push(e).unwrap());
        }
        assert!(a.push(&json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 5, "output_tokens": 2}}})).unwrap());
        let r = a.finish().unwrap();
        assert_eq!(r.message.content, "Let me look.");
        assert_eq!(r.message.tool_calls[0].arguments, "{\"pattern\":\"x\"}");
        assert_eq!(r.usage.unwrap().total_tokens, 7);

        let mut cut = Assembler::default();
        cut.push(&evs[2]).unwrap();
        assert_eq!(cut.finish().unwrap_err().kind(), ModelErrorKind::StreamCut);
        let failed =
            json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}});
        assert!(matches!(Assembler::default().push(&failed), Err(ModelError::Retryable { .. })));
        let limited = json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"});
        assert_eq!(Assembler::default().push(&limited).unwrap_err().kind(), ModelErrorKind::RateLimited);
        let bad = json!({"type": "error", "code": "invalid_request_error", "message": "no"});
        assert!(matches!(Assembler::default().push(&bad), Err(ModelError::Permanent { .. })));
    }

    /// Events that do not fit the item they name (found while writing the `sse` fuzz target): an
    /// item that is not an object is passed over, never indexed into (a panic); a content index
    /// far past the parts so far adds one part, never that many (unbounded memory).
    #[test]
    fn events_at_odds_with_their_item_are_bounded_and_never_panic() {
        let mut a = Assembler::default();
        for item in [json!(5), json!("x"), json!([1]), json!({"content": [5]})] {
            a.push(&json!({"type": "response.output_item.added", "output_index": 0, "item": item})).unwrap();
            a.push(&json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"}))
                .unwrap();
            a.push(&json!({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"})).unwrap();
        }
        let mut far = Assembler::default();
        far.push(&json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "a"}))
            .unwrap();
        far.push(
            &json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 100_000, "delta": "b"}),
        )
        .unwrap();
        assert_eq!(far.items[&0]["content"].as_array().map(Vec::len), Some(2));
        let huge = json!({"input_tokens": u64::MAX, "output_tokens": 1});
        assert_eq!(usage(&huge).total_tokens, u64::MAX, "counts from the wire add without overflow");
    }
}
