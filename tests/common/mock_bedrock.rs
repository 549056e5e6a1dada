//! A stand-in for Amazon Bedrock's runtime (`POST /model/{id}/converse` and
//! `/converse-stream`) and for STS (`POST /`, `AssumeRoleWithWebIdentity`), on one local port,
//! that checks what AWS would check, with AWS's own code rather than hone's: the SigV4
//! signature recomputed by `aws-sigv4` with the known secret, the key, session token, scope
//! and clock (`aws_auth`); the Converse body (`converse_check`). It answers ConverseStream in
//! real event-stream framing written by `aws-smithy-eventstream` (`render`), and can be told to
//! cut or corrupt a stream, end one with an exception, or answer an HTTP error (throttling).
//!
//! Every refusal is recorded; a test declares how many it expects (`expect_refusals`), and any
//! other number fails it when the stand-in is dropped.

mod aws_auth;
mod converse_check;
pub mod render;
mod sts;

pub use aws_auth::{Key, MISMATCH};
pub use sts::Trust;

use crate::common::mock_model::Turn;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub const REGION: &str = "us-east-1";
/// The long-term key the stand-in knows.
pub const KEY_ID: &str = "AKIAHONESTANDIN00001";
pub const SECRET: &str = "hOnE/sTaNdIn+SeCrEt/0123456789abcdefABCD";
/// The Bedrock API key it knows.
pub const API_KEY: &str = "ABSKaG9uZS1zdGFuZC1pbi1hcGkta2V5LTAxMjM0NTY3";

#[derive(Clone, Debug)]
pub enum Reply {
    /// A turn: JSON or frames, by the operation called.
    Turn(Turn),
    /// ConverseStream: the turn's first frames, then half of the next, then the end.
    Cut(Turn),
    /// ConverseStream: the turn with one byte of a frame's payload changed.
    Corrupt(Turn),
    /// ConverseStream: `messageStart`, then this exception (`throttlingException`, …).
    StreamException(&'static str, &'static str),
    /// An HTTP error as Bedrock answers it: the status, `x-amzn-ErrorType` and `{"message"}`.
    Error { status: u16, error_type: &'static str, message: &'static str },
}

impl Reply {
    /// Bedrock's throttling answer, with `status` (429; 400 from older endpoints).
    pub fn throttled(status: u16) -> Reply {
        Reply::Error {
            status,
            error_type: "ThrottlingException",
            message: "Too many requests, please wait before trying again.",
        }
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The model id, decoded from its path segment.
    pub model_id: String,
    /// `converse` or `converse-stream`.
    pub operation: String,
    pub body: Value,
    pub headers: HeaderMap,
}

#[derive(Default)]
pub struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    turns: Mutex<usize>,
    requests: Mutex<Vec<Recorded>>,
    refused: Mutex<Vec<String>>,
    keys: Mutex<Vec<Key>>,
    /// How far the stand-in's clock is ahead of the machine's, in seconds.
    skew: Mutex<i64>,
    trust: Mutex<Option<Trust>>,
    sts_calls: Mutex<usize>,
}

pub struct MockBedrock {
    /// The endpoint: for `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`.
    pub url: String,
    shared: Arc<Shared>,
    expected_refusals: Mutex<usize>,
}

impl Drop for MockBedrock {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let refused = self.refusals();
        let expected = *self.expected_refusals.lock().unwrap();
        if refused.len() != expected {
            panic!(
                "the Bedrock stand-in refused {} request(s) as AWS would, but the test declared {expected}: {refused:#?}",
                refused.len()
            );
        }
    }
}

impl MockBedrock {
    pub async fn start() -> MockBedrock {
        let shared = Arc::new(Shared::default());
        shared.keys.lock().unwrap().push(Key { id: KEY_ID.into(), secret: SECRET.into(), token: None });
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockBedrock { url, shared, expected_refusals: Mutex::new(0) }
    }

    pub fn push(&self, r: Reply) -> &Self {
        self.shared.queue.lock().unwrap().push_back(r);
        self
    }

    pub fn turn(&self, t: Turn) -> &Self {
        self.push(Reply::Turn(t))
    }

    /// STS lets `trust.role_arn` be assumed with `trust.token`.
    pub fn trust(&self, trust: Trust) -> &Self {
        *self.shared.trust.lock().unwrap() = Some(trust);
        self
    }

    /// Set the stand-in's clock `secs` ahead of the machine's.
    pub fn clock_ahead(&self, secs: i64) -> &Self {
        *self.shared.skew.lock().unwrap() = secs;
        self
    }

