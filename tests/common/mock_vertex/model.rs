//! The model stand-ins: Claude through `rawPredict`/`streamRawPredict` (Anthropic's Messages API
//! in Vertex's envelope) and Gemini through the OpenAI-compatible endpoint, answering the way
//! Gemini does (each tool call whole, all at `index: 0`, `finish_reason: stop`, a thought
//! signature on the first call that must come back with the history).

use super::{CLAUDE, GEMINI, PROJECT, REGION, Seen, State};
use crate::common::mock_model::{Dialect, Refusal, Turn, reject};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State as With};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::Arc;

type Shared = Arc<State>;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{action}", post(claude))
        .route("/v1/projects/{project}/locations/{region}/endpoints/openapi/chat/completions", post(gemini))
}

/// Google's error body, as a list (the OpenAI-compatible endpoint) or not.
fn google(code: u16, status: &str, message: &str, listed: bool) -> Response {
    let e = json!({"error": {"code": code, "message": message, "status": status}});
    let body = if listed { json!([e]) } else { e };
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

/// What every model request must get right before its body is looked at: a token the stand-in
/// issued, and the project and region of the test.
fn gate(s: &State, h: &HeaderMap, project: &str, region: &str, listed: bool) -> Result<String, Box<Response>> {
    let token = h.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let token = token.unwrap_or("").to_string();
    if !s.valid(&token) {
        s.refuse(format!("a model request without a valid access token ({})", token.len()));
        let m = "Request had invalid authentication credentials. Expected OAuth 2 access token.";
        return Err(Box::new(google(401, "UNAUTHENTICATED", m, listed)));
    }
    if project != PROJECT || region != REGION {
        s.refuse(format!("project {project}, region {region}"));
        let m = format!("Project `{project}` or location `{region}` not found");
        return Err(Box::new(google(404, "NOT_FOUND", &m, listed)));
    }
    Ok(token)
}

/// `RESOURCE_EXHAUSTED` while the test asked for it (the first with `Retry-After: 1`).
fn exhausted(s: &State, listed: bool) -> Option<Response> {
    let mut left = s.exhausted.lock().unwrap();
    if left.0 == 0 {
        return None;
    }
    let first = left.0 == left.1;
    left.0 -= 1;
    let mut r = google(429, "RESOURCE_EXHAUSTED", "Resource exhausted. Please try again later.", listed);
    if first {
        r.headers_mut().insert("retry-after", "1".parse().unwrap());
    }
    Some(r)
}

fn next_turn(s: &State) -> Option<(Turn, usize)> {
    let t = s.queue.lock().unwrap().pop_front()?;
    let mut n = s.served.lock().unwrap();
    *n += 1;
    Some((t, *n))
}

fn sse(frames: Vec<String>) -> Response {
    let body = Body::from_stream(futures_util::stream::iter(
        frames.into_iter().map(|f| Ok::<_, std::io::Error>(Bytes::from(f))),
    ));
    Response::builder().header("content-type", "text/event-stream").body(body).unwrap()
}

async fn claude(
    With(s): With<Shared>,
    Path((project, region, action)): Path<(String, String, String)>,
    h: HeaderMap,
    raw: Bytes,
) -> Response {
    let token = match gate(&s, &h, &project, &region, false) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    s.requests.lock().unwrap().push(Seen { path: action.clone(), token, body: body.clone() });
    let (model, method) = action.split_once(':').unwrap_or((&action, ""));
    let problem = if model != CLAUDE {
        Some(format!("Publisher Model `{model}` not found."))
    } else if body.get("model").is_some() {
        Some("Invalid JSON payload received. Unknown name \"model\": Cannot find field.".into())
    } else if body["anthropic_version"] != "vertex-2023-10-16" {
        Some(format!("anthropic_version: Input should be 'vertex-2023-10-16', got {}", body["anthropic_version"]))
    } else if body["stream"] != (method == "streamRawPredict") || !matches!(method, "streamRawPredict" | "rawPredict") {
        Some(format!("{method} with stream: {}", body["stream"]))
    } else {
        match reject(Dialect::Anthropic, &body) {
            Some(Refusal::BadRequest(why) | Refusal::ServerError(why)) => Some(why),
            None => None,
        }
    };
    if let Some(why) = problem {
        s.refuse(format!("claude: {why}"));
        let e = json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}});
        return (StatusCode::BAD_REQUEST, axum::Json(e)).into_response();
    }
    if let Some(r) = exhausted(&s, false) {
        return r;
    }
    let Some((turn, n)) = next_turn(&s) else {
        s.refuse("claude: no scripted turn left".into());
        return google(400, "FAILED_PRECONDITION", "the stand-in has no turn left", false);
    };
    if method == "streamRawPredict" {
        sse(turn.anthropic_sse(n, true))
    } else {
        axum::Json(turn.anthropic_json(n)).into_response()
    }
}

