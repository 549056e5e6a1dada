//! What the run did with hone's memory of the repository: the store it read, the entries given
//! to the model, what it recorded, or why memory was off.

use serde::{Deserialize, Serialize};

/// One memory entry the model was given.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct MemoryUsed {
    /// The entry's id (`hone memory show` lists it; `hone memory forget ID` removes it).
    pub id: String,
    /// The entry as the model saw it.
    pub line: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct MemoryReport {
    /// Whether the run read and recorded memory.
    pub enabled: bool,
    /// Why memory was off or not saved (the job turned it off, no store, no key for the repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Which repository the memory is of (its remote, normalized).
    #[serde(default)]
    pub key: String,
    /// The file that holds it.
    #[serde(default)]
    pub file: String,
    /// The entries it held when the run started.
    #[serde(default)]
    pub entries: usize,
    /// The entries given to the model, in the order given.
    #[serde(default)]
    pub used: Vec<MemoryUsed>,
    /// The facts this run recorded (new or updated entries).
    #[serde(default)]
    pub recorded: usize,
}
