//! A run as a trace, in the GenAI conventions: one `invoke_agent hone` span; under it `intake`
//! and the stages (`environment` with `baseline`, `session`, `land`, `ship`); in the session a
//! `turn` span per turn holding its `chat {model}` request and its `execute_tool {name}` calls,
//! and a `verify` span per round holding each check's `execute_tool {check}`; with `attempts:`,
//! a `try` span per try holding its own stages. Built from the run's record and its events as
//! `events.jsonl` has them (redacted), so no value reaches a span that the reports do not show;
//! content (messages, tool arguments and results) only with content capture, through the
//! redactor and bounded.

use super::attrs::{at, before, int, text};
use super::content::Content;
use super::tree::{Parent, Span, Tree};
use crate::protocol::{Event, EventRecord, Stage};
use crate::record::{RunRecord, Status};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanId, SpanKind};
use std::collections::HashMap;
use std::time::SystemTime;

/// What a run's trace is built from.
pub struct Input<'a> {
    pub record: &'a RunRecord,
    /// The run's events, as `events.jsonl` has them.
    pub events: &'a [EventRecord],
    /// The transcript's content, for content capture (`None`: no content in any span).
    pub content: Option<Content<'a>>,
    /// The repository, as reports name it (a fleet's id, or `owner/name`).
    pub repository: &'a str,
}

/// Whether a run that ended with `status` failed, as a span says it (`error.type`).
fn failed(status: Status) -> Option<String> {
    match status {
        Status::Success | Status::NoChange | Status::Skipped => None,
        other => Some(other.as_str().to_string()),
    }
}

/// The run's spans under `parent`; the root span's id is `root`.
pub fn run(tree: &mut Tree, parent: Parent, root: SpanId, input: &Input<'_>) {
    let r = input.record;
    let start = at(&r.started_at).unwrap_or_else(SystemTime::now);
    let end = start + std::time::Duration::from_millis(r.duration_ms);
    let me = parent.child_of(root);
    let timed: Vec<(SystemTime, &EventRecord)> =
        input.events.iter().map(|e| (at(&e.ts).unwrap_or(start).clamp(start, end), e)).collect();
    let main: Vec<(SystemTime, &Event)> =
        timed.iter().filter(|(_, e)| e.try_no.is_none()).map(|(t, e)| (*t, &e.event)).collect();
    let started = main.iter().find(|(_, e)| matches!(e, Event::RunStarted { .. })).map_or(end, |(t, _)| *t);
    tree.add(me, Span::new("intake", start, started));
    let lanes = Lanes { content: input.content.as_ref(), asked: format!("{}/{}", r.provider, r.model) };
    lanes.lane(tree, me, &main, end);
    for k in tries(input.events) {
        let evs: Vec<(SystemTime, &Event)> =
            timed.iter().filter(|(_, e)| e.try_no == Some(k)).map(|(t, e)| (*t, &e.event)).collect();
        let (first, last) = (evs.first().map_or(start, |e| e.0), evs.last().map_or(start, |e| e.0));
        let one = r.tries.iter().find(|t| t.number == k);
        let status = one.and_then(|t| t.status);
        let asked = one.map_or_else(|| lanes.asked.clone(), |t| format!("{}/{}", t.provider, t.model));
        let chosen = r.chosen.as_ref().is_some_and(|c| c.number == k);
        let attrs = [int("hone.try", k), KeyValue::new("hone.try.chosen", chosen)];
        let span = Span::new("try", first, last).attrs(attrs).error(status.and_then(failed));
        let id = tree.add(me, span);
        Lanes { content: None, asked }.lane(tree, me.child_of(id), &evs, last);
    }
    tree.add_as(root, parent, root_span(input, start, end));
}

fn tries(events: &[EventRecord]) -> Vec<u32> {
    let mut k: Vec<u32> = events.iter().filter_map(|e| e.try_no).collect();
    k.sort_unstable();
    k.dedup();
    k
}

