//! Model clients behind one interface, with failures classified as retryable or permanent.

pub mod anthropic;
pub mod auth;
pub mod azure;
pub mod bedrock;
pub mod chain;
pub mod http;
pub mod openai;
pub mod replay;
pub mod responses;
pub(crate) mod responses_read;
pub mod retry;
pub mod script;
pub mod stream;
pub mod textmode;
pub mod vertex;

pub use crate::protocol::ModelErrorKind;
use crate::protocol::{Message, Reply, ToolSpec};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One request: the whole history and the tools on offer.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// A model failure. Every variant carries a stable `kind` used in reports and events.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// Worth retrying: rate limits, 5xx, dropped connections, timeouts, cut or empty answers.
    #[error("{message}")]
    Retryable { kind: ModelErrorKind, message: String, retry_after: Option<Duration> },
    /// Retrying will not help: bad request, auth, unknown model, context too long.
    #[error("{message}")]
    Permanent { kind: ModelErrorKind, status: Option<u16>, message: String },
    #[error("cancelled")]
    Cancelled,
    /// An answer with neither text nor tool calls: retried like a `Retryable`, and what the
    /// provider says it cost still counts.
    #[error("the model returned no text and no tool calls")]
    Empty { usage: Option<crate::protocol::Usage> },
}

impl ModelError {
    pub fn retryable(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError::Retryable { kind, message: message.into(), retry_after: None }
    }
    pub fn permanent(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError::Permanent { kind, status: None, message: message.into() }
    }
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            ModelError::Retryable { kind, .. } | ModelError::Permanent { kind, .. } => *kind,
            ModelError::Cancelled => ModelErrorKind::Cancelled,
            ModelError::Empty { .. } => ModelErrorKind::EmptyAnswer,
        }
    }
    pub fn class(&self) -> &'static str {
        match self {
            ModelError::Retryable { .. } | ModelError::Empty { .. } => "retryable",
            ModelError::Permanent { .. } => "permanent",
            ModelError::Cancelled => "cancelled",
        }
    }
}

/// The configured model client.
pub enum Model {
    OpenAi(openai::OpenAi),
    Responses(responses::Responses),
    /// `hone replay`: answers from a transcript.
    Replay(std::sync::Arc<replay::Replay>),
    Anthropic(anthropic::Anthropic),
    Script(script::Script),
    Bedrock(bedrock::Bedrock),
    /// Google Vertex AI: Claude (Anthropic's Messages API) or Gemini (Chat Completions).
    Vertex(vertex::Vertex),
}

impl Model {
    /// One attempt: no retries here (see `retry::complete`). With `slots` (a fleet's model
    /// concurrency), the request waits for a free slot first.
    pub async fn complete_once(
        &self,
        req: &ChatRequest,
        slots: Option<&tokio::sync::Semaphore>,
        cancel: &CancellationToken,
    ) -> Result<Reply, ModelError> {
        let fut = async {
            let _permit = match slots {
                Some(s) => s.acquire().await.ok(),
                None => None,
            };
            match self {
                Model::OpenAi(m) => m.complete(req).await,
                Model::Responses(m) => m.complete(req).await,
                Model::Replay(r) => r.complete(req),
                Model::Anthropic(m) => m.complete(req).await,
                Model::Script(s) => s.complete(req),
                Model::Bedrock(m) => m.complete(req).await,
                Model::Vertex(m) => m.complete(req).await,
            }
        };
        tokio::select! {
            r = fut => r,
            () = cancel.cancelled() => Err(ModelError::Cancelled),
        }
    }
}

/// Check a finished answer: an answer the provider's content filter stopped is refused (asking
/// again would not help), and one with neither text nor tool calls is not an answer.
pub fn check_reply(reply: Reply) -> Result<Reply, ModelError> {
    if reply.finish_reason == crate::protocol::FinishReason::ContentFilter {
        return Err(ModelError::Permanent {
            kind: ModelErrorKind::ContentFilter,
            status: None,
            message: "the provider's content filter stopped the answer (finish_reason `content_filter`)".into(),
        });
    }
    if reply.message.content.trim().is_empty() && reply.message.tool_calls.is_empty() {
        return Err(ModelError::Empty { usage: reply.usage });
    }
    Ok(reply)
}
