//! Answering one request: record it, refuse it as a real server would (`reject`), or send the
//! next scripted reply (JSON, SSE, a stalled stream, an error status with headers).

use super::{Dialect, Recorded, Refusal, Reply, Shared, reject};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) async fn handle(State(s): State<Arc<Shared>>, headers: HeaderMap, raw: Bytes) -> Response {
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
                    Dialect::OpenAi | Dialect::Responses => {
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
