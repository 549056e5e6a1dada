//! Bedrock's errors as hone's classes, by the error's type name: from the `x-amzn-ErrorType`
//! header or the body's `__type` on an HTTP error, or a stream's `:exception-type`. Throttling,
//! unavailable or not-ready models and server errors are retried (with the server's
//! `Retry-After` when it gives one); validation, credentials and unknown models are not. A type
//! hone does not know falls back to the HTTP status.

use crate::model::ModelError;
use crate::protocol::ModelErrorKind;
use serde_json::Value;
use std::time::Duration;

/// The bare type name: `ThrottlingException` from `ThrottlingException:http://…` (the header's
/// form) or `com.amazon.coral.service#ThrottlingException` (`__type`'s).
pub fn type_name(raw: &str) -> &str {
    let raw = raw.split(':').next().unwrap_or_default();
    raw.rsplit('#').next().unwrap_or_default().trim()
}

/// The class of the error `type_name` (any case: streams name them `throttlingException`),
/// with `status` when it came as an HTTP answer.
pub fn classify(type_name: &str, status: Option<u16>, message: String, retry_after: Option<Duration>) -> ModelError {
    use ModelErrorKind as K;
    let retry = |kind| ModelError::Retryable { kind, message: message.clone(), retry_after };
    let stop = |kind| ModelError::Permanent { kind, status, message: message.clone() };
    match type_name.to_ascii_lowercase().as_str() {
        "throttlingexception" | "toomanyrequestsexception" => retry(K::RateLimited),
        "serviceunavailableexception" | "modelnotreadyexception" => retry(K::Overloaded),
        "internalserverexception" | "modelstreamerrorexception" | "modelerrorexception" => retry(K::ServerError),
        "modeltimeoutexception" => retry(K::Timeout),
        "validationexception" if too_long(&message) => stop(K::ContextLength),
        "validationexception" | "servicequotaexceededexception" | "serializationexception" => stop(K::BadRequest),
        "accessdeniedexception"
        | "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "incompletesignatureexception"
        | "missingauthenticationtokenexception"
        | "expiredtokenexception"
        | "invalidclienttokenid"
        | "signaturedoesnotmatch" => stop(K::Auth),
        "resourcenotfoundexception" => stop(K::NotFound),
        _ => match status {
            Some(429) => retry(K::RateLimited),
            Some(503) => retry(K::Overloaded),
            Some(s) if s >= 500 => retry(K::ServerError),
            Some(401 | 403) => stop(K::Auth),
            Some(404) => stop(K::NotFound),
            Some(_) => stop(K::BadRequest),
            None => retry(K::ServerError),
        },
    }
}

/// A `ValidationException` that says the prompt is over the model's limit.
fn too_long(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["too long", "input length", "too many input tokens", "context window", "context length"]
        .iter()
        .any(|p| m.contains(p))
}

/// The error of an HTTP answer that is not a success.
pub fn from_http(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> ModelError {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let header = headers.get("x-amzn-errortype").and_then(|h| h.to_str().ok());
    let raw = header.or_else(|| v.get("__type").and_then(Value::as_str)).unwrap_or_default();
    let name = type_name(raw);
    let said = v
        .get("message")
        .or_else(|| v.get("Message"))
        .and_then(Value::as_str)
        .map_or_else(|| body.chars().take(500).collect(), str::to_string);
    let label = if name.is_empty() { String::new() } else { format!(" {name}") };
    let message = format!("HTTP {status}{label}: {said}");
    classify(name, Some(status), message, super::super::http::retry_after(headers))
}

/// The error a stream sent as an `exception` (or `error`) message.
pub fn from_stream(exception_type: &str, payload: &[u8]) -> ModelError {
    let v: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    let said = v.get("message").and_then(Value::as_str).unwrap_or("no message");
    classify(exception_type, None, format!("{exception_type} in the stream: {said}"), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn http(status: u16, error_type: Option<&'static str>, body: &str) -> ModelError {
        let mut h = HeaderMap::new();
        if let Some(t) = error_type {
            h.insert("x-amzn-ErrorType", HeaderValue::from_static(t));
        }
        from_http(status, &h, body)
    }

    #[test]
    fn type_names_from_the_header_and_the_body() {
        assert_eq!(
            type_name("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            "ThrottlingException"
        );
        assert_eq!(type_name("com.amazon.coral.service#UnrecognizedClientException"), "UnrecognizedClientException");
        assert_eq!(type_name(""), "");
    }

    #[test]
    fn bedrock_errors_by_class() {
        let cases = [
            (
                429,
                "ThrottlingException",
                "Too many requests, please wait before trying again.",
                "retryable",
                "rate_limited",
            ),
            (
                503,
                "ServiceUnavailableException",
                "Bedrock is unable to process your request.",
                "retryable",
                "overloaded",
            ),
            (429, "ModelNotReadyException", "The model is not ready", "retryable", "overloaded"),
            (500, "InternalServerException", "x", "retryable", "server_error"),
            (424, "ModelErrorException", "x", "retryable", "server_error"),
            (408, "ModelTimeoutException", "x", "retryable", "timeout"),
            (400, "ValidationException", "messages.1.content: blank text", "permanent", "bad_request"),
            (400, "ValidationException", "Input is too long for requested model.", "permanent", "context_length"),
            (403, "AccessDeniedException", "You don't have access to the model", "permanent", "auth"),
            (
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
                "permanent",
                "auth",
            ),
            (403, "InvalidSignatureException", "Signature expired", "permanent", "auth"),
            (404, "ResourceNotFoundException", "Model not found", "permanent", "not_found"),
            (400, "ServiceQuotaExceededException", "quota", "permanent", "bad_request"),
        ];
        for (status, t, msg, class, kind) in cases {
            let e = http(status, Some(t), &format!("{{\"message\":\"{msg}\"}}"));
            assert_eq!((e.class(), e.kind().as_str()), (class, kind), "{t}");
            assert!(e.to_string().contains(msg) && e.to_string().contains(t), "{e}");
        }
    }

    #[test]
    fn the_body_type_the_status_and_retry_after() {
        let e = http(400, None, r#"{"__type":"com.amazon.coral.service#ThrottlingException","message":"slow"}"#);
        assert_eq!(e.kind(), ModelErrorKind::RateLimited, "a 400 that says throttling is retried");
        let mut h = HeaderMap::new();
        h.insert("x-amzn-ErrorType", HeaderValue::from_static("ThrottlingException"));
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert!(
            matches!(from_http(429, &h, "{}"), ModelError::Retryable { retry_after: Some(d), .. } if d == Duration::from_secs(3))
        );
        for (status, class, kind) in [
            (429, "retryable", "rate_limited"),
            (502, "retryable", "server_error"),
            (401, "permanent", "auth"),
            (404, "permanent", "not_found"),
            (418, "permanent", "bad_request"),
        ] {
            let e = http(status, None, "<html>oops</html>");
            assert_eq!((e.class(), e.kind().as_str()), (class, kind), "{status}");
            assert!(e.to_string().contains("oops"));
        }
    }

    #[test]
    fn stream_exceptions_by_their_member_names() {
        let e = from_stream("throttlingException", br#"{"message":"Too many tokens"}"#);
        assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::RateLimited));
        let e = from_stream("modelStreamErrorException", b"not json");
        assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::ServerError));
        let e = from_stream("validationException", br#"{"message":"bad"}"#);
        assert_eq!((e.class(), e.kind()), ("permanent", ModelErrorKind::BadRequest));
        assert!(e.to_string().contains("validationException in the stream: bad"));
    }
}
