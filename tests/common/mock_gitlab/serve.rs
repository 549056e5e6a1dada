//! The stand-in's one HTTPS entry point: `/api/v4/…` goes to the API, every other path to git;
//! every answer carries GitLab's `RateLimit-*` headers, and API requests can be throttled (429).
//! Every request is recorded with the status it got.

use super::Shared;
use super::auth::auth_of;
use super::state::{RATE_LIMIT, Seen};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub async fn handle(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = uri.query().unwrap_or_default().to_string();
    let auth = auth_of(&headers, &query);
    let api = uri.path().starts_with("/api/");
    let (mut resp, recorded) = if !api {
        (super::git::handle(&s, &method, &uri, &headers, body).await, Value::Null)
    } else if let Some(throttled) = throttle(&s) {
        (throttled, serde_json::from_slice(&body).unwrap_or(Value::Null))
    } else {
        super::api::handle(&s, &method, &uri, &headers, &body, &auth)
    };
    let mut st = s.state.lock().unwrap();
    st.observed += 1;
    let remaining = if resp.status() == 429 { 0 } else { RATE_LIMIT.saturating_sub(st.observed) };
    let reset = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() + 60;
    let h = resp.headers_mut();
    let mut set = |k: &'static str, v: String| {
        h.insert(k, HeaderValue::from_str(&v).unwrap());
    };
    set("ratelimit-limit", RATE_LIMIT.to_string());
    set("ratelimit-observed", st.observed.to_string());
    set("ratelimit-remaining", remaining.to_string());
    set("ratelimit-reset", reset.to_string());
    let status = resp.status().as_u16();
    st.seen.push(Seen {
        method: method.to_string(),
        path: uri.path().to_string(),
        query,
        auth,
        body: recorded,
        status,
    });
    resp
}

/// GitLab's throttled answer (Rack::Attack's, as GitLab configures it), if one is due.
fn throttle(s: &Shared) -> Option<Response> {
    let mut st = s.state.lock().unwrap();
    if st.throttle_next == 0 {
        return None;
    }
    st.throttle_next -= 1;
    st.throttled += 1;
    let reset_time = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(1));
    let resp = Response::builder()
        .status(429)
        .header("content-type", "text/plain")
        .header("retry-after", "1")
        .header("ratelimit-name", "throttle_authenticated_api")
        .header("ratelimit-resettime", reset_time)
        .body(Body::from("Retry later\n"))
        .unwrap();
    Some(resp)
}
