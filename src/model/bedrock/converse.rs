//! The Converse request body: hone's history as `system` and strictly alternating `messages`
//! (`text`, `toolUse`, and the tool results merged into the next user turn as `toolResult`
//! blocks), the tools as `toolConfig`, the output limit and temperature as `inferenceConfig`,
//! and `cachePoint` blocks for the models whose prompts Bedrock caches.
//!
//! Prompt caching, by model id (a bare id, a cross-region inference profile such as
//! `us.anthropic.claude-sonnet-4-5-…`, or a foundation-model ARN that contains the id):
//! - Anthropic Claude (`anthropic.claude-…`) from Claude 3.7 Sonnet and 3.5 Haiku on (Sonnet,
//!   Opus and Haiku 4 and later): cache points after the system prompt, after the tools and
//!   after the newest message (3 of the 4 Bedrock allows);
//! - Amazon Nova Micro, Lite, Pro and Premier (`amazon.nova-…`): after the system prompt and the
//!   newest message (Bedrock caches no tools for Nova);
//! - any other model, and an application inference profile ARN (which does not name its
//!   model): none, since Bedrock refuses a cache point a model does not support.

use crate::model::ChatRequest;
use crate::protocol::{Message, Role};
use serde_json::{Value, json};

/// Where the request carries cache points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CachePoints {
    pub system: bool,
    pub tools: bool,
    pub messages: bool,
}

/// Claude generations before prompt caching: no cache points for them.
const CLAUDE_WITHOUT_CACHE: &[&str] =
    &["claude-v2", "claude-instant", "claude-3-haiku", "claude-3-sonnet", "claude-3-opus", "claude-3-5-sonnet"];
const NOVA_WITH_CACHE: &[&str] = &["nova-micro", "nova-lite", "nova-pro", "nova-premier"];

/// The cache points `model` supports (see the module's list).
pub fn cache_points(model: &str) -> CachePoints {
    let m = model.to_ascii_lowercase();
    if let Some(at) = m.find("anthropic.claude-") {
        let family = &m[at + "anthropic.".len()..];
        if !CLAUDE_WITHOUT_CACHE.iter().any(|old| family.starts_with(old)) {
            return CachePoints { system: true, tools: true, messages: true };
        }
    }
    if let Some(at) = m.find("amazon.") {
        let family = &m[at + "amazon.".len()..];
        if NOVA_WITH_CACHE.iter().any(|n| family.starts_with(n)) {
            return CachePoints { system: true, tools: false, messages: true };
        }
    }
    CachePoints::default()
}

fn cache_point() -> Value {
    json!({"cachePoint": {"type": "default"}})
}

/// Tool arguments as an object (Converse requires one, even when the model wrote bad JSON).
fn input_of(args: &str) -> Value {
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// A tool-use id as Bedrock takes it (`[a-zA-Z0-9_-]{1,64}`): the id itself when it is one (as
/// Bedrock's, OpenAI's and Anthropic's are), else `tool_` and a hash of it, the same for the call
/// and its result (another provider's odd or missing id, before a fallback).
fn tool_id(id: &str) -> String {
    use sha2::Digest;
    if (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return id.to_string();
    }
    format!("tool_{}", super::sigv4::hex(&sha2::Sha256::digest(id.as_bytes())[..16]))
}

/// The request body for `req`.
pub fn body(req: &ChatRequest, max_tokens: u32, temperature: Option<f64>, cache: CachePoints) -> Value {
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let mut b = json!({"messages": messages(&req.messages, cache.messages)});
    if !system.is_empty() {
        let mut blocks = vec![json!({"text": system.join("\n\n")})];
        if cache.system {
            blocks.push(cache_point());
        }
        b["system"] = json!(blocks);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut spec = json!({"name": t.name, "inputSchema": {"json": t.parameters}});
                if !t.description.trim().is_empty() {
                    spec["description"] = json!(t.description);
                }
                json!({"toolSpec": spec})
            })
            .collect();
        if cache.tools {
            tools.push(cache_point());
        }
        b["toolConfig"] = json!({"tools": tools});
    }
    let mut inference = json!({"maxTokens": max_tokens});
    if let Some(t) = temperature {
        inference["temperature"] = json!(t);
    }
    b["inferenceConfig"] = inference;
    b
}

