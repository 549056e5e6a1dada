//! Tool calls for models without native tool calling (`tool_mode: text`): the tools are described
//! in the system prompt, the model answers with a JSON object, and hone parses it in layers:
//! the whole answer as JSON, then a fenced JSON block, then the first balanced
//! `{…}` object. History is translated so the server only ever sees plain chat messages.

use crate::protocol::{Message, Role, ToolCall, ToolSpec};
use serde_json::Value;

/// The instructions appended to the system prompt in text mode.
pub fn instructions(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "\n# Calling tools\nYou call a tool by answering with one JSON object and nothing else:\n{\"tool\": \"NAME\", \"args\": {...}}\nThe result comes back in the next message. When you are done, answer in plain text without JSON.\nTools:\n",
    );
    for t in tools {
        s.push_str(&format!("- {}: {} Arguments (JSON Schema): {}\n", t.name, t.description, t.parameters));
    }
    s
}

/// Rewrite history for a server without tool support.
pub fn to_plain(messages: &[Message], tools: &[ToolSpec]) -> Vec<Message> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match m.role {
            Role::System if i == 0 => Message::system(format!("{}{}", m.content, instructions(tools))),
            Role::Assistant if !m.tool_calls.is_empty() => {
                let c = &m.tool_calls[0];
                let args: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments.clone()));
                Message::assistant(serde_json::json!({"tool": c.name, "args": args}).to_string(), vec![])
            }
            Role::Tool => Message::user(format!("Result of the tool call:\n{}", m.content)),
            _ => m.clone(),
        })
        .collect()
}

/// Find a tool call in answer text, or `None` when the answer is plain text.
pub fn parse(text: &str) -> Option<(String, String)> {
    let t = text.trim();
    let candidates = [Some(t.to_string()), fenced(t), first_object(t)];
    for c in candidates.into_iter().flatten() {
        if let Ok(v) = serde_json::from_str::<Value>(&c) {
            let name = v.get("tool").or_else(|| v.get("name")).and_then(Value::as_str);
            if let Some(name) = name {
                let args =
                    v.get("args").or_else(|| v.get("arguments")).cloned().unwrap_or(Value::Object(Default::default()));
                let args = match args {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                return Some((name.to_string(), args));
            }
        }
    }
    None
}

/// The body of the first ```json (or ```) fenced block.
fn fenced(t: &str) -> Option<String> {
    let start = t.find("```")?;
    let rest = &t[start + 3..];
    let body_start = rest.find('\n')? + 1;
    let end = rest[body_start..].find("```")?;
    Some(rest[body_start..body_start + end].trim().to_string())
}

/// The first balanced `{…}` object, respecting JSON strings.
fn first_object(t: &str) -> Option<String> {
    let start = t.find('{')?;
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for (i, c) in t[start..].char_indices() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(t[start..start + i + 1].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Turn a plain answer into a tool call when it carries one.
pub fn lift(mut message: Message, n: u32) -> Message {
    if message.tool_calls.is_empty()
        && let Some((name, arguments)) = parse(&message.content)
    {
        message.tool_calls = vec![ToolCall { id: format!("text_{n}"), name, arguments }];
        message.content.clear();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_in_layers() {
        assert_eq!(
            parse(r#"{"tool": "read_file", "args": {"path": "a.py"}}"#),
            Some(("read_file".into(), r#"{"path":"a.py"}"#.into()))
        );
        let fenced = "I will read it.\n```json\n{\"tool\": \"grep\", \"args\": {\"pattern\": \"}\"}}\n```\nthanks";
        assert_eq!(parse(fenced), Some(("grep".into(), r#"{"pattern":"}"}"#.into())));
        let inline = "Sure: {\"tool\": \"list_dir\", \"args\": {\"path\": \"src {x}\"}} and then more";
        assert_eq!(parse(inline), Some(("list_dir".into(), r#"{"path":"src {x}"}"#.into())));
        assert_eq!(parse("All done, the tests pass."), None);
        assert_eq!(parse("{not json"), None);
    }

    #[test]
    fn history_is_translated_to_plain_chat() {
        let call = ToolCall { id: "a".into(), name: "list_dir".into(), arguments: "{}".into() };
        let h = vec![
            Message::system("sys"),
            Message::user("go"),
            Message::assistant("", vec![call]),
            Message::tool("a", "x.py"),
        ];
        let plain = to_plain(&h, &[]);
        assert!(plain[0].content.starts_with("sys\n# Calling tools"));
        assert_eq!(plain[2].content, r#"{"args":{},"tool":"list_dir"}"#);
        assert!(plain[2].tool_calls.is_empty());
        assert_eq!(plain[3].role, Role::User);
    }
}
