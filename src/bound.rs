//! How long work may go on: the run's deadline and its cancellation token, which travel together.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A deadline and the token that cancels the work before it: work stops at whichever comes first.
#[derive(Clone, Debug)]
pub struct Bound {
    pub deadline: Instant,
    pub cancel: CancellationToken,
}

impl Bound {
    /// The bound of `deadline` and `cancel` (a clone of the token: it cancels the same work).
    pub fn new(deadline: Instant, cancel: &CancellationToken) -> Bound {
        Bound { deadline, cancel: cancel.clone() }
    }
}
