//! A mock model server (OpenAI-compatible or Anthropic Messages): replays scripted responses
//! (JSON or SSE, cut or stalled streams, error statuses with headers) and records every request
//! it receives.
//!
//! It is strict the way real servers are: a request it would refuse is answered with the error a
//! real server gives, and counted as a rejection (see `reject`). A test declares the rejections it
//! expects with `expect_rejections`; any other number fails the test when the mock is dropped.

mod responses;
mod serve;
mod strict;
mod turn;

pub use responses::check_input;
pub use strict::{Refusal, check_pairing, check_pairing_anthropic, reject};
pub use turn::{MODEL_ID, Turn, call, text};

use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Which API the mock speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
    /// OpenAI's Responses API (`/v1/responses`).
    Responses,
}

#[derive(Clone, Debug)]
pub enum Reply {
    /// Raw SSE frames, sent as they are (then, if `stall`, the connection stays open).
    Frames(Vec<String>, bool),
    Json(Value),
    Sse(Vec<String>),
    /// Send these chunks, then keep the connection open without sending anything more.
    Stall(Vec<String>),
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub body: Value,
    pub auth: Option<String>,
}

/// A tool call the mock handed to the model's client: (tool name, raw arguments).
pub type Served = (String, String);

pub struct Shared {
    dialect: Dialect,
    /// Each scripted reply with the tool calls it carries (none for raw replies).
    queue: Mutex<VecDeque<(Reply, Vec<Served>)>>,
    requests: Mutex<Vec<Recorded>>,
    turns_served: Mutex<usize>,
    /// The tool calls of every reply sent so far, in order.
    served: Mutex<Vec<Served>>,
    /// Requests refused the way a real server refuses them (see `reject`).
    rejected: Mutex<Vec<String>>,
}

impl Shared {
    /// The tool calls served so far.
    pub fn served(&self) -> Vec<Served> {
        self.served.lock().unwrap().clone()
    }
}

/// Every mock started in this process, by base URL, so that the run helper can find what the
/// model's tools were asked to write (`served_by`).
static REGISTRY: Mutex<Vec<(String, std::sync::Weak<Shared>)>> = Mutex::new(Vec::new());

/// The mock listening at `base_url`, while it lives.
pub fn served_by(base_url: &str) -> Option<Arc<Shared>> {
    let base = base_url.trim_end_matches('/');
    let mut reg = REGISTRY.lock().unwrap();
    reg.retain(|(_, w)| w.strong_count() > 0);
    reg.iter().find(|(u, _)| u.trim_end_matches('/') == base).and_then(|(_, w)| w.upgrade())
}

pub struct MockModel {
    pub base_url: String,
    pub dialect: Dialect,
    shared: Arc<Shared>,
    /// How many requests the test expects the mock to refuse.
    expected_rejections: Mutex<usize>,
}

impl Drop for MockModel {
    /// A rejection the test did not declare fails the test (unless it is failing already).
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let rejected = self.shared.rejected.lock().unwrap().clone();
        let expected = *self.expected_rejections.lock().unwrap();
        if rejected.len() != expected {
            panic!(
                "the mock model refused {} request(s) as a real server would, but the test declared {expected} \
                 (expect_rejections): {rejected:#?}",
                rejected.len()
            );
        }
    }
}

impl MockModel {
    pub async fn start() -> MockModel {
        Self::start_as(Dialect::OpenAi).await
    }

    pub async fn start_as(dialect: Dialect) -> MockModel {
        let shared = Arc::new(Shared {
            dialect,
            queue: Mutex::default(),
            requests: Mutex::default(),
            turns_served: Mutex::default(),
            served: Mutex::default(),
            rejected: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(serve::handle))
            .route("/v1/messages", axum::routing::post(serve::handle))
            .route("/v1/responses", axum::routing::post(serve::handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let base_url = match dialect {
            Dialect::OpenAi | Dialect::Responses => format!("http://{addr}/v1"),
            Dialect::Anthropic => format!("http://{addr}"),
        };
        REGISTRY.lock().unwrap().push((base_url.clone(), Arc::downgrade(&shared)));
        MockModel { base_url, dialect, shared, expected_rejections: Mutex::new(0) }
    }

    /// Declare that `n` requests in this test are to be refused (the mock checks on drop).
    pub fn expect_rejections(&self, n: usize) -> &Self {
        *self.expected_rejections.lock().unwrap() = n;
        self
    }

    /// Queue a raw reply (it carries no tool calls the run helper would count as served).
    pub fn push(&self, r: Reply) -> &Self {
        self.shared.queue.lock().unwrap().push_back((r, vec![]));
        self
    }

    /// Queue a turn in the right format for `stream`.
    pub fn turn(&self, t: Turn, stream: bool) -> &Self {
        let n = {
            let mut s = self.shared.turns_served.lock().unwrap();
            *s += 1;
            *s
        };
        let reply = match (self.dialect, stream) {
            (Dialect::OpenAi, true) => Reply::Sse(t.sse(n, true)),
            (Dialect::OpenAi, false) => Reply::Json(t.json(n)),
            (Dialect::Anthropic, true) => Reply::Frames(t.anthropic_sse(n, true), false),
            (Dialect::Anthropic, false) => Reply::Json(t.anthropic_json(n)),
            (Dialect::Responses, true) => Reply::Frames(t.responses_sse(n, true), false),
            (Dialect::Responses, false) => Reply::Json(t.responses_json(n)),
        };
        self.shared.queue.lock().unwrap().push_back((reply, t.calls.clone()));
        self
    }

    /// The tool calls the mock has handed out so far.
    pub fn served(&self) -> Vec<Served> {
        self.shared.served()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many requests the mock refused as a real server would (see `reject`).
    pub fn rejected(&self) -> usize {
        self.shared.rejected.lock().unwrap().len()
    }

    /// Why each refused request was refused.
    pub fn rejections(&self) -> Vec<String> {
        self.shared.rejected.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.shared.queue.lock().unwrap().len()
    }

    /// Every recorded request must have valid tool-call pairing. (The mock refuses a request
    /// that breaks it anyway; this says which one.)
    pub fn assert_pairing(&self) {
        for (i, r) in self.requests().iter().enumerate() {
            let checked = match self.dialect {
                Dialect::OpenAi => check_pairing(&r.body["messages"]),
                Dialect::Anthropic => check_pairing_anthropic(&r.body["messages"]),
                Dialect::Responses => check_input(&r.body),
            };
            if let Err(e) = checked {
                panic!(
                    "request {i} breaks tool-call pairing: {e}\n{}",
                    serde_json::to_string_pretty(&r.body["messages"]).unwrap()
                );
            }
        }
    }
}
