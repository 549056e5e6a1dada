//! The Anthropic Messages API client: `tool_use`/`tool_result` blocks, `cache_control` on the
//! stable prefix (system prompt and tools), streamed (SSE event names) and not.

use super::auth::Auth;
use super::http::{self, retry_after};
use super::stream::classify_message;
use super::{ChatRequest, ModelError, ModelErrorKind, check_reply};
use crate::protocol::{FinishReason, Message, Reply, Role, ToolCall, Usage};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub const VERSION: &str = "2023-06-01";

pub struct Anthropic {
    pub http: reqwest::Client,
    /// `{base_url}/v1/messages`.
    pub url: String,
    /// `x-api-key` for Anthropic's own API.
    pub auth: Auth,
    pub model: String,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
}

/// Tool arguments as an object (the API requires one, even when the model wrote bad JSON).
fn input_of(args: &str) -> Value {
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// The request body, with three of Anthropic's four cache breakpoints: the tools and the system
/// prompt (they never change), and the last block of the newest message, so that everything up
/// to the newest turn is read from the cache on the next request (the history only grows, until
/// a compaction rewrites it).
pub fn body(model: &str, max_tokens: u32, temperature: Option<f64>, stream: bool, req: &ChatRequest) -> Value {
    let system: String = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut messages: Vec<Value> = Vec::new();
    for m in req.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks): (&str, Vec<Value>) = match m.role {
            Role::Assistant => {
                let mut b = Vec::new();
                if !m.content.is_empty() {
                    b.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    b.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input_of(&c.arguments)}));
                }
                ("assistant", b)
            }
            Role::Tool => {
                let is_error = m.content.starts_with("error E_");
                (
                    "user",
                    vec![
                        json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content, "is_error": is_error}),
                    ],
                )
            }
            _ => ("user", vec![json!({"type": "text", "text": m.content})]),
        };
        if blocks.is_empty() {
            continue;
        }
        // The API wants strictly alternating roles: merge consecutive turns of the same role.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(arr) = last["content"].as_array_mut() {
                    arr.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    if let Some(block) = messages.last_mut().and_then(|m| m["content"].as_array_mut()).and_then(|c| c.last_mut()) {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut b = json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        "stream": stream,
    });
    if !tools.is_empty() {
        b["tools"] = json!(tools);
    }
    if let Some(t) = temperature {
        b["temperature"] = json!(t);
    }
    b
}

fn usage(u: &Value, into: &mut Usage) {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    if let Some(i) = get("input_tokens") {
        let (read, write) =
            (get("cache_read_input_tokens").unwrap_or(0), get("cache_creation_input_tokens").unwrap_or(0));
        into.prompt_tokens = i.saturating_add(read).saturating_add(write);
        into.cached_prompt_tokens = read;
        into.cache_write_tokens = write;
    }
    if let Some(o) = get("output_tokens") {
        into.completion_tokens = o;
    }
    into.total_tokens = into.prompt_tokens.saturating_add(into.completion_tokens);
}

fn api_error(err: &Value, status: Option<u16>) -> ModelError {
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    let message = err.get("message").and_then(Value::as_str).unwrap_or("the provider reported an error").to_string();
    match kind {
        "overloaded_error" => ModelError::Retryable { kind: ModelErrorKind::Overloaded, message, retry_after: None },
        "rate_limit_error" => ModelError::Retryable { kind: ModelErrorKind::RateLimited, message, retry_after: None },
        "api_error" => ModelError::Retryable { kind: ModelErrorKind::ServerError, message, retry_after: None },
        _ if message.contains("prompt is too long") => {
            ModelError::Permanent { kind: ModelErrorKind::ContextLength, status, message }
        }
        _ => classify_message(status, &format!("{kind} {message}").to_lowercase(), message),
    }
}

/// Assembles a streamed answer from Anthropic's SSE events. Pure.
#[derive(Default)]
pub struct Assembler {
    text: String,
    /// index -> (id, name, partial JSON)
    tools: BTreeMap<u64, (String, String, String)>,
    stop: Option<String>,
    usage: Usage,
    stopped: bool,
    model: Option<String>,
}

