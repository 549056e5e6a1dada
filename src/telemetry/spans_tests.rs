use super::*;
use crate::protocol::{FinishReason, Usage};

fn at_ms(ms: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap() + time::Duration::milliseconds(ms as i64);
    t.format(&time::format_description::well_known::Rfc3339).unwrap()
}

fn ev(ms: u64, try_no: Option<u32>, event: Event) -> EventRecord {
    EventRecord { schema_version: 1, ts: at_ms(ms), run_id: "r".into(), repo: None, try_no, event }
}

fn record() -> RunRecord {
    let mut r = RunRecord::new("job", "r", at_ms(0));
    (r.duration_ms, r.status, r.model, r.provider) = (10_000, Status::Failed, "m".into(), "openai".into());
    r
}

fn tool_done(ms: u64, turn: u32, tool: &str, code: Option<crate::error::Code>) -> EventRecord {
    let e = Event::ToolCallCompleted {
        turn,
        call_id: format!("c{turn}"),
        tool: tool.into(),
        ok: code.is_none(),
        code,
        exit_code: None,
        duration_ms: 100,
    };
    ev(ms, None, e)
}

fn check_done(ms: u64, attempt: u32, passed: bool) -> EventRecord {
    let e = Event::VerifyCompleted {
        attempt,
        check: "test".into(),
        passed,
        accepted: passed,
        new_failures: vec![],
        exit_code: Some(i32::from(!passed)),
        timed_out: false,
        cancelled: false,
        junit_error: None,
        duration_ms: 200,
    };
    ev(ms, None, e)
}

/// A run: the baseline, a turn answered after a retry with a tool call (denied), a turn that
/// never got its answer (the model moved to the fallback), a verification round, land and ship.
fn events() -> Vec<EventRecord> {
    let usage = Usage { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, ..Usage::default() };
    let stage = |ms, stage| ev(ms, None, Event::Stage { stage });
    let turn = |ms, turn| ev(ms, None, Event::TurnStarted { turn, estimated_tokens: 1, prefix_reuse: 0.0 });
    let retry =
        Event::ModelRetry { turn: 1, attempt: 1, class: "rate_limit".into(), reason: "429".into(), delay_ms: 1 };
    let done = Event::TurnCompleted {
        turn: 1,
        model: "openai/m".into(),
        finish_reason: FinishReason::ToolCalls,
        tool_calls: 1,
        usage: Some(usage),
        duration_ms: 900,
    };
    let switched = Event::ModelSwitched {
        turn: 2,
        from: "openai/m".into(),
        to: "anthropic/n".into(),
        reason: "unavailable".into(),
    };
    vec![
        ev(
            100,
            None,
            Event::RunStarted {
                job: "job".into(),
                repo: "x".into(),
                branch: "b".into(),
                provider: "openai".into(),
                model: "m".into(),
            },
        ),
        stage(200, Stage::Environment),
        check_done(900, 0, false),
        stage(1000, Stage::Session),
        turn(1100, 1),
        ev(1500, None, retry),
        ev(2000, None, done),
        tool_done(2200, 1, "run_cmd", Some(crate::error::Code::PolicyDenied)),
        turn(3000, 2),
        ev(4000, None, switched),
        check_done(6000, 1, false),
        stage(7000, Stage::Land),
        stage(8000, Stage::Ship),
    ]
}

fn build(r: &RunRecord, events: &[EventRecord]) -> (Vec<opentelemetry_sdk::trace::SpanData>, SpanId) {
    let parent = Parent::new_trace();
    let mut tree = Tree::new(parent.trace_id);
    let root = tree.id();
    let input = Input { record: r, events, content: None, repository: "o/r" };
    run(&mut tree, parent, root, &input);
    (tree.spans, root)
}

