//! A mock OpenAI-compatible model server: replays scripted responses (JSON or SSE, cut or
//! stalled streams, error statuses with headers) and records every request it receives.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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
        json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": msg, "finish_reason": self.finish()}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    }

    /// SSE data payloads: content in two pieces, each tool call's arguments split in two.
    pub fn sse(&self, n: usize, finish: bool) -> Vec<String> {
        let mut out = vec![json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}).to_string()];
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
                json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
                    .to_string(),
            );
            out.push("[DONE]".into());
        }
        out
    }
}

/// Which API the mock speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
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
        json!({"id": "msg", "type": "message", "role": "assistant", "content": content, "stop_reason": self.stop_reason(),
               "usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 20}})
    }

    /// Anthropic SSE frames (`event:` + `data:`), tool input split in two deltas.
    pub fn anthropic_sse(&self, n: usize, finish: bool) -> Vec<String> {
        let f = |ev: &str, data: Value| format!("event: {ev}\ndata: {data}\n\n");
        let mut out = vec![f(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 1}}}),
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

#[derive(Clone, Debug)]
pub enum Reply {
    /// Raw SSE frames, sent as they are (then, if `stall`, the connection stays open).
    Frames(Vec<String>, bool),
    Json(Value),
    Sse(Vec<String>),
    /// Send these chunks, then keep the connection open without sending anything more.
    Stall(Vec<String>),
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub body: Value,
    pub auth: Option<String>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    turns_served: Mutex<usize>,
    /// Requests refused the way a real server refuses them (see `reject`).
    rejected: Mutex<Vec<String>>,
}

pub struct MockModel {
    pub base_url: String,
    pub dialect: Dialect,
    shared: Arc<Shared>,
}

impl MockModel {
    pub async fn start() -> MockModel {
        Self::start_as(Dialect::OpenAi).await
    }

    pub async fn start_as(dialect: Dialect) -> MockModel {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(handle))
            .route("/v1/messages", axum::routing::post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let base_url = match dialect {
            Dialect::OpenAi => format!("http://{addr}/v1"),
            Dialect::Anthropic => format!("http://{addr}"),
        };
        MockModel { base_url, dialect, shared }
    }

    pub fn push(&self, r: Reply) -> &Self {
        self.shared.queue.lock().unwrap().push_back(r);
        self
    }

