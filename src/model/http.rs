//! The one HTTP path both API clients share: send with a time limit, map transport failures,
//! read the `Retry-After` a server gives, and read an SSE stream with an idle timeout, where a
//! cut stream or a chunk that is not JSON is a retryable failure, never ignored.

use super::ModelError;
use crate::protocol::ModelErrorKind;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

/// The HTTP client every model and identity request uses: `crate::net`'s (the environment's
/// proxies and CA bundle, no trust store at all for a plain `http://` endpoint). Redirects are
/// never followed: reqwest would re-send a key in its own header (it drops only `Authorization`
/// and cookies) and, for a 307 or 308, the whole conversation to wherever the server points
/// (`send`).
pub fn client(url: &str) -> Result<reqwest::Client, crate::error::HoneError> {
    crate::net::builder(url)?.build().map_err(|e| {
        crate::error::HoneError::new(crate::error::Code::Model, format!("cannot build the HTTP client: {e}"))
    })
}

/// Whether `url` may carry a credential: `https://`, or plain `http://` only to this machine
/// (`localhost`, 127.0.0.0/8, `::1`: a test's stand-in, a local gateway).
pub fn https_or_loopback(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = u.host_str().unwrap_or_default();
    match u.scheme() {
        "https" => !host.is_empty(),
        "http" => {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
        }
        _ => false,
    }
}

/// Send `rb`; no response within `limit` is a retryable timeout. A redirect (the client never
/// follows one) is a permanent error that names where it pointed.
pub async fn send(rb: reqwest::RequestBuilder, limit: Duration, stream: bool) -> Result<reqwest::Response, ModelError> {
    let rb = if stream { rb } else { rb.timeout(limit) };
    match tokio::time::timeout(limit, rb.send()).await {
        Err(_) => {
            Err(ModelError::retryable(ModelErrorKind::Timeout, format!("no response within {}s", limit.as_secs())))
        }
        Ok(Err(e)) => Err(transport_error(&e)),
        Ok(Ok(r)) if r.status().is_redirection() => Err(redirected(&r)),
        Ok(Ok(r)) => Ok(r),
    }
}

