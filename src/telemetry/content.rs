//! Content capture (the GenAI conventions' opt-in): the messages of a model request and its
//! answer, a tool call's arguments and result, as the transcript has them, each through the
//! redactor and bounded. Only a job that asks (`telemetry.capture_content`) gets any.

use super::attrs::{MAX_CONTENT, bounded};
use crate::protocol::transcript::Entry;
use crate::protocol::{Message, Role};
use crate::redact::Redactor;
use opentelemetry::KeyValue;
use serde_json::{Value, json};

pub struct Content<'a> {
    pub said: &'a [Entry],
    pub redactor: &'a Redactor,
}

fn role(r: &Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// A message in the conventions' shape: a role and its parts.
fn message(m: &Message) -> Value {
    let mut parts = Vec::new();
    if !m.content.is_empty() {
        match &m.tool_call_id {
            Some(id) => parts.push(json!({"type": "tool_call_response", "id": id, "response": m.content})),
            None => parts.push(json!({"type": "text", "content": m.content})),
        }
    }
    for c in &m.tool_calls {
        parts.push(json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}));
    }
    json!({"role": role(&m.role), "parts": parts})
}

impl Content<'_> {
    /// `text` redacted, then bounded.
    fn value(&self, key: &'static str, text: &str) -> KeyValue {
        KeyValue::new(key, bounded(&self.redactor.apply(text), MAX_CONTENT))
    }

    /// A model request's new messages and its answer.
    pub fn chat(&self, turn: u32) -> Vec<KeyValue> {
        let mut out = Vec::new();
        for e in self.said {
            match e {
                Entry::Request { turn: t, messages, .. } if *t == turn => {
                    let v = Value::Array(messages.iter().map(message).collect());
                    out.push(self.value("gen_ai.input.messages", &v.to_string()));
                }
                Entry::Response { turn: t, message: m, .. } if *t == turn => {
                    out.push(self.value("gen_ai.output.messages", &Value::Array(vec![message(m)]).to_string()));
                }
                _ => {}
            }
        }
        out
    }

    /// A tool call's arguments (from the answer that made it) and its result.
    pub fn tool(&self, call_id: &str) -> Vec<KeyValue> {
        let mut out = Vec::new();
        for e in self.said {
            match e {
                Entry::Response { message, .. } => {
                    let args = message.tool_calls.iter().find(|c| c.id == call_id);
                    out.extend(args.map(|c| self.value("gen_ai.tool.call.arguments", &c.arguments)));
                }
                Entry::ToolResult { call_id: id, content, .. } if id == call_id => {
                    out.push(self.value("gen_ai.tool.call.result", content));
                }
                _ => {}
            }
        }
        out
    }
}
