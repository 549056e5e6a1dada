//! `provider: script`: replays scripted assistant turns from a YAML file, one per request.
//! It is a script, not a model: for the offline example and for tests, never for real runs.

use super::{ChatRequest, ModelError, ModelErrorKind, check_reply};
use crate::protocol::{FinishReason, Message, Reply, ToolCall, Usage};
use crate::spec::{Diagnostic, yaml};
use serde::Deserialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    turns: Option<Vec<RawTurn>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    content: Option<String>,
    tool_calls: Option<Vec<RawCall>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    name: Option<String>,
    /// A mapping (sent as JSON) or a string (sent verbatim, even if it is not valid JSON).
    arguments: Option<serde_json::Value>,
}

pub struct Script {
    turns: Vec<Reply>,
    next: AtomicUsize,
}

impl Script {
    pub fn load(path: &Path) -> Result<Script, Vec<Diagnostic>> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![Diagnostic::unreadable(&file, "model script", &e, "`model.script` is relative to the job spec")]
        })?;
        let loaded = yaml::load::<RawScript>(&file, &text).map_err(|d| vec![d])?;
        if !loaded.errors.is_empty() {
            return Err(loaded.errors);
        }
        let mut turns = Vec::new();
        for (t, raw) in loaded.value.turns.unwrap_or_default().into_iter().enumerate() {
            let calls: Vec<ToolCall> = raw
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: format!("script_{t}_{i}"),
                    name: c.name.unwrap_or_default(),
                    arguments: match c.arguments {
                        Some(serde_json::Value::String(s)) => s,
                        Some(v) => v.to_string(),
                        None => "{}".into(),
                    },
                })
                .collect();
            let finish = if calls.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls };
            turns.push(Reply {
                message: Message::assistant(raw.content.unwrap_or_default(), calls),
                finish_reason: finish,
                usage: None,
                model: None,
            });
        }
        if turns.is_empty() {
            return Err(vec![loaded.map.at_value(
                "turns",
                "the script has no turns",
                Some("add `turns:` with at least one assistant turn".into()),
            )]);
        }
        Ok(Script { turns, next: AtomicUsize::new(0) })
    }

    pub fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.turns.get(i) else {
            return Err(ModelError::permanent(
                ModelErrorKind::ScriptExhausted,
                format!("the model script has only {} turn(s)", self.turns.len()),
            ));
        };
        let mut reply = turn.clone();
        // Rough usage so budgets behave as with a real model: 4 characters per token.
        let prompt: usize = req
            .messages
            .iter()
            .map(|m| m.content.len() + m.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>())
            .sum();
        let completion =
            reply.message.content.len() + reply.message.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        let (p, c) = ((prompt / 4) as u64, (completion / 4) as u64);
        reply.usage = Some(Usage { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, ..Usage::default() });
        check_reply(reply)
    }
}
