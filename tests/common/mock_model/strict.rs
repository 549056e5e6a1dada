//! What real servers refuse: broken tool-call pairing and tool-call arguments that are not JSON,
//! checked independently of hone's code so that the mock can refuse them as a real server would.

use super::Dialect;
use serde_json::Value;

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
        Dialect::Responses => super::check_input(body).err().map(Refusal::BadRequest),
    }
}