/// The error for a redirect: hone does not follow it, since the key and the conversation would
/// go along to wherever it points.
fn redirected(r: &reqwest::Response) -> ModelError {
    let status = r.status().as_u16();
    let to = r.headers().get(reqwest::header::LOCATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let to = to.map_or_else(|| "no Location".to_string(), |l| format!("`{}`", l.chars().take(200).collect::<String>()));
    ModelError::Permanent {
        kind: ModelErrorKind::BadRequest,
        status: Some(status),
        message: format!(
            "HTTP {status}: the model API at {} answered with a redirect to {to}, which hone does not follow (the API key and the conversation would go with it); set `model.base_url` to the API's own address",
            r.url().origin().ascii_serialization()
        ),
    }
}

pub fn transport_error(e: &reqwest::Error) -> ModelError {
    // A certificate refused now is refused on every retry: say so at once, and what to do.
    if let Some(why) = crate::net::untrusted_certificate(e) {
        let at = e.url().map_or_else(|| "the model API".to_string(), |u| u.origin().ascii_serialization());
        return ModelError::Permanent {
            kind: ModelErrorKind::Connection,
            status: None,
            message: crate::net::untrusted_message(&at, &why),
        };
    }
    let kind = if e.is_timeout() {
        ModelErrorKind::Timeout
    } else if e.is_decode() || e.is_body() {
        ModelErrorKind::StreamCut
    } else {
        ModelErrorKind::Connection
    };
    // reqwest errors name the URL, never headers, so the key cannot appear here.
    ModelError::retryable(kind, format!("request failed: {e}"))
}

/// The most of an answer's body read for its text.
pub const BODY_TEXT_MAX: usize = 64 * 1024;
/// The longest such a body may pause between chunks.
const BODY_TEXT_IDLE: Duration = Duration::from_secs(30);

/// The body of an answer read for its text (an error's message, an identity service's small
/// JSON): a chunk at a time, each within 30 s, and at most `BODY_TEXT_MAX` bytes, so that a
/// server (or a proxy) that trickles or floods it can hold neither the run nor its memory (a
/// streamed request has no overall time limit once its headers came).
pub async fn body_text(resp: reqwest::Response) -> String {
    String::from_utf8_lossy(&body_prefix(resp, BODY_TEXT_MAX).await.0).into_owned()
}

/// At most `max` bytes of `resp`'s body, a chunk at a time, each within 30 s (a longer pause
/// ends the read), and the transport error that broke it, if one did.
pub async fn body_prefix(resp: reqwest::Response, max: usize) -> (Vec<u8>, Option<reqwest::Error>) {
    let mut stream = resp.bytes_stream();
    let mut out: Vec<u8> = Vec::new();
    let mut broke = None;
    while out.len() < max {
        match tokio::time::timeout(BODY_TEXT_IDLE, stream.next()).await {
            Ok(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
            Ok(Some(Err(e))) => {
                broke = Some(e);
                break;
            }
            _ => break,
        }
    }
    out.truncate(max);
    (out, broke)
}

/// `retry-after-ms`, then `Retry-After` in seconds or as an HTTP date.
pub fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_millis(ms as u64));
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_millis((secs * 1000.0) as u64));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Read the SSE events of `resp`, handing each (event name, JSON data) to `on` until the stream
/// ends or `on` returns `true`. OpenAI's `[DONE]` ends it; empty data lines are skipped.
pub async fn events(
    resp: reqwest::Response,
    idle: Duration,
    mut on: impl FnMut(&str, &Value) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    let mut events = resp.bytes_stream().eventsource();
    loop {
        let ev = match tokio::time::timeout(idle, events.next()).await {
            Err(_) => {
                let msg = format!("the stream sent nothing for {}s", idle.as_secs());
                return Err(ModelError::retryable(ModelErrorKind::IdleTimeout, msg));
            }
            Ok(None) => return Ok(()),
            Ok(Some(Err(e))) => {
                return Err(ModelError::retryable(ModelErrorKind::StreamCut, format!("the stream broke: {e}")));
            }
            Ok(Some(Ok(ev))) => ev,
        };
        let data = ev.data.trim();
        if data == "[DONE]" {
            return Ok(());
        }
        if data.is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::retryable(ModelErrorKind::StreamCut, format!("a stream chunk was not JSON ({e})"))
        })?;
        if on(&ev.event, &chunk)? {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn credentials_go_over_https_or_to_this_machine_only() {
        for ok in ["https://x.openai.azure.com", "http://127.0.0.1:8080/v1", "http://localhost:1", "http://[::1]:9/"] {
            assert!(https_or_loopback(ok), "{ok}");
        }
        for bad in [
            "http://10.0.0.5",
            "http://localhost.evil.example",
            "http://127.0.0.1@evil.example/",
            "ftp://x",
            "https://",
        ] {
            assert!(!https_or_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn retry_after_in_seconds_ms_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        let future = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        h.insert("retry-after", HeaderValue::from_str(&future).unwrap());
        let d = retry_after(&h).unwrap();
        assert!(d > Duration::from_secs(25) && d <= Duration::from_secs(30), "{d:?}");
        h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    fn response(body: &'static str) -> reqwest::Response {
        reqwest::Response::from(::http::Response::new(body))
    }

    #[tokio::test]
    async fn a_body_is_read_only_so_far() {
        let huge = "x".repeat(BODY_TEXT_MAX * 3);
        let body = body_text(reqwest::Response::from(::http::Response::new(huge))).await;
        assert_eq!(body.len(), BODY_TEXT_MAX);
    }

    #[tokio::test]
    async fn a_chunk_that_is_not_json_is_a_retryable_cut_never_ignored() {
        let r = events(
            response("event: content_block_delta\ndata: {\"type\": \"x\"\n\n"),
            Duration::from_secs(5),
            |_, _| Ok(false),
        )
        .await;
        let e = r.unwrap_err();
        assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::StreamCut), "{e}");
        let mut seen = Vec::new();
        let ok = events(
            response("event: a\ndata: {\"n\": 1}\n\ndata: [DONE]\n\ndata: {\"n\": 2}\n\n"),
            Duration::from_secs(5),
            |ev, v| {
                seen.push((ev.to_string(), v["n"].as_u64()));
                Ok(false)
            },
        )
        .await;
        assert!(ok.is_ok());
        assert_eq!(seen, [("a".to_string(), Some(1))], "[DONE] ends the stream");
    }
}