/// The content blocks of one message and the role they go under.
fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::Assistant => {
            let mut b = Vec::new();
            if !m.content.trim().is_empty() {
                b.push(json!({"text": m.content}));
            }
            for c in &m.tool_calls {
                b.push(
                    json!({"toolUse": {"toolUseId": tool_id(&c.id), "name": c.name, "input": input_of(&c.arguments)}}),
                );
            }
            ("assistant", b)
        }
        Role::Tool => {
            let status = if m.content.starts_with("error E_") { "error" } else { "success" };
            // A blank text block is refused: an empty result still says something.
            let text = if m.content.trim().is_empty() { "(no output)" } else { m.content.as_str() };
            let id = tool_id(m.tool_call_id.as_deref().unwrap_or_default());
            let result = json!({"toolUseId": id, "content": [{"text": text}], "status": status});
            ("user", vec![json!({"toolResult": result})])
        }
        Role::User if !m.content.trim().is_empty() => ("user", vec![json!({"text": m.content})]),
        Role::User | Role::System => ("user", vec![]),
    }
}

/// The conversation as alternating turns: consecutive messages of one role are one turn, with
/// its tool results first (they must answer the previous turn's calls before anything else).
fn messages(history: &[Message], cache_newest: bool) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in history.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = blocks(m);
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut().and_then(|last| (last["role"] == role).then(|| last["content"].as_array_mut())) {
            Some(Some(content)) => {
                for b in blocks {
                    if b.get("toolResult").is_some() {
                        let first_other = content.iter().position(|c| c.get("toolResult").is_none());
                        content.insert(first_other.unwrap_or(content.len()), b);
                    } else {
                        content.push(b);
                    }
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    if cache_newest && let Some(content) = out.last_mut().and_then(|m| m["content"].as_array_mut()) {
        content.push(cache_point());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolSpec};

    fn request() -> ChatRequest {
        let read = ToolCall { id: "tu_1".into(), name: "read_file".into(), arguments: r#"{"path":"a"}"#.into() };
        let bad = ToolCall { id: "tu_2".into(), name: "grep".into(), arguments: "{oops".into() };
        ChatRequest {
            messages: vec![
                Message::system("be careful"),
                Message::system("tools follow"),
                Message::user("fix it"),
                Message::assistant("Reading.", vec![read, bad]),
                Message::tool("tu_1", "contents"),
                Message::user("a note"),
                Message::tool("tu_2", "error E_INVALID_ARGS: bad"),
            ],
            tools: vec![
                ToolSpec {
                    name: "read_file".into(),
                    description: "Read".into(),
                    parameters: json!({"type": "object"}),
                },
                ToolSpec { name: "grep".into(), description: " ".into(), parameters: json!({"type": "object"}) },
            ],
        }
    }

    #[test]
    fn tool_results_merge_into_one_user_turn_first_and_roles_alternate() {
        let b = body(&request(), 4096, Some(0.2), CachePoints::default());
        assert_eq!(b["system"], json!([{"text": "be careful\n\ntools follow"}]));
        let msgs = b["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(msgs[1]["content"][0], json!({"text": "Reading."}));
        assert_eq!(
            msgs[1]["content"][1],
            json!({"toolUse": {"toolUseId": "tu_1", "name": "read_file", "input": {"path": "a"}}})
        );
        assert_eq!(msgs[1]["content"][2]["toolUse"]["input"], json!({}), "bad JSON becomes an empty object");
        let last = msgs[2]["content"].as_array().unwrap();
        assert_eq!(last.len(), 3);
        assert_eq!(
            last[0],
            json!({"toolResult": {"toolUseId": "tu_1", "content": [{"text": "contents"}], "status": "success"}})
        );
        assert_eq!(
            (last[1]["toolResult"]["toolUseId"].as_str(), last[1]["toolResult"]["status"].as_str()),
            (Some("tu_2"), Some("error"))
        );
        assert_eq!(last[2], json!({"text": "a note"}), "text after every result");
        assert_eq!(b["inferenceConfig"], json!({"maxTokens": 4096, "temperature": 0.2}));
        assert_eq!(b["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"], "object");
        assert_eq!(b["toolConfig"]["tools"][0]["toolSpec"]["description"], "Read");
        assert!(b["toolConfig"]["tools"][1]["toolSpec"].get("description").is_none(), "no blank description");
        assert!(!b.to_string().contains("cachePoint"));
    }

    #[test]
    fn cache_points_after_the_system_prompt_the_tools_and_the_newest_message() {
        let b = body(&request(), 100, None, cache_points("us.anthropic.claude-sonnet-4-5-20250929-v1:0"));
        assert_eq!(b["system"][1], json!({"cachePoint": {"type": "default"}}));
        assert_eq!(
            b["toolConfig"]["tools"].as_array().unwrap().last().unwrap(),
            &json!({"cachePoint": {"type": "default"}})
        );
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs[2]["content"].as_array().unwrap().last().unwrap(), &json!({"cachePoint": {"type": "default"}}));
        assert_eq!(b.to_string().matches("cachePoint").count(), 3, "within Bedrock's 4");
        assert!(b["inferenceConfig"].get("temperature").is_none());
        let nova = body(&request(), 100, None, cache_points("amazon.nova-pro-v1:0"));
        assert_eq!(nova.to_string().matches("cachePoint").count(), 2, "Nova caches no tools");
        assert!(!nova["toolConfig"].to_string().contains("cachePoint"));
    }

    #[test]
    fn tool_ids_bedrock_refuses_are_replaced_alike_in_the_call_and_its_result() {
        let odd = ToolCall { id: "fc:1/weather".into(), name: "x".into(), arguments: "{}".into() };
        let none = ToolCall { id: String::new(), name: "y".into(), arguments: "{}".into() };
        let req = ChatRequest {
            messages: vec![
                Message::user("go"),
                Message::assistant("", vec![odd, none]),
                Message::tool("fc:1/weather", "a"),
                Message::tool("", "b"),
            ],
            tools: vec![],
        };
        let b = body(&req, 10, None, CachePoints::default());
        let uses: Vec<&str> = b["messages"][1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["toolUse"]["toolUseId"].as_str().unwrap())
            .collect();
        let results: Vec<&str> = b["messages"][2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["toolResult"]["toolUseId"].as_str().unwrap())
            .collect();
        assert_eq!(uses, results);
        assert!(uses.iter().all(|u| u.starts_with("tool_") && u.len() == 37), "{uses:?}");
        assert_ne!(uses[0], uses[1]);
        assert_eq!(tool_id("tooluse_AbC-12"), "tooluse_AbC-12", "a valid id is kept");
    }

    #[test]
    fn which_models_get_cache_points() {
        let all = CachePoints { system: true, tools: true, messages: true };
        let nova = CachePoints { system: true, tools: false, messages: true };
        for (id, want) in [
            ("anthropic.claude-3-7-sonnet-20250219-v1:0", all),
            ("us.anthropic.claude-sonnet-4-20250514-v1:0", all),
            ("global.anthropic.claude-opus-4-5-20251101-v1:0", all),
            ("eu.anthropic.claude-3-5-haiku-20241022-v1:0", all),
            ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0", all),
            ("anthropic.claude-3-5-sonnet-20241022-v2:0", CachePoints::default()),
            ("anthropic.claude-3-haiku-20240307-v1:0", CachePoints::default()),
            ("amazon.nova-lite-v1:0", nova),
            ("us.amazon.nova-premier-v1:0", nova),
            ("amazon.titan-text-express-v1", CachePoints::default()),
            ("meta.llama3-70b-instruct-v1:0", CachePoints::default()),
            ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc", CachePoints::default()),
        ] {
            assert_eq!(cache_points(id), want, "{id}");
        }
    }

    #[test]
    fn blank_turns_are_left_out_and_blank_results_say_so() {
        let req = ChatRequest {
            messages: vec![
                Message::user("go"),
                Message::assistant("", vec![]),
                Message::user("  "),
                Message::assistant("", vec![ToolCall { id: "t".into(), name: "x".into(), arguments: "{}".into() }]),
                Message::tool("t", ""),
            ],
            tools: vec![],
        };
        let b = body(&req, 10, None, CachePoints::default());
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert_eq!(msgs[2]["content"][0]["toolResult"]["content"][0]["text"], "(no output)");
        assert!(b.get("system").is_none() && b.get("toolConfig").is_none());
    }
}