    pub fn expect_refusals(&self, n: usize) -> &Self {
        *self.expected_refusals.lock().unwrap() = n;
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every refusal, as `STATUS Type: message`.
    pub fn refusals(&self) -> Vec<String> {
        self.shared.refused.lock().unwrap().clone()
    }

    /// The temporary keys STS issued.
    pub fn issued(&self) -> Vec<Key> {
        self.shared.keys.lock().unwrap().iter().filter(|k| k.token.is_some()).cloned().collect()
    }

    pub fn sts_calls(&self) -> usize {
        *self.shared.sts_calls.lock().unwrap()
    }

    pub fn remaining(&self) -> usize {
        self.shared.queue.lock().unwrap().len()
    }
}

fn aws_error(s: &Shared, status: u16, error_type: &str, message: &str) -> Response {
    s.refused.lock().unwrap().push(format!("{status} {error_type}: {message}"));
    error_response(status, error_type, message)
}

fn error_response(status: u16, error_type: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap();
    let header = format!("{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/");
    (
        status,
        [("x-amzn-ErrorType", header.as_str()), ("content-type", "application/json")],
        json!({"message": message}).to_string(),
    )
        .into_response()
}

/// `/model/{id}/{operation}`: the decoded id and the operation.
fn route(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/model/")?;
    let (segment, op) = rest.split_once('/')?;
    if op.contains('/') || !["converse", "converse-stream"].contains(&op) {
        return None;
    }
    let id = percent_encoding::percent_decode_str(segment).decode_utf8().ok()?.into_owned();
    Some((id, op.to_string()))
}

async fn handle(State(s): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 << 20).await else {
        return aws_error(&s, 400, "SerializationException", "the body could not be read");
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    if parts.method == "POST" && path == "/" {
        return sts::handle(&s, &parts.headers, &bytes);
    }
    let Some((model_id, operation)) = route(&path).filter(|_| parts.method == "POST") else {
        return aws_error(&s, 404, "UnknownOperationException", &format!("no operation at {} {path}", parts.method));
    };
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    s.requests.lock().unwrap().push(Recorded {
        model_id,
        operation: operation.clone(),
        body: body.clone(),
        headers: parts.headers.clone(),
    });
    let keys = s.keys.lock().unwrap().clone();
    let skew = *s.skew.lock().unwrap();
    let now = if skew >= 0 {
        SystemTime::now() + Duration::from_secs(skew as u64)
    } else {
        SystemTime::now() - Duration::from_secs((-skew) as u64)
    };
    let expect = aws_auth::Expect { keys: &keys, bearer: Some(API_KEY), region: REGION, service: "bedrock", now };
    if let Err(r) = aws_auth::check(&expect, parts.method.as_str(), &path, &parts.headers, &bytes) {
        return aws_error(&s, r.status, r.error_type, &r.message);
    }
    if let Err(why) = converse_check::check(&body) {
        return aws_error(&s, 400, "ValidationException", &why);
    }
    let Some(reply) = s.queue.lock().unwrap().pop_front() else {
        return aws_error(&s, 400, "ValidationException", "stand-in: no scripted reply left");
    };
    answer(&s, reply, operation == "converse-stream")
}

fn answer(s: &Shared, reply: Reply, stream: bool) -> Response {
    let mut n = s.turns.lock().unwrap();
    *n += 1;
    let frames = match (reply, stream) {
        (Reply::Error { status, error_type, message }, _) => return error_response(status, error_type, message),
        (Reply::Turn(t), false) => return axum::Json(render::converse_json(&t, *n)).into_response(),
        (_, false) => {
            return aws_error(s, 500, "InternalServerException", "stand-in: a stream reply scripted for Converse");
        }
        (Reply::Turn(t), true) => render::converse_stream(&t, *n),
        (Reply::Cut(t), true) => {
            let mut f = render::converse_stream(&t, *n);
            let keep = f.len() / 2;
            let half = f[keep][..f[keep].len() / 2].to_vec();
            f.truncate(keep);
            f.push(half);
            f
        }
        (Reply::Corrupt(t), true) => {
            let mut f = render::converse_stream(&t, *n);
            let at = f.len() / 2;
            let len = f[at].len();
            f[at][len - 8] ^= 0x20;
            f
        }
        (Reply::StreamException(kind, message), true) => {
            vec![render::converse_stream(&Turn::default(), *n).remove(0), render::exception(kind, message)]
        }
    };
    // Each frame in two pieces, so that the client must put frames together.
    let pieces: Vec<Result<Bytes, std::io::Error>> = frames
        .into_iter()
        .flat_map(|f| {
            let mid = f.len() / 2;
            [Ok(Bytes::from(f[..mid].to_vec())), Ok(Bytes::from(f[mid..].to_vec()))]
        })
        .collect();
    Response::builder()
        .status(200)
        .header("content-type", "application/vnd.amazon.eventstream")
        .header("x-amzn-requestid", "stand-in")
        .body(Body::from_stream(futures_util::stream::iter(pieces)))
        .unwrap()
}
