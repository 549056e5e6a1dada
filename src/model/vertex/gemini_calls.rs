//! Gemini's tool calls in OpenAI's chunk shape, made the shape the Chat Completions assembler
//! (`model::stream`) reads. Gemini sends each call whole, often with no `index` or with `index: 0`
//! for every one of several parallel calls, which an OpenAI-style assembler would join into one
//! call with broken arguments; a call's `id` is what tells them apart. Each call also may carry
//! its thought signature (`extra_content.google.thought_signature`), which Gemini 3 requires
//! back with the history. Pure: no I/O.

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// One call being assembled: its id (when the server gave one) and whether it has a name yet.
#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    named: bool,
}

/// The calls of one streamed answer, each given its own `index`.
#[derive(Debug, Default)]
pub struct Calls {
    slots: Vec<Slot>,
    /// The slot each `index` on the wire last went to.
    by_wire: HashMap<u64, usize>,
    /// Thought signatures, by slot.
    signatures: BTreeMap<usize, String>,
}

impl Calls {
    /// `chunk` with each tool-call delta's `index` made its call's own, and a repeated `id` or
    /// `name` (Gemini repeats them; the assembler would append them) left out.
    pub fn chunk(&mut self, chunk: &Value) -> Value {
        let mut c = chunk.clone();
        if let Some(calls) = c.pointer_mut("/choices/0/delta/tool_calls").and_then(Value::as_array_mut) {
            for call in calls.iter_mut() {
                self.entry(call);
            }
        }
        c
    }

    fn open(&mut self, id: Option<String>) -> usize {
        self.slots.push(Slot { id, named: false });
        self.slots.len() - 1
    }

    fn entry(&mut self, call: &mut Value) {
        let id = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let named = call.pointer("/function/name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let wire = call.get("index").and_then(Value::as_u64);
        let slot = match id {
            Some(id) => match self.slots.iter().position(|s| s.id.as_deref() == Some(id.as_str())) {
                Some(s) => {
                    if let Some(o) = call.as_object_mut() {
                        o.remove("id");
                    }
                    s
                }
                None => self.open(Some(id)),
            },
            None => {
                let target = match wire {
                    Some(w) => self.by_wire.get(&w).copied(),
                    None => self.slots.len().checked_sub(1),
                };
                match target {
                    // A second name on a call is a new call (one with neither id nor index).
                    Some(s) if !(named && self.slots[s].named) => s,
                    _ => self.open(None),
                }
            }
        };
        if named
            && self.slots[slot].named
            && let Some(f) = call.get_mut("function").and_then(Value::as_object_mut)
        {
            f.remove("name");
        }
        self.slots[slot].named |= named;
        if let Some(w) = wire {
            self.by_wire.insert(w, slot);
        }
        call["index"] = json!(slot);
        if let Some(sig) = signature(call) {
            self.signatures.insert(slot, sig);
        }
    }

    /// Whether the server gave call `i` an id of its own.
    pub fn has_id(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| s.id.is_some())
    }

    /// The thought signatures, by call position.
    pub fn signatures(&self) -> &BTreeMap<usize, String> {
        &self.signatures
    }
}

/// A tool call's thought signature, when it carries one.
pub fn signature(call: &Value) -> Option<String> {
    call.pointer("/extra_content/google/thought_signature").and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stream::Assembler;

    fn run(chunks: &[Value]) -> (crate::protocol::Reply, Calls) {
        let (mut calls, mut asm) = (Calls::default(), Assembler::default());
        for c in chunks {
            asm.push(&calls.chunk(c)).unwrap();
        }
        (asm.finish().unwrap(), calls)
    }

    fn delta(calls: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    }

    fn done() -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    }

    #[test]
    fn parallel_calls_all_at_index_0_stay_apart() {
        let sig = json!({"google": {"thought_signature": "c2lnbmF0dXJl"}});
        let (r, calls) = run(&[
            delta(
                json!([{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}, "extra_content": sig}]),
            ),
            delta(
                json!([{"index": 0, "id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b\"}"}}]),
            ),
            done(),
        ]);
        let got: Vec<(&str, &str, &str)> =
            r.message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(got, [("c1", "read_file", "{\"path\":\"a\"}"), ("c2", "read_file", "{\"path\":\"b\"}")]);
        assert_eq!(calls.signatures().get(&0).map(String::as_str), Some("c2lnbmF0dXJl"));
        assert!(!calls.signatures().contains_key(&1), "only the first of parallel calls carries one");
    }

    #[test]
    fn calls_without_index_and_repeated_headers() {
        let (r, calls) = run(&[
            delta(json!([{"id": "a", "function": {"name": "grep", "arguments": "{\"pattern\":"}}])),
            delta(json!([{"id": "a", "function": {"name": "grep", "arguments": "\"x\"}"}}])),
            delta(json!([{"function": {"name": "list_dir", "arguments": "{}"}}])),
            done(),
        ]);
        assert_eq!(r.message.tool_calls.len(), 2, "{:?}", r.message.tool_calls);
        assert_eq!(r.message.tool_calls[0].id, "a", "the repeated id is not doubled");
        assert_eq!(r.message.tool_calls[0].name, "grep", "nor the repeated name");
        assert_eq!(r.message.tool_calls[0].arguments, "{\"pattern\":\"x\"}");
        assert_eq!((r.message.tool_calls[1].name.as_str(), calls.has_id(1)), ("list_dir", false));
    }

    #[test]
    fn openai_style_streams_are_left_as_they_are() {
        let (r, _) = run(&[
            delta(json!([{"index": 0, "id": "x", "function": {"name": "read_file", "arguments": "{\"pa"}}])),
            delta(json!([{"index": 1, "id": "y", "function": {"name": "grep", "arguments": "{}"}}])),
            delta(json!([{"index": 0, "function": {"arguments": "th\":\"a\"}"}}])),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        assert_eq!(r.message.tool_calls[0].arguments, "{\"path\":\"a\"}");
        assert_eq!(r.message.tool_calls[1].id, "y");
    }
}
