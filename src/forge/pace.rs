//! The pace of a forge's REST requests, GitHub's and GitLab's alike: mutating requests go one
//! at a time across every run of the process (a fleet), at least [`MIN_MUTATION_GAP`] apart, and
//! an answer that asks to wait (a rate limit) is waited out and the request sent again, a few
//! times and never for long.

use crate::error::Result;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// The least time between two mutating requests (GitHub's secondary rate limits).
pub const MIN_MUTATION_GAP: Duration = Duration::from_secs(1);
/// How often one request is sent again after a rate limit.
const MAX_RETRIES: u32 = 4;
/// The longest wait a rate limit may ask for; a longer one is the answer as it is.
const MAX_WAIT: Duration = Duration::from_secs(120);

/// The queue of mutating requests the runs of one process share: when the last one went out.
pub type Queue = std::sync::Arc<Mutex<Option<Instant>>>;

/// One answer, and how long it asks to wait before the request is sent again (a rate limit).
pub struct Sent<T> {
    pub answer: T,
    pub wait: Option<Duration>,
}

/// Send a request with `send` at the forge's pace; `retries` counts the rate limits waited out.
/// `what` names the request in the log.
pub async fn paced<T>(
    queue: &Queue,
    mutating: bool,
    retries: &AtomicU32,
    what: &str,
    mut send: impl AsyncFnMut() -> Result<Sent<T>>,
) -> Result<T> {
    // Hold the lock for the whole mutating request: one at a time, spaced out.
    let mut guard = if mutating { Some(queue.lock().await) } else { None };
    let mut attempt = 0;
    loop {
        if let Some(g) = guard.as_deref()
            && let Some(last) = *g
        {
            tokio::time::sleep_until(last + MIN_MUTATION_GAP).await;
        }
        let sent = send().await;
        if let Some(g) = guard.as_deref_mut() {
            *g = Some(Instant::now());
        }
        let sent = sent?;
        match sent.wait {
            Some(wait) if attempt < MAX_RETRIES && wait <= MAX_WAIT => {
                attempt += 1;
                retries.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(wait_s = wait.as_secs(), "rate limited; retrying {what}");
                tokio::time::sleep(wait).await;
            }
            _ => return Ok(sent.answer),
        }
    }
}

/// `f`, given up at the run's deadline (`Code::Budget`) or on cancellation (`Code::Cancelled`);
/// `what` names the work in the error.
pub async fn bounded<T>(
    bound: &crate::bound::Bound,
    what: impl FnOnce() -> String,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    use crate::error::{Code, HoneError};
    tokio::select! {
        r = tokio::time::timeout_at(bound.deadline, f) => r.unwrap_or_else(|_| {
            Err(HoneError::new(Code::Budget, format!("the wall-time budget ran out during {}", what())))
        }),
        () = bound.cancel.cancelled() => Err(HoneError::new(Code::Cancelled, format!("cancelled during {}", what()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn mutations_are_spaced_and_rate_limits_waited_out_a_few_times() {
        let queue: Queue = Default::default();
        let retries = AtomicU32::new(0);
        let start = Instant::now();
        let mut n = 0;
        let got = paced(&queue, true, &retries, "POST x", async || {
            n += 1;
            Ok(Sent { answer: n, wait: (n < 3).then_some(Duration::from_secs(5)) })
        })
        .await
        .unwrap();
        assert_eq!((got, retries.load(Ordering::Relaxed)), (3, 2));
        // Two waits of 5 s; each resend also keeps the gap, which the waits already cover.
        assert!(start.elapsed() >= Duration::from_secs(10), "{:?}", start.elapsed());
        let before = Instant::now();
        paced(&queue, true, &retries, "POST y", async || Ok(Sent { answer: (), wait: None })).await.unwrap();
        assert!(before.elapsed() >= MIN_MUTATION_GAP, "the next mutation waits for the gap");
        // A wait too long, or too many, is the answer as it is.
        let long = paced(&queue, false, &retries, "GET z", async || {
            Ok(Sent { answer: "429", wait: Some(Duration::from_secs(3600)) })
        });
        assert_eq!(long.await.unwrap(), "429");
        let mut tries = 0;
        let forever = paced(&queue, false, &retries, "GET w", async || {
            tries += 1;
            Ok(Sent { answer: tries, wait: Some(Duration::from_secs(1)) })
        });
        assert_eq!(forever.await.unwrap(), MAX_RETRIES + 1);
    }
}