fn root_span(input: &Input<'_>, start: SystemTime, end: SystemTime) -> Span {
    let r = input.record;
    let mut attrs = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", "hone"),
        KeyValue::new("gen_ai.agent.version", r.hone_version.clone()),
        text("gen_ai.conversation.id", &r.run_id),
        text("gen_ai.provider.name", super::attrs::provider(&r.provider)),
        text("gen_ai.request.model", &r.model),
        int("gen_ai.usage.input_tokens", r.usage.prompt_tokens),
        int("gen_ai.usage.output_tokens", r.usage.completion_tokens),
        int("gen_ai.usage.cache_read.input_tokens", r.usage.cached_prompt_tokens),
        text("hone.job", &r.job),
        text("hone.status", r.status.as_str()),
        int("hone.exit_code", r.exit_code),
        int("hone.turns", r.turns),
        text("vcs.repository.name", input.repository),
        text("vcs.ref.head.name", &r.branch),
        text("vcs.ref.base.revision", &r.base_sha),
    ];
    attrs.extend(r.model_id.as_deref().map(|m| text("gen_ai.response.model", m)));
    attrs.extend(r.cost.map(|c| KeyValue::new("hone.cost.usd", c.usd)));
    attrs.extend(r.commit.as_ref().map(|c| text("vcs.ref.head.revision", &c.sha)));
    attrs.extend(r.pr.as_ref().and_then(|p| p.url.as_deref()).map(|u| text("hone.pr.url", u)));
    Span::new("invoke_agent hone", start, end).attrs(attrs).error(failed(r.status))
}

/// One lane's spans: the job's, or one try's.
struct Lanes<'a> {
    content: Option<&'a Content<'a>>,
    /// The model the lane's requests go to first (`provider/model`).
    asked: String,
}

impl Lanes<'_> {
    fn lane(&self, tree: &mut Tree, parent: Parent, evs: &[(SystemTime, &Event)], end: SystemTime) {
        // The stages, each until the next one (or the lane's end).
        let marks: Vec<(usize, Stage)> = evs
            .iter()
            .enumerate()
            .filter_map(|(i, (_, e))| if let Event::Stage { stage } = e { Some((i, *stage)) } else { None })
            .collect();
        let mut stages: Vec<(SystemTime, SpanId)> = Vec::new();
        for (n, (i, stage)) in marks.iter().enumerate() {
            let until = marks.get(n + 1).map_or(end, |(j, _)| evs[*j].0);
            stages.push((evs[*i].0, tree.add(parent, Span::new(stage.as_str(), evs[*i].0, until))));
        }
        let stage_at =
            |t: SystemTime| stages.iter().rev().find(|(s, _)| *s <= t).map_or(parent, |(_, id)| parent.child_of(*id));
        checks(tree, evs, &stage_at);
        let turns = turns(tree, evs, end, &stage_at, self);
        for (t, e) in evs {
            calls(tree, *t, e, &turns, &stage_at, self.content);
        }
    }
}

/// The baseline and each verification round, with a span per check.
fn checks(tree: &mut Tree, evs: &[(SystemTime, &Event)], stage_at: &dyn Fn(SystemTime) -> Parent) {
    let mut rounds: Vec<u32> = evs
        .iter()
        .filter_map(|(_, e)| if let Event::VerifyCompleted { attempt, .. } = e { Some(*attempt) } else { None })
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    for round in &rounds {
        let done: Vec<(SystemTime, &Event)> = evs
            .iter()
            .filter(|(_, e)| matches!(e, Event::VerifyCompleted { attempt, .. } if attempt == round))
            .map(|(t, e)| (*t, *e))
            .collect();
        let first = done.iter().map(|(t, e)| before(*t, duration(e))).min().unwrap_or(SystemTime::UNIX_EPOCH);
        let last = done.iter().map(|(t, _)| *t).max().unwrap_or(first);
        let span = if *round == 0 { Span::new("baseline", first, last) } else { Span::new("verify", first, last) };
        let id = tree.add(stage_at(first), span.attrs([int("hone.verify.round", *round)]));
        for (t, e) in done {
            if let Event::VerifyCompleted { check, passed, accepted, exit_code, timed_out, .. } = e {
                let verdict = super::attrs::verdict(*passed, *accepted, *timed_out);
                let mut attrs = tool_attrs(check, "check");
                attrs.push(KeyValue::new("hone.check.verdict", verdict));
                attrs.extend(exit_code.map(|c| int("hone.exit_code", c)));
                let error = (!accepted).then(|| verdict.to_string());
                let span = Span::new(format!("execute_tool {}", bounded_name(check)), before(t, duration(e)), t);
                tree.add(Parent::child_of(&stage_at(first), id), span.attrs(attrs).error(error));
            }
        }
    }
}

