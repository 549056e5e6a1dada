//! The stand-in's one HTTPS entry point: `/api/v1/…` is checked against Forgejo's description,
//! its token, and answered; every other path is git. Every request is recorded with its status.

use super::Shared;
use super::state::Seen;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

fn json(status: u16, v: &Value) -> Response {
    let body = if v.is_null() { Body::empty() } else { Body::from(v.to_string()) };
    Response::builder().status(status).header("content-type", "application/json;charset=utf-8").body(body).unwrap()
}

pub async fn handle(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = uri.query().unwrap_or_default().to_string();
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let Some(rest) = uri.path().strip_prefix("/api/v1") else {
        let resp = super::git::handle(&s, &method, &uri, &headers, body).await;
        record(&s, &method, &uri, authorization, Value::Null, resp.status().as_u16());
        return resp;
    };
    let parsed: Option<Value> = if body.is_empty() { None } else { serde_json::from_slice(&body).ok() };
    let (status, answer) = if !body.is_empty() && parsed.is_none() {
        violation(&s, format!("{method} {rest}: the body is not JSON"))
    } else {
        api(&s, &method, rest, &query, authorization.as_deref(), parsed.as_ref())
    };
    record(&s, &method, &uri, authorization, parsed.unwrap_or(Value::Null), status);
    let mut resp = json(status, &answer);
    if status == 429 {
        resp.headers_mut().insert("retry-after", "1".parse().unwrap());
    }
    resp
}

fn record(s: &Shared, method: &Method, uri: &Uri, authorization: Option<String>, body: Value, status: u16) {
    let seen = Seen {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        authorization,
        body,
        status,
    };
    s.state.lock().unwrap().seen.push(seen);
}

/// A request Forgejo's description does not allow: 400, and recorded.
fn violation(s: &Shared, what: String) -> (u16, Value) {
    s.state.lock().unwrap().violations.push(what.clone());
    (400, serde_json::json!({"message": what}))
}

fn api(s: &Shared, method: &Method, rest: &str, query: &str, auth: Option<&str>, body: Option<&Value>) -> (u16, Value) {
    let Some((op, params)) = super::ops::find(method.as_str(), rest) else {
        return violation(s, format!("{method} {rest}: no such operation in Forgejo's API"));
    };
    let pairs = super::ops::pairs(query);
    let bad = super::ops::check(op, &pairs, body);
    if !bad.is_empty() {
        return violation(s, bad.join("; "));
    }
    let mut st = s.state.lock().unwrap();
    let token = match auth.map(|a| a.split_once(' ')) {
        Some(Some(("token", t))) => t.to_string(),
        Some(_) => {
            st.violations.push(format!("{method} {rest}: Authorization is not `token …`"));
            return (401, serde_json::json!({"message": "user does not exist"}));
        }
        None => return (401, serde_json::json!({"message": "token is required"})),
    };
    let Some(me) = st.tokens.iter().find(|(t, _)| *t == token).map(|(_, u)| *u) else {
        return (401, serde_json::json!({"message": "user does not exist [uid: 0, name: ]"}));
    };
    if st.throttle_next > 0 {
        st.throttle_next -= 1;
        return (429, serde_json::json!({"message": "rate limited"}));
    }
    let q: HashMap<String, String> = pairs.into_iter().collect();
    super::api::handle(&mut st, &s.base, &op.id, me, &params, &q, body.unwrap_or(&Value::Null))
}
