//! A scripted turn as Bedrock answers it: the Converse JSON body, or the ConverseStream events
//! in real event-stream framing written by AWS's own encoder (`aws-smithy-eventstream`), each
//! event's payload padded with a `p` field as Bedrock pads them.

use crate::common::mock_model::Turn;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

/// The usage every answer reports: 40 new input tokens, 60 read from the cache.
pub fn usage() -> Value {
    json!({"inputTokens": 40, "outputTokens": 20, "totalTokens": 120, "cacheReadInputTokens": 60, "cacheWriteInputTokens": 0})
}

fn stop_reason(t: &Turn) -> &'static str {
    if t.calls.is_empty() { "end_turn" } else { "tool_use" }
}

fn input_of(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or(json!({"_unparsed": args}))
}

/// The Converse response for turn number `n`.
pub fn converse_json(t: &Turn, n: usize) -> Value {
    let mut content = Vec::new();
    if !t.content.is_empty() {
        content.push(json!({"text": t.content}));
    }
    for (i, (name, args)) in t.calls.iter().enumerate() {
        content
            .push(json!({"toolUse": {"toolUseId": format!("tooluse_{n}_{i}"), "name": name, "input": input_of(args)}}));
    }
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(t),
        "usage": usage(),
        "metrics": {"latencyMs": 42}
    })
}

/// One frame as AWS's encoder writes it.
pub fn frame(headers: Vec<(&'static str, &'static str)>, payload: &[u8]) -> Vec<u8> {
    let headers = headers.into_iter().map(|(k, v)| Header::new(k, HeaderValue::String(v.into()))).collect();
    let mut out: Vec<u8> = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&Message::new_from_parts(headers, payload.to_vec()), &mut out)
        .expect("the frame is written");
    out
}

fn event(kind: &'static str, mut payload: Value) -> Vec<u8> {
    payload["p"] = json!("abcdefghijklmnopqrstuvwxyzABCDEFGH");
    let headers = vec![(":message-type", "event"), (":event-type", kind), (":content-type", "application/json")];
    frame(headers, payload.to_string().as_bytes())
}

/// An exception the stream ends with (`:exception-type` is the member's name: `throttlingException`, …).
pub fn exception(kind: &'static str, message: &str) -> Vec<u8> {
    let headers =
        vec![(":message-type", "exception"), (":exception-type", kind), (":content-type", "application/json")];
    frame(headers, json!({"message": message}).to_string().as_bytes())
}

/// The ConverseStream frames of turn number `n`: text in two deltas, each tool's input in two.
pub fn converse_stream(t: &Turn, n: usize) -> Vec<Vec<u8>> {
    let mut out = vec![event("messageStart", json!({"role": "assistant"}))];
    let mut idx = 0;
    let halves = |s: &str| {
        let mid = s.char_indices().map(|(i, _)| i).find(|i| *i >= s.len() / 2).unwrap_or(0);
        (s[..mid].to_string(), s[mid..].to_string())
    };
    if !t.content.is_empty() {
        let (a, b) = halves(&t.content);
        for part in [a, b].into_iter().filter(|p| !p.is_empty()) {
            out.push(event("contentBlockDelta", json!({"contentBlockIndex": idx, "delta": {"text": part}})));
        }
        out.push(event("contentBlockStop", json!({"contentBlockIndex": idx})));
        idx += 1;
    }
    for (i, (name, args)) in t.calls.iter().enumerate() {
        let start = json!({"toolUse": {"toolUseId": format!("tooluse_{n}_{i}"), "name": name}});
        out.push(event("contentBlockStart", json!({"contentBlockIndex": idx, "start": start})));
        let (a, b) = halves(args);
        for part in [a, b] {
            out.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": idx, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        out.push(event("contentBlockStop", json!({"contentBlockIndex": idx})));
        idx += 1;
    }
    out.push(event("messageStop", json!({"stopReason": stop_reason(t)})));
    out.push(event("metadata", json!({"usage": usage(), "metrics": {"latencyMs": 42}})));
    out
}