async fn gemini(
    With(s): With<Shared>,
    Path((project, region)): Path<(String, String)>,
    h: HeaderMap,
    raw: Bytes,
) -> Response {
    let token = match gate(&s, &h, &project, &region, true) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    s.requests.lock().unwrap().push(Seen { path: "chat/completions".into(), token, body: body.clone() });
    let problem = if body["model"] != format!("google/{GEMINI}") {
        Some(format!("Model {} not found", body["model"]))
    } else if let Some(Refusal::BadRequest(why) | Refusal::ServerError(why)) = reject(Dialect::OpenAi, &body) {
        Some(why)
    } else {
        unsigned_call(&s, &body)
    };
    if let Some(why) = problem {
        s.refuse(format!("gemini: {why}"));
        return google(400, "INVALID_ARGUMENT", &why, true);
    }
    if let Some(r) = exhausted(&s, true) {
        return r;
    }
    let Some((turn, n)) = next_turn(&s) else {
        s.refuse("gemini: no scripted turn left".into());
        return google(400, "FAILED_PRECONDITION", "the stand-in has no turn left", true);
    };
    let stream = body["stream"] == true;
    let (chunks, reply) = gemini_answer(&s, &turn, n);
    if stream {
        sse(chunks.into_iter().map(|c| format!("data: {c}\n\n")).collect())
    } else {
        axum::Json(reply).into_response()
    }
}

/// Gemini 3's rule: a function call it signed must come back with its thought signature.
fn unsigned_call(s: &State, body: &Value) -> Option<String> {
    let given = s.signatures.lock().unwrap();
    for (i, m) in body["messages"].as_array().into_iter().flatten().enumerate() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let id = c["id"].as_str().unwrap_or("");
            let back = c.pointer("/extra_content/google/thought_signature").and_then(Value::as_str);
            if let Some(sig) = given.get(id)
                && back != Some(sig.as_str())
            {
                return Some(format!(
                    "Unable to submit request because function call `{}` in the {i}. content block is missing a `thought_signature`.",
                    c["function"]["name"].as_str().unwrap_or("")
                ));
            }
        }
    }
    None
}

/// `turn` as Gemini streams it (chunks) and answers it whole (one completion).
fn gemini_answer(s: &State, turn: &Turn, n: usize) -> (Vec<String>, Value) {
    let model = format!("google/{GEMINI}");
    let chunk = |delta: Value, finish: Value| json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut chunks = Vec::new();
    if !turn.content.is_empty() {
        chunks.push(chunk(json!({"role": "assistant", "content": turn.content}), Value::Null).to_string());
    }
    let mut calls = Vec::new();
    for (i, (name, args)) in turn.calls.iter().enumerate() {
        let id = format!("vtx-call-{n}-{i}");
        let mut call = json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
        if i == 0 {
            let sig =
                base64::engine::general_purpose::STANDARD.encode(format!("thought-{n}-{}", rand::random::<u64>()));
            call["extra_content"] = json!({"google": {"thought_signature": sig}});
            s.signatures.lock().unwrap().insert(id, sig);
        }
        let mut streamed = call.clone();
        streamed["index"] = json!(0);
        chunks.push(chunk(json!({"role": "assistant", "tool_calls": [streamed]}), Value::Null).to_string());
        calls.push(call);
    }
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120});
    let mut last = chunk(json!({}), json!("stop"));
    last["usage"] = usage.clone();
    chunks.push(last.to_string());
    chunks.push("[DONE]".into());
    let mut message = json!({"role": "assistant", "content": if turn.content.is_empty() { Value::Null } else { json!(turn.content) }});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    let reply = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage});
    (chunks, reply)
}
