//! The OpenAI Chat Completions client (also for OpenAI-compatible servers: Ollama, vLLM,
//! llama.cpp). Streamed answers are read as SSE with an idle timeout that resets on every chunk.

use super::auth::Auth;
use super::stream::{Assembler, classify_message, error_chunk, parse_usage};
use super::{ChatRequest, ModelError, ModelErrorKind, check_reply, http};
use crate::protocol::{FinishReason, Message, Reply, Role, ToolCall};
use serde_json::{Value, json};
use std::time::Duration;

pub struct OpenAi {
    pub http: reqwest::Client,
    /// `{base_url}/chat/completions`.
    pub url: String,
    /// `Authorization: Bearer KEY` when a key is set.
    pub auth: Auth,
    pub model: String,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    /// `max_completion_tokens` (OpenAI) rather than `max_tokens` (what compatible servers read).
    pub use_max_completion_tokens: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    /// The model has no native tool calling: describe tools in the prompt and parse the text.
    pub text_tools: bool,
    pub calls: std::sync::atomic::AtomicU32,
    /// OpenAI's `prompt_cache_key`: one per run, so that its requests, which share an ever longer
    /// prefix, land where that prefix is cached. Not sent to OpenAI-compatible servers.
    pub prompt_cache_key: Option<String>,
}

impl OpenAi {
    pub fn body(&self, req: &ChatRequest) -> Value {
        let plain;
        let messages = if self.text_tools {
            plain = super::textmode::to_plain(&req.messages, &req.tools);
            &plain
        } else {
            &req.messages
        };
        let mut body = json!({
            "model": self.model,
            "messages": messages.iter().map(wire_message).collect::<Vec<_>>(),
            "stream": self.stream,
        });
        if !req.tools.is_empty() && !self.text_tools {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect();
            body["tool_choice"] = json!("auto");
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        let key = if self.use_max_completion_tokens { "max_completion_tokens" } else { "max_tokens" };
        body[key] = json!(self.max_output_tokens);
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(key) = &self.prompt_cache_key {
            body["prompt_cache_key"] = json!(key);
        }
        body
    }

    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let wait = Wait { limit: self.request_timeout, stream: self.stream };
        let resp = post(&self.http, &self.url, &self.auth, &self.body(req), wait).await?;
        let mut reply = if self.stream { self.read_stream(resp).await } else { self.read_body(resp).await }?;
        if self.text_tools {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            reply.message = super::textmode::lift(reply.message, n);
            if !reply.message.tool_calls.is_empty() {
                reply.finish_reason = crate::protocol::FinishReason::ToolCalls;
            }
        }
        Ok(reply)
    }

    async fn read_body(&self, resp: reqwest::Response) -> Result<Reply, ModelError> {
        let v: Value = resp.json().await.map_err(|e| http::transport_error(&e))?;
        if let Some(err) = v.get("error") {
            return Err(error_chunk(err));
        }
        parse_completion(&v)
    }

    async fn read_stream(&self, resp: reqwest::Response) -> Result<Reply, ModelError> {
        let mut asm = Assembler::default();
        http::events(resp, self.idle_timeout, |_, chunk| asm.push(chunk).map(|()| false)).await?;
        asm.finish()
    }
}

/// How a request waits for its answer: `limit`, for the whole answer, or with `stream` for its
/// first byte (the stream's own idle timeout takes over from there).
#[derive(Debug, Clone, Copy)]
pub(super) struct Wait {
    pub limit: Duration,
    pub stream: bool,
}

/// POST `body` to `url` (with `auth`'s credential), waiting as `wait` says; an error status is
/// a `ModelError` with the provider's message (OpenAI's error shape, which compatible servers
/// and the Responses API share).
pub(super) async fn post(
    client: &reqwest::Client,
    url: &str,
    auth: &Auth,
    body: &Value,
    wait: Wait,
) -> Result<reqwest::Response, ModelError> {
    let rb = auth.apply(client.post(url).json(body)).await?;
    let resp = http::send(rb, wait.limit, wait.stream).await?;
    let status = resp.status();
    if !status.is_success() {
        let retry_after = http::retry_after(resp.headers());
        let text = crate::model::http::body_text(resp).await;
        return Err(http_error(status.as_u16(), &text, retry_after));
    }
    Ok(resp)
}

/// The wire form of one message.
fn wire_message(m: &Message) -> Value {
    match m.role {
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": if m.content.is_empty() { Value::Null } else { json!(m.content) }});
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            v
        }
        Role::Tool => json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}),
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
    }
}

/// Parse a non-streamed completion body.
pub fn parse_completion(v: &Value) -> Result<Reply, ModelError> {
    let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
        return Err(ModelError::retryable(ModelErrorKind::EmptyAnswer, "the response had no choices"));
    };
    let msg = choice.get("message").cloned().unwrap_or(Value::Null);
    let content = msg.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
    let tool_calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let f = c.get("function").cloned().unwrap_or(Value::Null);
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    };
                    ToolCall {
                        id: c.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{i}"), str::to_string),
                        name: f.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                        arguments,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let finish = choice.get("finish_reason").and_then(Value::as_str).unwrap_or("stop");
    check_reply(Reply {
        message: Message::assistant(content, tool_calls),
        finish_reason: FinishReason::parse(finish),
        usage: v.get("usage").filter(|u| !u.is_null()).map(parse_usage),
        model: v.get("model").and_then(Value::as_str).map(str::to_string),
    })
}

fn http_error(status: u16, body: &str, retry_after: Option<Duration>) -> ModelError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    if let Some(refused) = err.and_then(|e| super::azure::content_filter(Some(status), e)) {
        return refused;
    }
    let message = err
        .and_then(|e| e.get("message").and_then(Value::as_str).or_else(|| e.as_str()))
        .map(str::to_string)
        .unwrap_or_else(|| body.chars().take(500).collect());
    let message = format!("HTTP {status}: {message}");
    let sig = format!("{} {}", err.map(Value::to_string).unwrap_or_default(), message).to_lowercase();
    match classify_message(Some(status), &sig, message) {
        ModelError::Retryable { kind, message, .. } => ModelError::Retryable { kind, message, retry_after },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_errors_keep_the_provider_message() {
        let e = http_error(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
            None,
        );
        assert_eq!(e.kind().as_str(), "auth");
        assert!(e.to_string().contains("Incorrect API key provided"));
        let e = http_error(400, r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#, None);
        assert_eq!(e.kind().as_str(), "context_length");
        let e = http_error(429, "{}", Some(Duration::from_secs(2)));
        assert!(matches!(e, ModelError::Retryable { retry_after: Some(_), .. }));
    }

    #[test]
    fn non_streamed_answer_with_object_arguments() {
        let v = serde_json::json!({"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"list_dir","arguments":{"path":"."}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2}});
        let r = parse_completion(&v).unwrap();
        assert_eq!(r.message.tool_calls[0].id, "call_0");
        assert_eq!(r.message.tool_calls[0].arguments, r#"{"path":"."}"#);
        assert_eq!(r.usage.unwrap().total_tokens, 5);
    }
}
