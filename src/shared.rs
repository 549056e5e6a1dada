//! What the runs of one process (a fleet) share: an optional cap on model requests, and the
//! forges' shared state (`forge::Shared`: the pace of mutating requests, a GitHub App's tokens).

use std::sync::Arc;
use tokio::sync::Semaphore;

/// What the runs of one process share.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    /// At most this many model requests at once (a fleet's `model_concurrency`); none: no cap.
    pub model_slots: Option<Arc<Semaphore>>,
    /// The forges' pace and tokens, shared by every run of the process.
    pub forge: crate::forge::Shared,
}

impl Shared {
    /// Shared state with at most `n` model requests at once.
    pub fn with_model_limit(n: usize) -> Shared {
        Shared { model_slots: Some(Arc::new(Semaphore::new(n.max(1)))), ..Default::default() }
    }
}
