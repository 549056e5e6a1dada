//! The run's models in order (the job's model, then its fallbacks), and the one rule for when a
//! failure moves the run on to the next: the model stayed unavailable after its retries.

use super::{Model, ModelError, ModelErrorKind};
use crate::spec::ModelSpec;

/// One model of the run: what the spec says of it, and its client.
pub struct Link {
    pub spec: ModelSpec,
    pub client: Model,
    /// The credentials files its client reads (a profile's token file, a credentials file):
    /// hone's alone, hidden from every command.
    pub secret_files: Vec<std::path::PathBuf>,
}

/// The job's model, then its fallbacks; never empty.
pub struct Models {
    links: Vec<Link>,
}

impl Models {
    /// `first`, then `rest` in order.
    pub fn new(first: Link, rest: Vec<Link>) -> Self {
        let mut links = vec![first];
        links.extend(rest);
        Models { links }
    }

    /// The model at `i` (0: the job's own), if there is one.
    pub fn get(&self, i: usize) -> Option<&Link> {
        self.links.get(i)
    }

    /// The credentials files every model's client reads.
    pub fn secret_files(&self) -> impl Iterator<Item = std::path::PathBuf> + '_ {
        self.links.iter().flat_map(|l| l.secret_files.iter().cloned())
    }

    /// The job's own model.
    pub fn first(&self) -> &Link {
        &self.links[0]
    }
}

/// Whether a failure that outlasted its retries makes the run continue on the next model: the
/// model is unavailable (rate limited, throttled, overloaded, failing on the server, unreachable,
/// or cutting its streams). A request the model refused (too long, bad, unauthorized, for a model
/// that does not exist, filtered) never falls back: another model would not make it right, and a
/// wrong key should be fixed, not hidden.
pub fn falls_back(e: &ModelError) -> bool {
    let ModelError::Permanent { kind, .. } = e else { return false };
    matches!(
        kind,
        ModelErrorKind::RateLimited
            | ModelErrorKind::ServerError
            | ModelErrorKind::Overloaded
            | ModelErrorKind::Timeout
            | ModelErrorKind::Connection
            | ModelErrorKind::IdleTimeout
            | ModelErrorKind::StreamCut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gave_up(kind: ModelErrorKind) -> ModelError {
        ModelError::Permanent { kind, status: None, message: "x (gave up after 5 attempt(s))".into() }
    }

    #[test]
    fn only_an_unavailable_model_falls_back() {
        use ModelErrorKind::*;
        for kind in [RateLimited, ServerError, Overloaded, Timeout, Connection, IdleTimeout, StreamCut] {
            assert!(falls_back(&gave_up(kind)), "{kind:?}");
        }
        for kind in [ContextLength, Auth, NotFound, BadRequest, EmptyAnswer, ScriptExhausted, Cancelled] {
            assert!(!falls_back(&gave_up(kind)), "{kind:?}");
        }
        assert!(!falls_back(&ModelError::Cancelled));
        let still_retrying = ModelError::retryable(RateLimited, "429");
        assert!(!falls_back(&still_retrying), "only after the retries are spent");
    }
}
