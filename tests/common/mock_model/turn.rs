//! A scripted assistant turn (text and tool calls) and how it is rendered in each dialect:
//! OpenAI chat-completion JSON or SSE chunks, Anthropic Messages JSON or SSE frames.

use serde_json::{Value, json};

/// The model id the mock says answered (not the one asked for: providers resolve aliases).
pub const MODEL_ID: &str = "mock-model-2026-11-01";

/// One logical assistant turn, rendered as JSON or as SSE chunks.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    pub content: String,
    pub calls: Vec<(String, String)>,
}

pub fn text(content: &str) -> Turn {
    Turn { content: content.into(), calls: vec![] }
}

pub fn call(name: &str, args: Value) -> Turn {
    Turn { content: String::new(), calls: vec![(name.into(), args.to_string())] }
}

impl Turn {
    pub fn with_call(mut self, name: &str, raw_args: &str) -> Turn {
        self.calls.push((name.into(), raw_args.into()));
        self
    }

    fn finish(&self) -> &'static str {
        if self.calls.is_empty() { "stop" } else { "tool_calls" }
    }

    pub fn json(&self, n: usize) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| json!({"id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        let mut msg = json!({"role": "assistant", "content": if self.content.is_empty() { Value::Null } else { json!(self.content) }});
        if !calls.is_empty() {
            msg["tool_calls"] = json!(calls);
        }
        json!({"id": "x", "object": "chat.completion", "model": MODEL_ID, "choices": [{"index": 0, "message": msg, "finish_reason": self.finish()}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                         "prompt_tokens_details": {"cached_tokens": 64}}})
    }

    /// SSE data payloads: content in two pieces, each tool call's arguments split in two.
    pub fn sse(&self, n: usize, finish: bool) -> Vec<String> {
        let mut out =
            vec![json!({"model": MODEL_ID, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}).to_string()];
        let half = self.content.len() / 2;
        let (a, b) =
            self.content.split_at(self.content.char_indices().map(|(i, _)| i).find(|i| *i >= half).unwrap_or(0));
        for piece in [a, b] {
            if !piece.is_empty() {
                out.push(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string());
            }
        }
        for (i, (name, args)) in self.calls.iter().enumerate() {
            let mid = args.char_indices().map(|(i, _)| i).find(|i| *i >= args.len() / 2).unwrap_or(0);
            out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": &args[..mid]}}]}}]}).to_string());
            out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": &args[mid..]}}]}}]}).to_string());
        }
        if finish {
            out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": self.finish()}]}).to_string());
            out.push(
                json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                                                "prompt_tokens_details": {"cached_tokens": 64}}})
                .to_string(),
            );
            out.push("[DONE]".into());
        }
        out
    }
}

impl Turn {
    fn stop_reason(&self) -> &'static str {
        if self.calls.is_empty() { "end_turn" } else { "tool_use" }
    }

    pub fn anthropic_json(&self, n: usize) -> Value {
        let mut content = Vec::new();
        if !self.content.is_empty() {
            content.push(json!({"type": "text", "text": self.content}));
        }
        for (i, (name, args)) in self.calls.iter().enumerate() {
            let input: Value = serde_json::from_str(args).unwrap_or(json!({"_unparsed": args}));
            content.push(json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": input}));
        }
        json!({"id": "msg", "type": "message", "role": "assistant", "model": MODEL_ID, "content": content, "stop_reason": self.stop_reason(),
               "usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 20}})
    }

    /// Anthropic SSE frames (`event:` + `data:`), tool input split in two deltas.
    pub fn anthropic_sse(&self, n: usize, finish: bool) -> Vec<String> {
        let f = |ev: &str, data: Value| format!("event: {ev}\ndata: {data}\n\n");
        let mut out = vec![f(
            "message_start",
            json!({"type": "message_start", "message": {"model": MODEL_ID, "usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 1}}}),
        )];
        let mut idx = 0;
        if !self.content.is_empty() {
            out.push(f(
                "content_block_start",
                json!({"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}}),
            ));
            out.push(f("content_block_delta", json!({"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": self.content}})));
            out.push(f("content_block_stop", json!({"type": "content_block_stop", "index": idx})));
            idx += 1;
        }
        for (i, (name, args)) in self.calls.iter().enumerate() {
            out.push(f("content_block_start", json!({"type": "content_block_start", "index": idx, "content_block": {"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": {}}})));
            let mid = args.char_indices().map(|(i, _)| i).find(|i| *i >= args.len() / 2).unwrap_or(0);
            for part in [&args[..mid], &args[mid..]] {
                out.push(f("content_block_delta", json!({"type": "content_block_delta", "index": idx, "delta": {"type": "input_json_delta", "partial_json": part}})));
            }
            out.push(f("content_block_stop", json!({"type": "content_block_stop", "index": idx})));
            idx += 1;
        }
        out.push(f("ping", json!({"type": "ping"})));
        if finish {
            out.push(f("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": self.stop_reason()}, "usage": {"output_tokens": 20}})));
            out.push(f("message_stop", json!({"type": "message_stop"})));
        }
        out
    }
}
