//! Tool-call protocol enforcement (seed 001 §4.1), applied before every request: each assistant
//! tool call is followed by exactly one result, a missing one gets an "interrupted" placeholder,
//! and orphan or duplicate results are dropped. Real APIs answer a broken sequence with HTTP 400.

use crate::protocol::{Message, Role};
use std::collections::HashSet;

pub const INTERRUPTED: &str = "error E_TOOL_INTERRUPTED: the tool call was interrupted before it produced a result";

/// Return a copy of `messages` with valid tool-call pairing, and how many repairs were made.
pub fn enforce(messages: &[Message]) -> (Vec<Message>, usize) {
    let mut out = Vec::with_capacity(messages.len());
    let mut repairs = 0;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            out.push(m.clone());
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
