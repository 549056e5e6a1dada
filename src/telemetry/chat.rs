//! A turn's model request as a `chat {model}` span: the provider and model, the tokens in, out
//! and read from the cache, why the model stopped, how many retries it took, and, when it never
//! answered, the error's class.

use super::attrs::{int, provider, split_model, text};
use super::content::Content;
use super::tree::Span;
use crate::protocol::{Event, FinishReason};
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, StringValue, Value};
use std::time::SystemTime;

fn finish(f: &FinishReason) -> String {
    match f {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Other(o) => super::attrs::bounded(o, 64),
    }
}

/// The request of turn `turn` to `asked` (`provider/model`), from `start` until its answer (or
/// `until`, when none came: then `error.type` says why, or `no_answer`).
pub fn span<'e>(
    turn: u32,
    asked: &str,
    start: SystemTime,
    until: SystemTime,
    evs: impl Iterator<Item = (SystemTime, &'e Event)>,
    content: Option<&Content<'_>>,
) -> Span {
    let (mut retries, mut class, mut end, mut attrs) = (0u32, Some("no_answer".to_string()), until, Vec::new());
    let mut model = asked.to_string();
    for (t, e) in evs {
        match e {
            Event::ModelRetry { turn: n, class: c, .. } if *n == turn => {
                retries += 1;
                class = Some(c.clone());
            }
            Event::ModelSwitched { turn: n, from, reason, .. } if *n == turn => {
                model = from.clone();
                class = Some(super::attrs::bounded(reason, 64));
            }
            Event::TurnCompleted { turn: n, model: m, finish_reason, usage, .. } if *n == turn => {
                (end, class, model) = (t, None, m.clone());
                let reasons = vec![StringValue::from(finish(finish_reason))];
                attrs.push(KeyValue::new("gen_ai.response.finish_reasons", Value::Array(reasons.into())));
                if let Some(u) = usage {
                    attrs.push(int("gen_ai.usage.input_tokens", u.prompt_tokens));
                    attrs.push(int("gen_ai.usage.output_tokens", u.completion_tokens));
                    attrs.push(int("gen_ai.usage.cache_read.input_tokens", u.cached_prompt_tokens));
                }
            }
            _ => {}
        }
    }
    let (prov, name) = split_model(&model);
    attrs.extend([
        KeyValue::new("gen_ai.operation.name", "chat"),
        text("gen_ai.provider.name", provider(prov)),
        text("gen_ai.request.model", name),
        int("hone.turn", turn),
        int("hone.retries", retries),
    ]);
    attrs.extend(content.map(|c| c.chat(turn)).into_iter().flatten());
    let label = if name.is_empty() { "model" } else { name };
    Span::new(format!("chat {}", super::attrs::bounded(label, 64)), start, end)
        .kind(SpanKind::Client)
        .attrs(attrs)
        .error(class)
}
