//! Retries for model requests: exponential backoff with jitter (the `backon` crate), the
//! server's `Retry-After` when it gives one, the run's deadline, and cancellation.

use super::{ChatRequest, Model, ModelError};
use crate::protocol::Reply;
use crate::spec::RetrySpec;
use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The longest `Retry-After` hone will honour; longer waits are capped (the deadline still applies).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Call the model, retrying retryable failures. `on_retry(attempt, error, delay)` is called
/// before each wait, so the caller can emit an event and count the fault.
pub async fn complete(
    model: &Model,
    req: &ChatRequest,
    slots: Option<&tokio::sync::Semaphore>,
    policy: &RetrySpec,
    deadline: Instant,
    cancel: &CancellationToken,
    mut on_retry: impl FnMut(u32, &ModelError, Duration),
) -> Result<Reply, ModelError> {
    let mut backoff = ExponentialBuilder::default()
        .with_min_delay(policy.initial_delay)
        .with_max_delay(policy.max_delay)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build();
    let mut attempt = 1;
    loop {
        let err = match model.complete_once(req, slots, cancel).await {
            Ok(r) => return Ok(r),
            Err(e @ (ModelError::Permanent { .. } | ModelError::Cancelled)) => return Err(e),
            Err(e) => e,
        };
        if attempt >= policy.max_attempts {
            return Err(exhausted(err, attempt));
        }
        let computed = backoff.next().unwrap_or(policy.max_delay);
        let delay = match &err {
            ModelError::Retryable { retry_after: Some(d), .. } => (*d).min(MAX_RETRY_AFTER),
            _ => computed,
        };
        if Instant::now() + delay >= deadline {
            return Err(exhausted(err, attempt));
        }
        on_retry(attempt, &err, delay);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
        }
        attempt += 1;
    }
}

fn exhausted(err: ModelError, attempts: u32) -> ModelError {
    match err {
        ModelError::Retryable { kind, message, .. } => ModelError::Permanent {
            kind,
            status: None,
            message: format!("{message} (gave up after {attempts} attempt(s))"),
        },
        other => other,
    }
}
