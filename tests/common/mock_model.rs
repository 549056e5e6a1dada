//! A mock model server (OpenAI-compatible or Anthropic Messages): replays scripted responses
//! (JSON or SSE, cut or stalled streams, error statuses with headers) and records every request
//! it receives.
//!
//! It is strict the way real servers are: a request it would refuse is answered with the error a
//! real server gives, and counted as a rejection (see `reject`). A test declares the rejections it
//! expects with `expect_rejections`; any other number fails the test when the mock is dropped.

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

/// A tool call the mock handed to the model's client: (tool name, raw arguments).
pub type Served = (String, String);

pub struct Shared {
    dialect: Dialect,
    /// Each scripted reply with the tool calls it carries (none for raw replies).
    queue: Mutex<VecDeque<(Reply, Vec<Served>)>>,
    requests: Mutex<Vec<Recorded>>,
    turns_served: Mutex<usize>,
    /// The tool calls of every reply sent so far, in order.
    served: Mutex<Vec<Served>>,
    /// Requests refused the way a real server refuses them (see `reject`).
    rejected: Mutex<Vec<String>>,
}

impl Shared {
    /// The tool calls served so far.
    pub fn served(&self) -> Vec<Served> {
        self.served.lock().unwrap().clone()
    }
}

/// Every mock started in this process, by base URL, so that the run helper can find what the
/// model's tools were asked to write (`served_by`).
static REGISTRY: Mutex<Vec<(String, std::sync::Weak<Shared>)>> = Mutex::new(Vec::new());

/// The mock listening at `base_url`, while it lives.
pub fn served_by(base_url: &str) -> Option<Arc<Shared>> {
    let base = base_url.trim_end_matches('/');
    let mut reg = REGISTRY.lock().unwrap();
    reg.retain(|(_, w)| w.strong_count() > 0);
    reg.iter().find(|(u, _)| u.trim_end_matches('/') == base).and_then(|(_, w)| w.upgrade())
}

pub struct MockModel {
    pub base_url: String,
    pub dialect: Dialect,
    shared: Arc<Shared>,
    /// How many requests the test expects the mock to refuse.
    expected_rejections: Mutex<usize>,
}

impl Drop for MockModel {
    /// A rejection the test did not declare fails the test (unless it is failing already).
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let rejected = self.shared.rejected.lock().unwrap().clone();
        let expected = *self.expected_rejections.lock().unwrap();
        if rejected.len() != expected {
            panic!(
                "the mock model refused {} request(s) as a real server would, but the test declared {expected} \
                 (expect_rejections): {rejected:#?}",
                rejected.len()
            );
        }
    }
}

impl MockModel {
    pub async fn start() -> MockModel {
        Self::start_as(Dialect::OpenAi).await
    }

    pub async fn start_as(dialect: Dialect) -> MockModel {
        let shared = Arc::new(Shared {
            dialect,
            queue: Mutex::default(),
            requests: Mutex::default(),
            turns_served: Mutex::default(),
            served: Mutex::default(),
            rejected: Mutex::default(),
        });
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
        REGISTRY.lock().unwrap().push((base_url.clone(), Arc::downgrade(&shared)));
        MockModel { base_url, dialect, shared, expected_rejections: Mutex::new(0) }
    }

    /// Declare that `n` requests in this test are to be refused (the mock checks on drop).
    pub fn expect_rejections(&self, n: usize) -> &Self {
        *self.expected_rejections.lock().unwrap() = n;
        self
    }

    /// Queue a raw reply (it carries no tool calls the run helper would count as served).
    pub fn push(&self, r: Reply) -> &Self {
        self.shared.queue.lock().unwrap().push_back((r, vec![]));
        self
    }

    /// Queue a turn in the right format for `stream`.
    pub fn turn(&self, t: Turn, stream: bool) -> &Self {
        let n = {
            let mut s = self.shared.turns_served.lock().unwrap();
            *s += 1;
            *s
        };
        let reply = match (self.dialect, stream) {
            (Dialect::OpenAi, true) => Reply::Sse(t.sse(n, true)),
            (Dialect::OpenAi, false) => Reply::Json(t.json(n)),
            (Dialect::Anthropic, true) => Reply::Frames(t.anthropic_sse(n, true), false),
            (Dialect::Anthropic, false) => Reply::Json(t.anthropic_json(n)),
        };
        self.shared.queue.lock().unwrap().push_back((reply, t.calls.clone()));
        self
    }