    /// Queue a turn in the right format for `stream`.
    pub fn turn(&self, t: Turn, stream: bool) -> &Self {
        let n = {
            let mut s = self.shared.turns_served.lock().unwrap();
            *s += 1;
            *s
        };
        self.push(match (self.dialect, stream) {
            (Dialect::OpenAi, true) => Reply::Sse(t.sse(n, true)),
            (Dialect::OpenAi, false) => Reply::Json(t.json(n)),
            (Dialect::Anthropic, true) => Reply::Frames(t.anthropic_sse(n, true), false),
            (Dialect::Anthropic, false) => Reply::Json(t.anthropic_json(n)),
        })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many requests the mock refused as a real server would (bad tool-call arguments).
    pub fn rejected(&self) -> usize {
        self.shared.rejected.lock().unwrap().len()
    }

    pub fn remaining(&self) -> usize {
        self.shared.queue.lock().unwrap().len()
    }

    /// Every recorded request must have valid tool-call pairing.
    pub fn assert_pairing(&self) {
        for (i, r) in self.requests().iter().enumerate() {
            let checked = match self.dialect {
                Dialect::OpenAi => check_pairing(&r.body["messages"]),
                Dialect::Anthropic => check_pairing_anthropic(&r.body["messages"]),
            };
            if let Err(e) = checked {
                panic!(
                    "request {i} breaks tool-call pairing: {e}\n{}",
                    serde_json::to_string_pretty(&r.body["messages"]).unwrap()
                );
            }
        }
    }
}

/// Independent check (not hone's code): each assistant tool call is answered exactly once by
/// the tool messages right after it, and there are no other tool messages.
pub fn check_pairing(messages: &Value) -> Result<(), String> {
    let msgs = messages.as_array().ok_or("messages is not an array")?;
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if m["role"] == "tool" {
            return Err(format!("orphan tool message at {i}"));
        }
        if m["role"] == "assistant"
            && let Some(calls) = m["tool_calls"].as_array()
        {
            let mut ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap_or("")).collect();
            let mut j = i + 1;
            while j < msgs.len() && msgs[j]["role"] == "tool" {
                let id = msgs[j]["tool_call_id"].as_str().unwrap_or("");
                let pos =
                    ids.iter().position(|x| *x == id).ok_or(format!("tool result {id} at {j} answers no open call"))?;
                ids.remove(pos);
                j += 1;
            }
            if !ids.is_empty() {
                return Err(format!("calls {ids:?} of message {i} have no result"));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    Ok(())
}

/// Anthropic: each assistant `tool_use` is answered by exactly one `tool_result` in the very next
/// (user) message, roles alternate, and no `tool_result` answers anything else.
pub fn check_pairing_anthropic(messages: &Value) -> Result<(), String> {
    let msgs = messages.as_array().ok_or("messages is not an array")?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 && msgs[i - 1]["role"] == m["role"] {
            return Err(format!("messages {} and {i} have the same role", i - 1));
        }
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        let results: Vec<String> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["tool_use_id"].as_str().unwrap_or("").to_string())
            .collect();
        let mut expected = std::mem::take(&mut open);
        for r in results {
            let pos = expected
                .iter()
                .position(|e| *e == r)
                .ok_or(format!("tool_result {r} in message {i} answers no open tool_use"))?;
            expected.remove(pos);
        }
        if !expected.is_empty() {
            return Err(format!("tool_use {expected:?} not answered in message {i}"));
        }
        open = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap_or("").to_string())
            .collect();
    }
    Ok(())
}

async fn handle(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let auth = headers
        .get("authorization")
        .or_else(|| headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.requests.lock().unwrap().push(Recorded { body: body.clone(), auth });
    if let Some(why) = reject(&body) {
        s.rejected.lock().unwrap().push(why.clone());
        let msg = json!({"error": {"code": 500, "message": why, "type": "server_error"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, msg.to_string()).into_response();
    }
    let next = s.queue.lock().unwrap().pop_front();
    match next {
        None => {
            (StatusCode::BAD_REQUEST, "{\"error\":{\"message\":\"mock: no scripted response left\"}}").into_response()
        }
        Some(Reply::Json(v)) => axum::Json(v).into_response(),
        Some(Reply::Sse(chunks)) => sse(chunks, false),
        Some(Reply::Frames(frames, stall)) => raw_sse(frames, stall),
        Some(Reply::Stall(chunks)) => sse(chunks, true),
        Some(Reply::Status { code, headers, body }) => {
            let mut r = Response::builder().status(code);
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.body(Body::from(body)).unwrap()
        }
    }
}

/// What llama.cpp's `llama-server` refuses: a history whose tool-call arguments are not JSON
/// (HTTP 500 "Failed to parse tool call arguments as JSON").
fn reject(body: &Value) -> Option<String> {
    for m in body["messages"].as_array().into_iter().flatten() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let args = c["function"]["arguments"].as_str().unwrap_or("");
            if let Err(e) = serde_json::from_str::<Value>(args) {
                return Some(format!("Failed to parse tool call arguments as JSON: {e}"));
            }
        }
    }
    None
}

fn sse(chunks: Vec<String>, stall: bool) -> Response {
    raw_sse(chunks.into_iter().map(|c| format!("data: {c}\n\n")).collect(), stall)
}

fn raw_sse(frames: Vec<String>, stall: bool) -> Response {
    let frames: Vec<Result<Bytes, std::io::Error>> = frames.into_iter().map(|c| Ok(Bytes::from(c))).collect();
    let head = futures_util::stream::iter(frames);
    let body = if stall {
        Body::from_stream(futures_util::StreamExt::chain(head, futures_util::stream::pending()))
    } else {
        Body::from_stream(head)
    };
    Response::builder().header("content-type", "text/event-stream").body(body).unwrap()
}