fn duration(e: &Event) -> u64 {
    match e {
        Event::VerifyCompleted { duration_ms, .. }
        | Event::ToolCallCompleted { duration_ms, .. }
        | Event::SetupCompleted { duration_ms, .. }
        | Event::HookCompleted { duration_ms, .. }
        | Event::TurnCompleted { duration_ms, .. } => *duration_ms,
        _ => 0,
    }
}

fn bounded_name(s: &str) -> String {
    super::attrs::bounded(s, 64)
}

pub(super) fn tool_attrs(name: &str, kind: &'static str) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        text("gen_ai.tool.name", name),
        KeyValue::new("gen_ai.tool.type", kind),
    ]
}

/// Each turn (until the next turn, stage or verification round) with its model request.
fn turns(
    tree: &mut Tree,
    evs: &[(SystemTime, &Event)],
    end: SystemTime,
    stage_at: &dyn Fn(SystemTime) -> Parent,
    lane: &Lanes<'_>,
) -> HashMap<u32, Parent> {
    let mut out = HashMap::new();
    for (i, (t, e)) in evs.iter().enumerate() {
        let Event::TurnStarted { turn, .. } = e else { continue };
        let rest = &evs[i + 1..];
        let until = rest
            .iter()
            .find(|(_, e)| {
                matches!(e, Event::TurnStarted { .. } | Event::Stage { .. } | Event::VerifyStarted { attempt: 1.., .. })
            })
            .map_or(end, |(t, _)| *t);
        let parent = stage_at(*t);
        let id = tree.add(parent, Span::new("turn", *t, until).attrs([int("hone.turn", *turn)]));
        let turn_parent = parent.child_of(id);
        let mine = rest.iter().take_while(|(u, _)| *u <= until).map(|(u, e)| (*u, *e));
        tree.add(turn_parent, super::chat::span(*turn, &lane.asked, *t, until, mine, lane.content));
        out.insert(*turn, turn_parent);
    }
    out
}

/// Tool calls (under their turn), setup commands and hooks (under their stage).
fn calls(
    tree: &mut Tree,
    t: SystemTime,
    e: &Event,
    turns: &HashMap<u32, Parent>,
    stage_at: &dyn Fn(SystemTime) -> Parent,
    content: Option<&Content<'_>>,
) {
    let start = before(t, duration(e));
    let (parent, span) = match e {
        Event::ToolCallCompleted { turn, call_id, tool, ok, code, exit_code, .. } => {
            let denied = *code == Some(crate::error::Code::PolicyDenied);
            let tool = super::attrs::tool_name(tool);
            let mut attrs = tool_attrs(tool, "function");
            attrs.push(text("gen_ai.tool.call.id", call_id));
            attrs.push(KeyValue::new("hone.tool.decision", if denied { "denied" } else { "allowed" }));
            attrs.extend(exit_code.map(|c| int("hone.exit_code", c)));
            attrs.extend(content.map(|c| c.tool(call_id)).into_iter().flatten());
            let error = (!ok).then(|| code.map_or("error".to_string(), |c| c.as_str().to_string()));
            let parent = turns.get(turn).copied().unwrap_or_else(|| stage_at(t));
            (parent, Span::new(format!("execute_tool {}", bounded_name(tool)), start, t).attrs(attrs).error(error))
        }
        Event::SetupCompleted { name, passed, exit_code, .. }
        | Event::HookCompleted { name, passed, exit_code, .. } => {
            let kind = if matches!(e, Event::SetupCompleted { .. }) { "setup" } else { "hook" };
            let mut attrs = tool_attrs(name, kind);
            attrs.extend(exit_code.map(|c| int("hone.exit_code", c)));
            let error = (!passed).then(|| "failed".to_string());
            (
                stage_at(start),
                Span::new(format!("execute_tool {}", bounded_name(name)), start, t).attrs(attrs).error(error),
            )
        }
        _ => return,
    };
    tree.add(parent, span.kind(SpanKind::Internal));
}

#[cfg(test)]
#[path = "spans_tests.rs"]
mod tests;