    /// The tool calls the mock has handed out so far.
    pub fn served(&self) -> Vec<Served> {
        self.shared.served()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many requests the mock refused as a real server would (see `reject`).
    pub fn rejected(&self) -> usize {
        self.shared.rejected.lock().unwrap().len()
    }

    /// Why each refused request was refused.
    pub fn rejections(&self) -> Vec<String> {
        self.shared.rejected.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.shared.queue.lock().unwrap().len()
    }

    /// Every recorded request must have valid tool-call pairing. (The mock refuses a request
    /// that breaks it anyway; this says which one.)
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
/// (user) message, before any other block of it; roles alternate; no `tool_result` answers
/// anything else; and every `tool_use.input` is an object.
pub fn check_pairing_anthropic(messages: &Value) -> Result<(), String> {
    let msgs = messages.as_array().ok_or("messages is not an array")?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 && msgs[i - 1]["role"] == m["role"] {
            return Err(format!("messages {} and {i} have the same role", i - 1));
        }
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        for (k, b) in blocks.iter().enumerate() {
            if b["type"] == "tool_use" && !b["input"].is_object() {
                return Err(format!("messages.{i}.content.{k}.tool_use.input: Input should be a valid dictionary"));
            }
        }
        if let Some(first_other) = blocks.iter().position(|b| b["type"] != "tool_result")
            && blocks[first_other..].iter().any(|b| b["type"] == "tool_result")
        {
            return Err(format!("message {i}: tool_result blocks must come before any other content"));
        }
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

async fn handle(State(s): State<Arc<Shared>>, headers: HeaderMap, raw: Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&raw);
    let body = parsed.as_ref().cloned().unwrap_or(Value::Null);
    let auth = headers
        .get("authorization")
        .or_else(|| headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.requests.lock().unwrap().push(Recorded { body: body.clone(), auth });
    let refusal = match &parsed {
        Err(e) => Some(Refusal::BadRequest(format!("We could not parse the JSON body of your request: {e}"))),
        Ok(b) => reject(s.dialect, b),
    };
    if let Some(r) = refusal {
        let (status, msg) = match &r {
            Refusal::BadRequest(why) => (
                StatusCode::BAD_REQUEST,
                match s.dialect {
                    Dialect::OpenAi => {
                        json!({"error": {"message": why, "type": "invalid_request_error", "param": "messages", "code": null}})
                    }
                    Dialect::Anthropic => {
                        json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}})
                    }
                },
            ),
            Refusal::ServerError(why) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": {"code": 500, "message": why, "type": "server_error"}}),
            ),
        };
        s.rejected.lock().unwrap().push(format!("HTTP {}: {}", status.as_u16(), msg["error"]["message"]));
        return (status, msg.to_string()).into_response();
    }
    let next = s.queue.lock().unwrap().pop_front();
    let next = next.map(|(reply, calls)| {
        s.served.lock().unwrap().extend(calls);
        reply
    });
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

/// How a real server refuses a request.
pub enum Refusal {
    /// 400, as OpenAI and Anthropic answer an invalid request.
    BadRequest(String),
    /// 500, as llama.cpp's `llama-server` answers tool-call arguments it cannot parse.
    ServerError(String),
}

/// What real servers refuse (a body that is not JSON is refused before this):
/// - OpenAI-compatible: tool-call `arguments` that are not JSON (llama-server: HTTP 500 "Failed to
///   parse tool call arguments as JSON"); a `tool` message that answers no open call ("messages
///   with role 'tool' must be a response to a preceding message with 'tool_calls'") or a call
///   without its result ("An assistant message with 'tool_calls' must be followed by tool
///   messages responding to each 'tool_call_id'"): HTTP 400.
/// - Anthropic: a `tool_use.input` that is not an object, broken `tool_use`/`tool_result`
///   pairing, or roles that do not alternate: HTTP 400 `invalid_request_error`.
pub fn reject(dialect: Dialect, body: &Value) -> Option<Refusal> {
    if !body.is_object() {
        return Some(Refusal::BadRequest("the request body must be a JSON object".into()));
    }
    match dialect {
        Dialect::OpenAi => {
            for m in body["messages"].as_array().into_iter().flatten() {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let args = c["function"]["arguments"].as_str().unwrap_or("");
                    if let Err(e) = serde_json::from_str::<Value>(args) {
                        return Some(Refusal::ServerError(format!("Failed to parse tool call arguments as JSON: {e}")));
                    }
                }
            }
            check_pairing(&body["messages"]).err().map(|e| {
                Refusal::BadRequest(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls', and each 'tool_call_id' must be answered ({e})"
                ))
            })
        }
        Dialect::Anthropic => check_pairing_anthropic(&body["messages"]).err().map(Refusal::BadRequest),
    }
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
