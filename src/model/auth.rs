//! How a model request proves who sends it: a fixed key (a bearer token or a named header), or
//! short-lived credentials fetched from a cloud's identity service and fetched again before they
//! expire. Every credential hone fetches is registered with the run's redactor before it is
//! used, so that no log, event or report can carry it.

use super::ModelError;
use crate::protocol::ModelErrorKind;
use crate::redact::Redactor;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Credentials are fetched again when less than this much of their life is left, so that none
/// expires during a request (a streamed answer can take minutes).
pub const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);

/// Credentials with their expiry (`None`: they do not expire).
#[derive(Clone)]
pub struct Expiring<T> {
    pub value: T,
    pub expires_at: Option<SystemTime>,
}

/// The secret strings inside a credential, for the redactor.
pub trait Secrets {
    fn secrets(&self) -> Vec<&str>;
}

impl Secrets for String {
    fn secrets(&self) -> Vec<&str> {
        vec![self.as_str()]
    }
}

/// Where credentials come from: one call to an identity service (or a file read).
pub trait Source<T>: Send + Sync {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<T>, ModelError>>;
}

/// Credentials from a `Source`, kept until `REFRESH_BEFORE` their expiry. Concurrent requests
/// wait for one fetch rather than each making their own.
pub struct Refreshing<T> {
    source: Box<dyn Source<T>>,
    redactor: Redactor,
    current: tokio::sync::Mutex<Option<Expiring<T>>>,
}

impl<T: Clone + Secrets + Send> Refreshing<T> {
    pub fn new(source: impl Source<T> + 'static, redactor: Redactor) -> Self {
        Refreshing { source: Box::new(source), redactor, current: tokio::sync::Mutex::new(None) }
    }

    /// Fresh credentials: the kept ones while they have more than `REFRESH_BEFORE` to live.
    pub async fn get(&self) -> Result<T, ModelError> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref()
            && fresh(c.expires_at, SystemTime::now())
        {
            return Ok(c.value.clone());
        }
        let next = self.source.fetch().await?;
        for s in next.value.secrets() {
            self.redactor.add(s);
        }
        let value = next.value.clone();
        *current = Some(next);
        Ok(value)
    }
}

/// Whether credentials expiring at `expires_at` may still be used at `now`.
pub fn fresh(expires_at: Option<SystemTime>, now: SystemTime) -> bool {
    expires_at.is_none_or(|at| at.duration_since(now).is_ok_and(|left| left > REFRESH_BEFORE))
}

/// How a request is authenticated.
#[derive(Clone)]
pub enum Auth {
    /// No credential (a local server).
    None,
    /// `Authorization: Bearer KEY`.
    Bearer(String),
    /// A key in a header of its own (`x-api-key`, Azure's `api-key`).
    Header(&'static str, String),
    /// A bearer token fetched and refreshed (Microsoft Entra ID, Google).
    Token(Arc<Refreshing<String>>),
}

impl Auth {
    /// `rb` with the credential attached.
    pub async fn apply(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ModelError> {
        Ok(match self {
            Auth::None => rb,
            Auth::Bearer(k) => rb.bearer_auth(k),
            Auth::Header(name, k) => rb.header(*name, k),
            Auth::Token(t) => rb.bearer_auth(t.get().await?),
        })
    }
}

/// The error for credentials that could not be had: permanent (retrying a refused identity
/// does not help), naming `what` was asked and what to check.
pub fn refused(what: &str, detail: impl std::fmt::Display) -> ModelError {
    ModelError::permanent(ModelErrorKind::Auth, format!("{what}: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Counting(Arc<AtomicU32>, Duration);

    impl Source<String> for Counting {
        fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
            Box::pin(async move {
                let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(Expiring { value: format!("token-number-{n}"), expires_at: Some(SystemTime::now() + self.1) })
            })
        }
    }

    #[test]
    fn credentials_are_fresh_until_five_minutes_before_expiry() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert!(fresh(None, now));
        assert!(fresh(Some(now + Duration::from_secs(3600)), now));
        assert!(fresh(Some(now + Duration::from_secs(301)), now));
        assert!(!fresh(Some(now + Duration::from_secs(300)), now));
        assert!(!fresh(Some(now - Duration::from_secs(1)), now), "already expired");
    }

    #[tokio::test]
    async fn kept_while_fresh_fetched_again_near_expiry_and_always_redacted() {
        let n = Arc::new(AtomicU32::new(0));
        let redactor = Redactor::default();
        let long = Refreshing::new(Counting(n.clone(), Duration::from_secs(3600)), redactor.clone());
        assert_eq!(long.get().await.unwrap(), "token-number-1");
        assert_eq!(long.get().await.unwrap(), "token-number-1", "kept while it has an hour to live");
        assert_eq!(n.load(Ordering::SeqCst), 1);
        let short = Refreshing::new(Counting(n.clone(), Duration::from_secs(120)), redactor.clone());
        assert_eq!(short.get().await.unwrap(), "token-number-2");
        assert_eq!(short.get().await.unwrap(), "token-number-3", "two minutes to live: fetched again");
        for t in ["token-number-1", "token-number-2", "token-number-3"] {
            assert!(!redactor.apply(&format!("sent {t}")).contains(t), "{t} is redacted");
        }
    }
}
