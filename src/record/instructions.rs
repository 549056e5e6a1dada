//! The repository's instruction files a run gave the model (`instructions` in report.json).

use serde::{Deserialize, Serialize};

/// One instruction file given to the model, as it was at the base commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InstructionFile {
    /// The file's path from the repository root.
    pub path: String,
    /// Its size at the base commit, in bytes.
    pub bytes: u64,
    /// How many bytes of it (as UTF-8 with LF line ends) the model was given.
    pub given_bytes: u64,
    /// Cut short: at `context.instructions_max_bytes`, or where the run's budget ran out.
    pub truncated: bool,
    /// The turn whose tool result carried it; 0: the first user message.
    pub turn: u32,
}
