//! Gemini on Vertex AI through Vertex's OpenAI-compatible Chat Completions endpoint
//! (`…/endpoints/openapi/chat/completions`, model `google/{name}`): the body is built by the
//! Chat Completions client (`model::openai`) and answers are read by its parser and stream
//! assembler, with what Gemini needs on top: its tool calls told apart by id (`gemini_calls`),
//! their thought signatures kept with the assistant message and sent back with the history (a
//! call that has none gets Google's documented placeholder, which Gemini 3 accepts), and Google's
//! error shape read.

use super::errors::{Behind, from_response};
use super::gemini_calls::{self, Calls};
use crate::model::openai::{OpenAi, parse_completion};
use crate::model::{ChatRequest, ModelError, http, stream};
use crate::protocol::{FinishReason, Message, Reply, Role};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// What stands in for a thought signature Gemini gave no message of ours (a history hone
/// compacted, or one another model wrote), as Google documents for such histories.
pub const PLACEHOLDER_SIGNATURE: &str = "skip_thought_signature_validator";

/// The `reasoning` item a signature is kept in, on the assistant message.
const ITEM: &str = "vertex.gemini.thought_signature";

pub struct Gemini {
    /// The Chat Completions client: its body, URL, auth, limits.
    pub chat: OpenAi,
    /// Answers so far, for ids of calls the server left without one.
    pub answers: AtomicU32,
}

/// The model as the OpenAI-compatible endpoint names it: `google/{name}`.
pub fn wire_model(name: &str) -> String {
    if name.starts_with("google/") { name.to_string() } else { format!("google/{name}") }
}

impl Gemini {
    /// The Chat Completions body, with each call's thought signature back where Gemini gave it.
    pub fn body(&self, req: &ChatRequest) -> Value {
        let mut body = self.chat.body(req);
        if self.chat.text_tools {
            return body;
        }
        let Some(wire) = body.get_mut("messages").and_then(Value::as_array_mut) else {
            return body;
        };
        for (m, w) in req.messages.iter().zip(wire.iter_mut()) {
            if m.role != Role::Assistant || m.tool_calls.is_empty() {
                continue;
            }
            let mut kept = signatures_of(m);
            if kept.is_empty() {
                kept.insert(m.tool_calls[0].id.clone(), PLACEHOLDER_SIGNATURE.to_string());
            }
            for call in w.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
                let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                if let Some(sig) = kept.get(id) {
                    call["extra_content"] = json!({"google": {"thought_signature": sig}});
                }
            }
        }
        body
    }

    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let c = &self.chat;
        let rb = c.auth.apply(c.http.post(&c.url).json(&self.body(req))).await?;
        let resp = http::send(rb, c.request_timeout, c.stream).await?;
        if !resp.status().is_success() {
            let status = resp.status().as_u16();
            let ra = http::retry_after(resp.headers());
            let text = crate::model::http::body_text(resp).await;
            return Err(from_response(status, ra, &text, Behind::OpenAi));
        }
        let n = self.answers.fetch_add(1, Ordering::Relaxed);
        if !c.stream {
            let v: Value = resp.json().await.map_err(|e| http::transport_error(&e))?;
            if let Some(e) = google_error(&v) {
                return Err(e);
            }
            let calls = v.pointer("/choices/0/message/tool_calls").and_then(Value::as_array);
            let signatures =
                calls.into_iter().flatten().enumerate().filter_map(|(i, c)| Some((i, gemini_calls::signature(c)?)));
            let has_id = |i: usize| {
                calls
                    .and_then(|c| c.get(i))
                    .and_then(|c| c.get("id"))
                    .is_some_and(|id| id.as_str().is_some_and(|s| !s.is_empty()))
            };
            return parse_completion(&v).map(|r| self.lift(finish(r, signatures.collect(), has_id, n)));
        }
        let (mut calls, mut asm) = (Calls::default(), stream::Assembler::default());
        http::events(resp, c.idle_timeout, |_, chunk| {
            if let Some(e) = google_error(chunk) {
                return Err(e);
            }
            asm.push(&calls.chunk(chunk)).map(|()| false)
        })
        .await?;
        let reply = asm.finish()?;
        let signatures = calls.signatures().iter().map(|(i, s)| (*i, s.clone())).collect();
        Ok(self.lift(finish(reply, signatures, |i| calls.has_id(i), n)))
    }

    /// With `tool_mode: text`, the calls written in the answer's text, as the Chat Completions
    /// client reads them.
    fn lift(&self, mut reply: Reply) -> Reply {
        if self.chat.text_tools {
            let n = self.chat.calls.fetch_add(1, Ordering::Relaxed);
            reply.message = crate::model::textmode::lift(reply.message, n);
            if !reply.message.tool_calls.is_empty() {
                reply.finish_reason = FinishReason::ToolCalls;
            }
        }
        reply
    }
}

/// A Google-shaped error inside a body or stream (`{"error": {"code", "message", "status"}}`).
fn google_error(v: &Value) -> Option<ModelError> {
    let e = v.get("error")?;
    e.get("status")?.as_str()?;
    let code = e.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(500);
    Some(from_response(code, None, &v.to_string(), Behind::OpenAi))
}

/// The reply with what Gemini leaves out made whole: the thought signatures kept (by call
/// position), an id for each call the server gave none (unique in the run, so that results pair
/// with their calls), and `tool_calls` as the finish reason of an answer with calls (Gemini says
/// `stop`).
fn finish(mut r: Reply, signatures: Vec<(usize, String)>, has_id: impl Fn(usize) -> bool, answer: u32) -> Reply {
    let calls = &mut r.message.tool_calls;
    for (i, c) in calls.iter_mut().enumerate() {
        if !has_id(i) {
            c.id = format!("call_v{answer}_{i}");
        }
    }
    for (i, sig) in signatures {
        if let Some(c) = calls.get(i) {
            r.message.reasoning.push(json!({"type": ITEM, "call_id": c.id, "signature": sig}).to_string());
        }
    }
    if !calls.is_empty() && r.finish_reason == FinishReason::Stop {
        r.finish_reason = FinishReason::ToolCalls;
    }
    r
}

/// The signatures kept on `m`, by call id.
fn signatures_of(m: &Message) -> HashMap<String, String> {
    m.reasoning
        .iter()
        .filter_map(|r| serde_json::from_str::<Value>(r).ok())
        .filter(|v| v["type"] == ITEM)
        .filter_map(|v| Some((v["call_id"].as_str()?.to_string(), v["signature"].as_str()?.to_string())))
        .collect()
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
