//! Retries for model requests: exponential backoff (the `backon` crate) with up to half again as
//! jitter, the server's `Retry-After` when it gives one, the run's deadline, and cancellation.
//! The first retry of a 5xx, a cut or stalled stream or a connection error comes after
//! 200–300 ms by default (`retry.initial_delay`), then 400–600 ms, and so on.

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
/// before each wait, so the caller can emit an event and count the fault (and what an empty
/// answer cost); it returns false to give up instead (the cost budget).
pub async fn complete(
    model: &Model,
    req: &ChatRequest,
    slots: Option<&tokio::sync::Semaphore>,
    policy: &RetrySpec,
    deadline: Instant,
    cancel: &CancellationToken,
    mut on_retry: impl FnMut(u32, &ModelError, Duration) -> bool,
) -> Result<Reply, ModelError> {
    let mut backoff = Backoff::new(policy);
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
        let computed = backoff.next_delay(rand::random::<f64>());
        let delay = match &err {
            ModelError::Retryable { retry_after: Some(d), .. } => (*d).min(MAX_RETRY_AFTER),
            _ => computed,
        };
        if Instant::now() + delay >= deadline {
            return Err(exhausted(err, attempt));
        }
        if !on_retry(attempt, &err, delay) {
            return Err(exhausted(err, attempt));
        }
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

/// The delays between attempts: exponential from `initial_delay`, doubling, capped at
/// `max_delay`, each stretched by up to half again at random so that clients that failed together
/// do not retry together. (backon's own jitter adds up to the whole delay again, which would make
/// the first retry 200–400 ms.)
struct Backoff {
    inner: backon::ExponentialBackoff,
    max: Duration,
}

impl Backoff {
    fn new(policy: &RetrySpec) -> Self {
        let inner = ExponentialBuilder::default()
            .with_min_delay(policy.initial_delay)
            .with_max_delay(policy.max_delay)
            .with_factor(2.0)
            .without_max_times()
            .build();
        Backoff { inner, max: policy.max_delay }
    }

    /// The next delay; `unit` is a random number in [0, 1).
    fn next_delay(&mut self, unit: f64) -> Duration {
        let base = self.inner.next().unwrap_or(self.max);
        base.mul_f64(1.0 + unit.clamp(0.0, 1.0) / 2.0).min(self.max.max(base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(initial_ms: u64, max_ms: u64) -> RetrySpec {
        RetrySpec {
            max_attempts: 10,
            initial_delay: Duration::from_millis(initial_ms),
            max_delay: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn delays_double_from_the_initial_one_with_up_to_half_again_of_jitter() {
        let ms = |d: Duration| d.as_millis();
        let mut b = Backoff::new(&policy(200, 60_000));
        assert_eq!(ms(b.next_delay(0.0)), 200);
        assert_eq!(ms(b.next_delay(0.0)), 400);
        assert_eq!(ms(b.next_delay(0.999_999)), 1199, "800 ms plus almost half again");
        let mut b = Backoff::new(&policy(200, 60_000));
        assert_eq!(ms(b.next_delay(0.5)), 250);
    }

    #[test]
    fn the_first_retry_comes_after_200_to_300_ms_by_default() {
        let defaults = crate::spec::RetrySpec::default();
        assert_eq!(defaults.initial_delay, Duration::from_millis(200));
        let firsts: Vec<u128> =
            (0..500).map(|_| Backoff::new(&defaults).next_delay(rand::random::<f64>()).as_millis()).collect();
        assert!(firsts.iter().all(|d| (200..=300).contains(d)), "{firsts:?}");
        // Spread over the range, not one fixed value.
        assert!(firsts.iter().min() < Some(&220) && firsts.iter().max() > Some(&280));
    }

    #[test]
    fn delays_stop_growing_at_the_cap() {
        let mut b = Backoff::new(&policy(1_000, 3_000));
        let delays: Vec<u128> = (0..6).map(|_| b.next_delay(0.9).as_millis()).collect();
        assert_eq!(delays, [1450, 2900, 3000, 3000, 3000, 3000]);
    }
}
