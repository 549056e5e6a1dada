//! Vertex AI's error answers, classed: Google's `{"error": {"code", "message", "status"}}` (also
//! as a one-element list, as the OpenAI-compatible endpoint sends it), else the shape of the API
//! behind it (Anthropic's, for Claude). `RESOURCE_EXHAUSTED` (429) and `UNAVAILABLE` (503) are
//! retried, with the server's `Retry-After`; `UNAUTHENTICATED` and `PERMISSION_DENIED` are auth
//! errors, `INVALID_ARGUMENT` a bad request (a context-length one when the prompt is too long),
//! `NOT_FOUND` an unknown model or project.

use crate::model::stream::classify_message;
use crate::model::{ModelError, ModelErrorKind};
use serde_json::Value;
use std::time::Duration;

/// Which API answers behind Vertex, for bodies that are not Google's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behind {
    Anthropic,
    OpenAi,
}

/// The error for an answer with HTTP `status` and `body`.
pub fn from_response(status: u16, retry_after: Option<Duration>, body: &str, behind: Behind) -> ModelError {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let google = match &parsed {
        Value::Array(items) => items.first().and_then(|i| i.get("error")),
        v => v.get("error"),
    }
    .filter(|e| e.get("status").is_some_and(Value::is_string));
    match (google, behind) {
        (Some(e), _) => google_error(status, retry_after, e),
        (None, Behind::Anthropic) => crate::model::anthropic::status_error(status, retry_after, body),
        (None, Behind::OpenAi) => {
            let message = parsed
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map_or_else(|| body.chars().take(500).collect(), str::to_string);
            let sig = format!("{} {message}", parsed.get("error").map(Value::to_string).unwrap_or_default());
            with_retry_after(
                classify_message(Some(status), &sig.to_lowercase(), format!("HTTP {status}: {message}")),
                retry_after,
            )
        }
    }
}

fn with_retry_after(e: ModelError, ra: Option<Duration>) -> ModelError {
    match e {
        ModelError::Retryable { kind, message, .. } => ModelError::Retryable { kind, message, retry_after: ra },
        other => other,
    }
}

/// Phrases Vertex uses when a prompt does not fit the model.
const TOO_LONG: &[&str] = &[
    "prompt is too long",
    "input token count",
    "exceeds the maximum number of tokens",
    "context length",
    "context window",
    "too many tokens",
];

fn google_error(status: u16, retry_after: Option<Duration>, e: &Value) -> ModelError {
    let state = e.get("status").and_then(Value::as_str).unwrap_or_default();
    let said = e.get("message").and_then(Value::as_str).unwrap_or("no message");
    let said: String = said.chars().take(1000).collect();
    let message = format!("HTTP {status} {state}: {said}");
    let retry = |kind| ModelError::Retryable { kind, message: message.clone(), retry_after };
    let permanent = |kind| ModelError::Permanent { kind, status: Some(status), message: message.clone() };
    let lower = said.to_lowercase();
    match (state, status) {
        ("RESOURCE_EXHAUSTED", _) | (_, 429) => retry(ModelErrorKind::RateLimited),
        ("UNAVAILABLE", _) | (_, 503 | 529) => retry(ModelErrorKind::Overloaded),
        ("INTERNAL" | "DEADLINE_EXCEEDED" | "ABORTED" | "UNKNOWN", _) => retry(ModelErrorKind::ServerError),
        (_, s) if s >= 500 => retry(ModelErrorKind::ServerError),
        ("UNAUTHENTICATED" | "PERMISSION_DENIED", _) | (_, 401 | 403) => permanent(ModelErrorKind::Auth),
        ("NOT_FOUND", _) | (_, 404) => permanent(ModelErrorKind::NotFound),
        _ if TOO_LONG.iter().any(|p| lower.contains(p)) => permanent(ModelErrorKind::ContextLength),
        _ => permanent(ModelErrorKind::BadRequest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn google(code: u16, status: &str, message: &str) -> String {
        serde_json::json!({"error": {"code": code, "message": message, "status": status}}).to_string()
    }

    fn kind(e: &ModelError) -> (&'static str, &'static str) {
        (e.class(), e.kind().as_str())
    }

    #[test]
    fn google_statuses() {
        let ra = Some(Duration::from_secs(3));
        let e = from_response(429, ra, &google(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), Behind::Anthropic);
        assert_eq!(kind(&e), ("retryable", "rate_limited"));
        assert!(matches!(e, ModelError::Retryable { retry_after: Some(d), .. } if d == Duration::from_secs(3)));
        assert!(e.to_string().contains("RESOURCE_EXHAUSTED: Quota exceeded"), "{e}");
        let e = from_response(503, None, &google(503, "UNAVAILABLE", "try later"), Behind::OpenAi);
        assert_eq!(kind(&e), ("retryable", "overloaded"));
        for (code, status) in [(401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED")] {
            let e = from_response(code, None, &google(code, status, "no"), Behind::Anthropic);
            assert_eq!(kind(&e), ("permanent", "auth"), "{status}");
        }
        let e = from_response(404, None, &google(404, "NOT_FOUND", "Publisher model not found"), Behind::Anthropic);
        assert_eq!(kind(&e), ("permanent", "not_found"));
        let e = from_response(400, None, &google(400, "INVALID_ARGUMENT", "temperature out of range"), Behind::OpenAi);
        assert_eq!(kind(&e), ("permanent", "bad_request"));
        let long = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).";
        let e = from_response(400, None, &google(400, "INVALID_ARGUMENT", long), Behind::OpenAi);
        assert_eq!(kind(&e), ("permanent", "context_length"));
    }

    #[test]
    fn the_openai_endpoint_sends_a_list_and_claude_may_answer_in_its_own_shape() {
        let listed = format!("[{}]", google(429, "RESOURCE_EXHAUSTED", "slow down"));
        assert_eq!(kind(&from_response(429, None, &listed, Behind::OpenAi)), ("retryable", "rate_limited"));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert_eq!(kind(&from_response(400, None, anthropic, Behind::Anthropic)), ("permanent", "context_length"));
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(kind(&from_response(529, None, overloaded, Behind::Anthropic)), ("retryable", "overloaded"));
        let openai = r#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#;
        let e = from_response(400, None, openai, Behind::OpenAi);
        assert_eq!(kind(&e), ("permanent", "bad_request"));
        assert!(e.to_string().contains("bad tools"));
        assert_eq!(kind(&from_response(502, None, "<html>bad gateway</html>", Behind::OpenAi)).0, "retryable");
    }
}
