//! Tool-call protocol enforcement, applied before every request: each assistant
//! tool call is followed by exactly one result, a missing one gets an "interrupted" placeholder,
//! and orphan or duplicate results are dropped. Real APIs answer a broken sequence with HTTP 400.

use crate::protocol::{Message, Role};
use std::collections::HashSet;

pub const INTERRUPTED: &str = "error E_TOOL_INTERRUPTED: the tool call was interrupted before it produced a result";

/// Replace tool-call arguments that are not a JSON object with `{}`: servers such as llama.cpp's
/// refuse a whole request whose history holds one (HTTP 500), and the others need an object too.
/// The tool result already told the model what was wrong. Returns how many were replaced.
pub fn json_arguments(m: &mut Message) -> usize {
    let mut replaced = 0;
    for c in &mut m.tool_calls {
        let is_object = serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok_and(|v| v.is_object());
        if !is_object {
            c.arguments = "{}".into();
            replaced += 1;
        }
    }
    replaced
}

/// Return a copy of `messages` with valid tool-call pairing and JSON arguments, and how many
/// repairs were made.
pub fn enforce(messages: &[Message]) -> (Vec<Message>, usize) {
    let mut out = Vec::with_capacity(messages.len());
    let mut repairs = 0;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            let mut m = m.clone();
            repairs += json_arguments(&mut m);
            out.push(m);
            let m = &messages[i];
            let expected: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
            let mut answered: HashSet<&str> = HashSet::new();
            let mut j = i + 1;
            while j < messages.len() && messages[j].role == Role::Tool {
                let id = messages[j].tool_call_id.as_deref().unwrap_or("");
                if expected.contains(&id) && answered.insert(id) {
                    out.push(messages[j].clone());
                } else {
                    repairs += 1;
                }
                j += 1;
            }
            for id in expected {
                if !answered.contains(id) {
                    out.push(Message::tool(id, INTERRUPTED));
                    repairs += 1;
                }
            }
            i = j;
            continue;
        }
        if m.role == Role::Tool {
            repairs += 1;
        } else {
            out.push(m.clone());
        }
        i += 1;
    }
    (out, repairs)
}

/// True when every tool call is answered exactly once, right after it, and no result is orphaned.
#[cfg(test)]
pub fn is_valid(messages: &[Message]) -> bool {
    enforce(messages).1 == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "list_dir".into(), arguments: "{}".into() }
    }

    #[test]
    fn valid_history_is_unchanged() {
        let h = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool("a", "1"),
            Message::tool("b", "2"),
            Message::assistant("done", vec![]),
        ];
        let (fixed, repairs) = enforce(&h);
        assert_eq!((fixed, repairs), (h.clone(), 0));
        assert!(is_valid(&h));
    }

    #[test]
    fn arguments_that_are_not_a_json_object_are_replaced() {
        let mut bad = call("a");
        bad.arguments = "{\"path\": ".into();
        let mut list = call("b");
        list.arguments = "[1]".into();
        let h = vec![
            Message::assistant("", vec![bad, list, call("c")]),
            Message::tool("a", "e"),
            Message::tool("b", "e"),
            Message::tool("c", "ok"),
        ];
        let (fixed, repairs) = enforce(&h);
        assert_eq!(repairs, 2);
        let args: Vec<&str> = fixed[0].tool_calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(args, ["{}", "{}", "{}"]);
        assert_eq!(fixed[0].tool_calls[0].id, "a", "ids and names are kept");
    }

    #[test]
    fn missing_results_get_placeholders_and_orphans_are_dropped() {
        let h = vec![
            Message::user("u"),
            Message::tool("zzz", "orphan"),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool("b", "2"),
            Message::tool("b", "dup"),
            Message::user("next"),
        ];
        let (fixed, repairs) = enforce(&h);
        assert_eq!(repairs, 3);
        assert_eq!(fixed.len(), 5);
        assert_eq!(fixed[2].tool_call_id.as_deref(), Some("b"));
        assert_eq!(fixed[3].tool_call_id.as_deref(), Some("a"));
        assert_eq!(fixed[3].content, INTERRUPTED);
        assert!(is_valid(&fixed));
    }
}