fn attr(s: &opentelemetry_sdk::trace::SpanData, key: &str) -> Option<String> {
    s.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

#[test]
fn a_run_is_one_tree_with_each_span_under_its_stage_or_turn() {
    let (spans, root) = build(&record(), &events());
    let by_id: HashMap<SpanId, &opentelemetry_sdk::trace::SpanData> =
        spans.iter().map(|s| (s.span_context.span_id(), s)).collect();
    let parent_name = |s: &opentelemetry_sdk::trace::SpanData| by_id.get(&s.parent_span_id).map(|p| p.name.to_string());
    for s in &spans {
        assert!(s.end_time >= s.start_time, "{}", s.name);
        assert!(s.span_context.span_id() == root || by_id.contains_key(&s.parent_span_id), "{} has no parent", s.name);
    }
    let named = |n: &str| spans.iter().filter(|s| s.name == n).collect::<Vec<_>>();
    let root_span = by_id[&root];
    assert_eq!(root_span.name, "invoke_agent hone");
    assert_eq!(attr(root_span, "error.type").as_deref(), Some("failed"));
    assert_eq!(parent_name(named("baseline")[0]).as_deref(), Some("environment"));
    assert_eq!(parent_name(named("verify")[0]).as_deref(), Some("session"));
    assert_eq!(named("turn").len(), 2);
    let chats = named("chat m");
    assert_eq!(chats.len(), 2, "the failed request is a chat span too");
    let answered = chats.iter().find(|c| attr(c, "hone.turn").as_deref() == Some("1")).unwrap();
    assert_eq!(attr(answered, "hone.retries").as_deref(), Some("1"));
    assert_eq!(attr(answered, "gen_ai.usage.input_tokens").as_deref(), Some("100"));
    assert_eq!(attr(answered, "error.type"), None);
    let failed = chats.iter().find(|c| attr(c, "hone.turn").as_deref() == Some("2")).unwrap();
    assert_eq!(attr(failed, "error.type").as_deref(), Some("unavailable"));
    let tool = named("execute_tool run_cmd")[0];
    assert_eq!(parent_name(tool).as_deref(), Some("turn"));
    assert_eq!(attr(tool, "hone.tool.decision").as_deref(), Some("denied"));
    for stage in ["intake", "environment", "session", "land", "ship"] {
        assert_eq!(named(stage).len(), 1, "{stage}");
        assert_eq!(named(stage)[0].parent_span_id, root, "{stage}");
    }
}

#[test]
fn tries_are_spans_of_their_own_holding_their_stages() {
    let mut events = events();
    events.push(ev(3500, Some(2), Event::Stage { stage: Stage::Environment }));
    events.push(ev(3600, Some(2), Event::Stage { stage: Stage::Session }));
    events.push(ev(3700, Some(2), Event::TurnStarted { turn: 1, estimated_tokens: 1, prefix_reuse: 0.0 }));
    let (spans, _) = build(&record(), &events);
    let tries: Vec<_> = spans.iter().filter(|s| s.name == "try").collect();
    assert_eq!(tries.len(), 1);
    let id = tries[0].span_context.span_id();
    let under: Vec<&str> = spans.iter().filter(|s| s.parent_span_id == id).map(|s| s.name.as_ref()).collect();
    assert_eq!(under, ["environment", "session"]);
}

#[test]
fn odd_times_and_hostile_names_neither_panic_nor_grow() {
    let mut events = events();
    for e in &mut events {
        if e.ts.ends_with('Z') && e.ts.len() % 2 == 0 {
            e.ts = "not a time".into();
        }
    }
    events.push(tool_done(9_999_999, 77, &"é".repeat(5000), None));
    events.reverse();
    let (spans, _) = build(&record(), &events);
    for s in &spans {
        assert!(s.end_time >= s.start_time, "{}", s.name);
        assert!(s.name.len() <= 64 + "execute_tool ".len(), "{}", s.name.len());
        for kv in &s.attributes {
            assert!(kv.value.as_str().len() <= super::super::attrs::MAX_VALUE, "{}", kv.key);
        }
    }
    let (none, _) = build(&RunRecord::new("j", "r", "garbage".into()), &[]);
    assert_eq!(none.len(), 2, "a run with no events: the root and intake");
}
