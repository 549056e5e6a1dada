//! Spans as the OTLP exporter takes them, built with their own times: a trace is assembled from
//! what a run recorded, so each span has the start and end its events stamped, and its place in
//! the tree is given, not inferred from the thread that happened to run it.

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;
use std::time::SystemTime;

/// Where a span hangs: its trace and its parent (remote when it is another process's, like the
/// CI's `TRACEPARENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub remote: bool,
    /// The trace is sampled (a `TRACEPARENT` whose flags say not: no span is sent).
    pub sampled: bool,
}

impl Parent {
    /// A new trace with no parent.
    pub fn new_trace() -> Parent {
        let trace_id = RandomIdGenerator::default().new_trace_id();
        Parent { trace_id, span_id: SpanId::INVALID, remote: false, sampled: true }
    }

    /// The span `id` of the same trace, as a parent.
    pub fn child_of(&self, id: SpanId) -> Parent {
        Parent { trace_id: self.trace_id, span_id: id, remote: false, sampled: self.sampled }
    }
}

/// A new span id (for a span whose children are made before it is).
pub fn span_id() -> SpanId {
    RandomIdGenerator::default().new_span_id()
}

/// One span to add.
pub struct Span {
    pub name: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub kind: SpanKind,
    pub attrs: Vec<KeyValue>,
    /// `error.type`: the span failed.
    pub error: Option<String>,
}

impl Span {
    pub fn new(name: impl Into<String>, start: SystemTime, end: SystemTime) -> Span {
        Span { name: name.into(), start, end, kind: SpanKind::Internal, attrs: Vec::new(), error: None }
    }

    pub fn kind(mut self, kind: SpanKind) -> Span {
        self.kind = kind;
        self
    }

    pub fn attrs(mut self, attrs: impl IntoIterator<Item = KeyValue>) -> Span {
        self.attrs.extend(attrs);
        self
    }

    pub fn error(mut self, error: Option<String>) -> Span {
        self.error = error;
        self
    }
}

/// The spans of one trace, as they are added.
pub struct Tree {
    trace_id: TraceId,
    ids: RandomIdGenerator,
    pub spans: Vec<SpanData>,
}

impl Tree {
    pub fn new(trace_id: TraceId) -> Tree {
        Tree { trace_id, ids: RandomIdGenerator::default(), spans: Vec::new() }
    }

    /// A fresh span id (for a span added later, whose children come first).
    pub fn id(&self) -> SpanId {
        self.ids.new_span_id()
    }

    /// Add `span` under `parent`; its id.
    pub fn add(&mut self, parent: Parent, span: Span) -> SpanId {
        let id = self.id();
        self.add_as(id, parent, span);
        id
    }

    /// Add `span` with the id `id` under `parent`.
    pub fn add_as(&mut self, id: SpanId, parent: Parent, span: Span) {
        let Span { name, start, end, kind, mut attrs, error } = span;
        let status = match &error {
            Some(e) => {
                attrs.push(KeyValue::new("error.type", super::attrs::bounded(e, super::attrs::MAX_VALUE)));
                Status::error(super::attrs::bounded(e, super::attrs::MAX_VALUE))
            }
            None => Status::Unset,
        };
        self.spans.push(SpanData {
            span_context: SpanContext::new(self.trace_id, id, TraceFlags::SAMPLED, false, TraceState::default()),
            parent_span_id: parent.span_id,
            parent_span_is_remote: parent.remote,
            span_kind: kind,
            name: Cow::Owned(name),
            start_time: start,
            end_time: end.max(start),
            attributes: attrs,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: scope(),
        });
    }
}

/// hone, as the instrumentation that made the spans.
pub fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("hone").with_version(env!("CARGO_PKG_VERSION")).build()
}
