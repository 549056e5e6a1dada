//! `memory:` in the job spec: whether the run reads and adds to hone's memory of the repository
//! (facts observed in earlier runs), and how much of it the model is given.

use serde::{Deserialize, Serialize};

/// The tokens of memory entries given to the model when the spec does not say.
pub const DEFAULT_TOKENS: usize = 600;

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    /// Read the facts earlier runs observed on this repository, and record this run's (default true).
    pub enabled: Option<bool>,
    /// At most this many tokens of memory entries go to the model (default 600; 0 gives none but
    /// still records).
    pub tokens: Option<usize>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct MemorySpec {
    pub enabled: bool,
    pub tokens: usize,
}

impl Default for MemorySpec {
    fn default() -> Self {
        MemorySpec { enabled: true, tokens: DEFAULT_TOKENS }
    }
}

impl From<RawMemory> for MemorySpec {
    fn from(r: RawMemory) -> Self {
        MemorySpec { enabled: r.enabled.unwrap_or(true), tokens: r.tokens.unwrap_or(DEFAULT_TOKENS) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_on_with_a_budget_unless_the_job_says() {
        assert_eq!(MemorySpec::from(RawMemory::default()), MemorySpec { enabled: true, tokens: 600 });
        let off = MemorySpec::from(RawMemory { enabled: Some(false), tokens: None });
        assert!(!off.enabled);
        assert_eq!(MemorySpec::from(RawMemory { enabled: None, tokens: Some(0) }).tokens, 0);
    }
}
