//! The mock's Responses API dialect: a scripted turn as a response object or as its stream of
//! events (each with a reasoning item whose encrypted content names the turn, `enc-N`, so a
//! test can see it carried back), and the checks OpenAI makes of a request's input items.

use super::turn::{MODEL_ID, Turn};
use serde_json::{Value, json};

impl Turn {
    /// The output items: reasoning, the text (if any), the calls.
    fn response_items(&self, n: usize) -> Vec<Value> {
        let mut items = vec![
            json!({"type": "reasoning", "id": format!("rs_{n}"), "summary": [], "encrypted_content": format!("enc-{n}")}),
        ];
        if !self.content.is_empty() {
            items.push(json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": self.content, "annotations": []}]}));
        }
        for (i, (name, args)) in self.calls.iter().enumerate() {
            items
                .push(json!({"type": "function_call", "id": format!("fc_{n}_{i}"), "call_id": format!("call_{n}_{i}"),
                              "name": name, "arguments": args, "status": "completed"}));
        }
        items
    }

    fn response(&self, n: usize, output: Vec<Value>) -> Value {
        json!({"id": format!("resp_{n}"), "object": "response", "status": "completed", "model": MODEL_ID, "output": output,
               "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 20,
                         "output_tokens_details": {"reasoning_tokens": 8}, "total_tokens": 120}})
    }

    pub fn responses_json(&self, n: usize) -> Value {
        self.response(n, self.response_items(n))
    }

    /// SSE frames: each item added, its text or arguments in two deltas, done; then completed
    /// (whose `output` is empty, as streams may send it: the client must assemble the items).
    pub fn responses_sse(&self, n: usize, finish: bool) -> Vec<String> {
        let f = |data: Value| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap());
        let mut out = vec![f(
            json!({"type": "response.created", "response": {"id": format!("resp_{n}"), "status": "in_progress"}}),
        )];
        for (i, item) in self.response_items(n).into_iter().enumerate() {
            let mut added = item.clone();
            let text = item.pointer("/content/0/text").and_then(Value::as_str).map(str::to_string);
            let args = item["arguments"].as_str().map(str::to_string);
            if text.is_some() {
                added["content"] = json!([]);
            }
            if args.is_some() {
                added["arguments"] = json!("");
            }
            out.push(f(json!({"type": "response.output_item.added", "output_index": i, "item": added})));
            let (kind, whole) = match (text, args) {
                (Some(t), _) => ("response.output_text.delta", t),
                (None, Some(a)) => ("response.function_call_arguments.delta", a),
                _ => ("", String::new()),
            };
            if !kind.is_empty() {
                let mid = whole.char_indices().map(|(i, _)| i).find(|i| *i >= whole.len() / 2).unwrap_or(0);
                for part in [&whole[..mid], &whole[mid..]] {
                    out.push(f(json!({"type": kind, "output_index": i, "content_index": 0, "item_id": item["id"], "delta": part})));
                }
            }
            out.push(f(json!({"type": "response.output_item.done", "output_index": i, "item": item})));
        }
        if finish {
            out.push(f(json!({"type": "response.completed", "response": self.response(n, vec![])})));
        }
        out
    }
}

/// What OpenAI refuses in a Responses request: `store` other than false (hone keeps nothing
/// there), a reasoning item without its encrypted content or with an `id` (which names an item
/// nothing stored), a call output that answers no earlier call, a call never answered, and
/// arguments that are not JSON.
pub fn check_input(body: &Value) -> Result<(), String> {
    if body["store"] != json!(false) {
        return Err("`store` must be false: nothing is stored between requests".into());
    }
    let mut open: Vec<String> = Vec::new();
    for (i, item) in body["input"].as_array().ok_or("input is not an array")?.iter().enumerate() {
        match item["type"].as_str() {
            Some("reasoning") if item.get("id").is_some() => {
                return Err(format!(
                    "Item with id '{}' not found. Items are not persisted when `store` is false.",
                    item["id"]
                ));
            }
            Some("reasoning") if item["encrypted_content"].as_str().is_none() => {
                return Err(format!("reasoning item {i} has no encrypted_content"));
            }
            Some("function_call") => {
                serde_json::from_str::<Value>(item["arguments"].as_str().unwrap_or(""))
                    .map_err(|e| format!("function_call {i}: arguments are not JSON: {e}"))?;
                open.push(item["call_id"].as_str().unwrap_or("").to_string());
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or("");
                let pos = open
                    .iter()
                    .position(|c| c == id)
                    .ok_or(format!("No tool call found for function call output with call_id {id}."))?;
                open.remove(pos);
            }
            _ => {}
        }
    }
    match open.first() {
        Some(id) => Err(format!("No tool output found for function call {id}.")),
        None => Ok(()),
    }
}