impl Assembler {
    pub fn push(&mut self, event: &str, data: &Value) -> Result<(), ModelError> {
        match event {
            "message_start" => {
                usage(&data["message"]["usage"], &mut self.usage);
                self.model = data["message"]["model"].as_str().map(str::to_string);
            }
            "content_block_start" => {
                let b = &data["content_block"];
                if b["type"] == "tool_use" {
                    let idx = data["index"].as_u64().unwrap_or(0);
                    let id = b["id"].as_str().unwrap_or_default().to_string();
                    let name = b["name"].as_str().unwrap_or_default().to_string();
                    self.tools.insert(idx, (id, name, String::new()));
                }
            }
            "content_block_delta" => {
                let d = &data["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => self.text.push_str(d["text"].as_str().unwrap_or_default()),
                    Some("input_json_delta") => {
                        let idx = data["index"].as_u64().unwrap_or(0);
                        if let Some(t) = self.tools.get_mut(&idx) {
                            t.2.push_str(d["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(s) = data["delta"]["stop_reason"].as_str() {
                    self.stop = Some(s.to_string());
                }
                usage(&data["usage"], &mut self.usage);
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(api_error(&data["error"], None)),
            _ => {} // ping, content_block_stop
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Reply, ModelError> {
        let (Some(stop), true) = (self.stop, self.stopped) else {
            return Err(ModelError::retryable(ModelErrorKind::StreamCut, "the stream ended before message_stop"));
        };
        let calls = self
            .tools
            .into_values()
            .map(|(id, name, args)| ToolCall { id, name, arguments: if args.is_empty() { "{}".into() } else { args } })
            .collect();
        check_reply(Reply {
            message: Message::assistant(self.text, calls),
            finish_reason: FinishReason::parse(&stop),
            usage: Some(self.usage),
            model: self.model,
        })
    }
}

/// Parse a non-streamed response.
pub fn parse_message(v: &Value) -> Result<Reply, ModelError> {
    if v["type"] == "error" {
        return Err(api_error(&v["error"], None));
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in v["content"].as_array().into_iter().flatten() {
        match b["type"].as_str() {
            Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => calls.push(ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_string(),
                name: b["name"].as_str().unwrap_or_default().to_string(),
                arguments: b["input"].to_string(),
            }),
            _ => {}
        }
    }
    let mut u = Usage::default();
    usage(&v["usage"], &mut u);
    let stop = v["stop_reason"].as_str().unwrap_or("end_turn");
    check_reply(Reply {
        message: Message::assistant(text, calls),
        finish_reason: FinishReason::parse(stop),
        usage: Some(u),
        model: v["model"].as_str().map(str::to_string),
    })
}

impl Anthropic {
    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let body = body(&self.model, self.max_output_tokens, self.temperature, self.stream, req);
        let rb = self.http.post(&self.url).header("anthropic-version", VERSION).json(&body);
        let rb = self.auth.apply(rb).await?;
        let resp = http::send(rb, self.request_timeout, self.stream).await?;
        if !resp.status().is_success() {
            let status = resp.status().as_u16();
            let ra = retry_after(resp.headers());
            let text = crate::model::http::body_text(resp).await;
            return Err(status_error(status, ra, &text));
        }
        read(resp, self.stream, self.idle_timeout).await
    }
}

/// The error for an answer with error `status` and body `text` (Anthropic's error shape, or
/// anything else, classed by the status).
pub(crate) fn status_error(status: u16, ra: Option<Duration>, text: &str) -> ModelError {
    let v: Value =
        serde_json::from_str(text).unwrap_or(json!({"error": {"message": text.chars().take(500).collect::<String>()}}));
    match api_error(&v["error"], Some(status)) {
        ModelError::Retryable { kind, message, .. } => {
            ModelError::Retryable { kind, message: format!("HTTP {status}: {message}"), retry_after: ra }
        }
        _ if status == 529 || status >= 500 || status == 429 => ModelError::Retryable {
            kind: if status == 429 { ModelErrorKind::RateLimited } else { ModelErrorKind::Overloaded },
            message: format!("HTTP {status}"),
            retry_after: ra,
        },
        ModelError::Permanent { kind, message, .. } => {
            ModelError::Permanent { kind, status: Some(status), message: format!("HTTP {status}: {message}") }
        }
        other => other,
    }
}

/// Read a successful answer: one JSON message, or the SSE events of a streamed one.
pub(crate) async fn read(resp: reqwest::Response, stream: bool, idle: Duration) -> Result<Reply, ModelError> {
    if !stream {
        let v: Value = resp
            .json()
            .await
            .map_err(|e| ModelError::retryable(ModelErrorKind::StreamCut, format!("bad response body: {e}")))?;
        return parse_message(&v);
    }
    let mut asm = Assembler::default();
    http::events(resp, idle, |event, data| asm.push(event, data).map(|()| false)).await?;
    asm.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolSpec;

    #[test]
    fn body_merges_turns_and_caches_the_prefix() {
        let call = ToolCall { id: "tu_1".into(), name: "read_file".into(), arguments: r#"{"path":"a"}"#.into() };
        let bad = ToolCall { id: "tu_2".into(), name: "x".into(), arguments: "{oops".into() };
        let req = ChatRequest {
            messages: vec![
                Message::system("sys"),
                Message::user("go"),
                Message::assistant("ok", vec![call, bad]),
                Message::tool("tu_1", "content"),
                Message::tool("tu_2", "error E_INVALID_ARGS: bad"),
                Message::user("feedback"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let b = body("claude-x", 100, None, true, &req);
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{msgs:#?}");
        assert_eq!(msgs[1]["content"][1]["input"], json!({"path": "a"}));
        assert_eq!(msgs[1]["content"][2]["input"], json!({}));
        let last = msgs[2]["content"].as_array().unwrap();
        assert_eq!(last.len(), 3);
        assert_eq!(last[1]["is_error"], true);
        assert_eq!(last[2]["type"], "text");
        // Cache breakpoints: the tools, the system prompt and the newest block, within the
        // API's limit of four; nothing earlier in the history carries one.
        assert_eq!(last[2]["cache_control"]["type"], "ephemeral");
        let text = b.to_string();
        assert_eq!(text.matches("cache_control").count(), 3, "{text}");
        assert!(msgs[1]["content"].as_array().unwrap().iter().all(|c| c.get("cache_control").is_none()));
    }

    #[test]
    fn assembles_a_streamed_answer() {
        let mut a = Assembler::default();
        for (ev, data) in [
            ("message_start", json!({"message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90}}})),
            ("content_block_start", json!({"index": 0, "content_block": {"type": "text", "text": ""}})),
            ("content_block_delta", json!({"index": 0, "delta": {"type": "text_delta", "text": "Reading."}})),
            (
                "content_block_start",
                json!({"index": 1, "content_block": {"type": "tool_use", "id": "tu", "name": "read_file", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
            ),
            (
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"a.py\"}"}}),
            ),
            ("ping", json!({})),
            ("message_delta", json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}})),
            ("message_stop", json!({})),
        ] {
            a.push(ev, &data).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.message.content, "Reading.");
        assert_eq!(r.message.tool_calls[0].arguments, r#"{"path":"a.py"}"#);
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let want = Usage {
            prompt_tokens: 100,
            completion_tokens: 7,
            total_tokens: 107,
            cached_prompt_tokens: 90,
            cache_write_tokens: 0,
        };
        assert_eq!(r.usage.unwrap(), want);
    }

    #[test]
    fn overload_and_cut_streams_are_retryable() {
        let mut a = Assembler::default();
        let e = a.push("error", &json!({"error": {"type": "overloaded_error", "message": "Overloaded"}})).unwrap_err();
        assert_eq!((e.class(), e.kind().as_str()), ("retryable", "overloaded"));
        let mut a = Assembler::default();
        a.push("content_block_delta", &json!({"index": 0, "delta": {"type": "text_delta", "text": "half"}})).unwrap();
        assert_eq!(a.finish().unwrap_err().kind().as_str(), "stream_cut");
        let e = api_error(
            &json!({"type": "invalid_request_error", "message": "prompt is too long: 300000 tokens"}),
            Some(400),
        );
        assert_eq!(e.kind().as_str(), "context_length");
    }

    /// Token counts too large to add saturate (found while writing the `sse` fuzz target).
    #[test]
    fn token_counts_too_large_to_add_saturate() {
        let mut u = Usage::default();
        usage(&serde_json::json!({"input_tokens": u64::MAX, "cache_read_input_tokens": 1, "output_tokens": 1}), &mut u);
        assert_eq!((u.prompt_tokens, u.total_tokens), (u64::MAX, u64::MAX));
    }
}
