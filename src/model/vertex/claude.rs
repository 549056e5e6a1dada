//! Anthropic's Claude models on Vertex AI: the Messages API through `rawPredict` (one JSON answer)
//! and `streamRawPredict` (Anthropic's SSE events). The body is Anthropic's, built and read by
//! `model::anthropic`, less `model` (the URL names it) and with
//! `anthropic_version: vertex-2023-10-16`; the Google access token goes as a bearer token.

use super::errors::{Behind, from_response};
use crate::model::auth::Auth;
use crate::model::{ChatRequest, ModelError, anthropic, http};
use crate::protocol::Reply;
use serde_json::{Value, json};
use std::time::Duration;

/// The Messages API version Vertex AI takes, in the body.
pub const VERTEX_VERSION: &str = "vertex-2023-10-16";

pub struct Claude {
    pub http: reqwest::Client,
    /// `…/publishers/anthropic/models/{model}:streamRawPredict` (or `:rawPredict`).
    pub url: String,
    pub auth: Auth,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Claude {
    /// Anthropic's body, without `model` and with Vertex's `anthropic_version`.
    pub fn body(&self, req: &ChatRequest) -> Value {
        let mut b = anthropic::body("", self.max_output_tokens, self.temperature, self.stream, req);
        if let Some(o) = b.as_object_mut() {
            o.remove("model");
            o.insert("anthropic_version".into(), json!(VERTEX_VERSION));
        }
        b
    }

    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let rb = self.http.post(&self.url).json(&self.body(req));
        let rb = self.auth.apply(rb).await?;
        let resp = http::send(rb, self.request_timeout, self.stream).await?;
        if !resp.status().is_success() {
            let status = resp.status().as_u16();
            let ra = http::retry_after(resp.headers());
            let text = crate::model::http::body_text(resp).await;
            return Err(from_response(status, ra, &text, Behind::Anthropic));
        }
        anthropic::read(resp, self.stream, self.idle_timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Message, ToolSpec};

    #[test]
    fn the_body_is_anthropics_without_model_with_vertexs_version() {
        let c = Claude {
            http: reqwest::Client::new(),
            url: "http://x".into(),
            auth: Auth::None,
            temperature: Some(0.2),
            max_output_tokens: 1000,
            stream: true,
            request_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
        };
        let req = ChatRequest {
            messages: vec![Message::system("sys"), Message::user("go")],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let b = c.body(&req);
        assert!(b.get("model").is_none(), "{b}");
        assert_eq!(b["anthropic_version"], "vertex-2023-10-16");
        assert_eq!((b["max_tokens"].as_u64(), b["stream"].as_bool()), (Some(1000), Some(true)));
        assert_eq!(b["temperature"], 0.2);
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral", "prompt caching works on Vertex too");
        assert_eq!(b["tools"][0]["name"], "read_file");
    }
}
