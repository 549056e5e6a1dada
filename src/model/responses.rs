//! The OpenAI Responses API client (`POST {base_url}/responses`), which OpenAI's newest coding
//! models are served through: input items, function calls and their outputs, reasoning items
//! carried between turns (`store: false`, with their encrypted content), streamed or not, with
//! the same time limits, retries and error classes as the other clients.

use super::auth::Auth;
use super::responses_read::{Assembler, parse_response};
use super::{ChatRequest, ModelError, http};
use crate::protocol::{Message, Reply, Role};
use serde_json::{Value, json};
use std::time::Duration;

pub struct Responses {
    pub http: reqwest::Client,
    /// `{base_url}/responses`.
    pub url: String,
    /// `Authorization: Bearer KEY` when a key is set.
    pub auth: Auth,
    pub model: String,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    /// OpenAI itself (not a compatible server): ask for encrypted reasoning and send a
    /// `prompt_cache_key`.
    pub openai: bool,
    pub prompt_cache_key: Option<String>,
}

impl Responses {
    pub fn body(&self, req: &ChatRequest) -> Value {
        let instructions: Vec<&str> =
            req.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
        let input: Vec<Value> = req.messages.iter().flat_map(input_items).collect();
        let mut body = json!({
            "model": self.model,
            "instructions": instructions.join("\n\n"),
            "input": input,
            "stream": self.stream,
            // Nothing is kept on OpenAI's side: each request carries the whole conversation.
            "store": false,
            "max_output_tokens": self.max_output_tokens,
        });
        if !req.tools.is_empty() {
            // `strict: false`: hone's schemas have optional parameters, which strict mode refuses.
            body["tools"] = req
                .tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": false}))
                .collect();
            body["tool_choice"] = json!("auto");
            body["parallel_tool_calls"] = json!(true);
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        if self.openai {
            // Reasoning comes back encrypted, to be sent back with the next request.
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        if let Some(key) = &self.prompt_cache_key {
            body["prompt_cache_key"] = json!(key);
        }
        body
    }

    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let wait = super::openai::Wait { limit: self.request_timeout, stream: self.stream };
        let resp = super::openai::post(&self.http, &self.url, &self.auth, &self.body(req), wait).await?;
        if self.stream {
            let mut asm = Assembler::default();
            http::events(resp, self.idle_timeout, |_, event| asm.push(event)).await?;
            asm.finish()
        } else {
            let v: Value = resp.json().await.map_err(|e| http::transport_error(&e))?;
            parse_response(&v)
        }
    }
}

/// The input items of one message (system messages are the `instructions`).
fn input_items(m: &Message) -> Vec<Value> {
    match m.role {
        Role::System => vec![],
        Role::User => {
            vec![json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": m.content}]})]
        }
        Role::Tool => vec![json!({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})],
        Role::Assistant => {
            // As the model produced them: its reasoning, its text, its calls.
            let mut items: Vec<Value> = m.reasoning.iter().filter_map(|r| reasoning_item(r)).collect();
            if !m.content.is_empty() {
                items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m.content}]}));
            }
            for c in &m.tool_calls {
                items.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}));
            }
            items
        }
    }
}

/// A reasoning item as it goes back: without its `id`, which names an item nothing stored; one
/// without its encrypted content (a server that did not give it) cannot go back at all.
fn reasoning_item(raw: &str) -> Option<Value> {
    let mut v: Value = serde_json::from_str(raw).ok()?;
    v.get("encrypted_content").and_then(Value::as_str)?;
    v.as_object_mut()?.remove("id");
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolSpec};

    fn client() -> Responses {
        Responses {
            http: reqwest::Client::new(),
            url: "http://x/v1/responses".into(),
            auth: Auth::None,
            model: "gpt-5-codex".into(),
            temperature: None,
            max_output_tokens: 4096,
            stream: true,
            request_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            openai: true,
            prompt_cache_key: Some("hone-run".into()),
        }
    }

    #[test]
    fn the_history_becomes_input_items_with_reasoning_carried_back() {
        let mut assistant = Message::assistant(
            "Reading it.",
            vec![ToolCall { id: "call_1".into(), name: "read_file".into(), arguments: "{\"path\":\"a\"}".into() }],
        );
        assistant.reasoning =
            vec![r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}"#.into()];
        let req = ChatRequest {
            messages: vec![
                Message::system("be good"),
                Message::user("fix it"),
                assistant,
                Message::tool("call_1", "text"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let b = client().body(&req);
        assert_eq!(b["instructions"], "be good");
        assert_eq!(
            (b["store"].as_bool(), b["include"][0].as_str()),
            (Some(false), Some("reasoning.encrypted_content"))
        );
        let types: Vec<&str> = b["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["message", "reasoning", "message", "function_call", "function_call_output"]);
        assert_eq!(b["input"][1], json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}));
        assert_eq!(b["input"][3]["call_id"], "call_1");
        assert_eq!(b["input"][4], json!({"type": "function_call_output", "call_id": "call_1", "output": "text"}));
        assert_eq!(b["tools"][0]["strict"], false);
        // A server that gave no encrypted content: that reasoning cannot go back.
        assert!(reasoning_item(r#"{"type":"reasoning","id":"rs_2","summary":[]}"#).is_none());
        assert_eq!(b["prompt_cache_key"], "hone-run");
    }
}
