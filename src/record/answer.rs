//! How the job's answer (`finish`'s `result`) fared against its `output:` schema.

use serde::{Deserialize, Serialize};

/// The check of the task's answer, for `report.json`'s `output_check`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputCheck {
    /// Where the schema came from: `inline`, or the schema file's path.
    pub schema: String,
    /// Results the model gave (valid or not).
    pub attempts: u32,
    /// Whether the last one satisfied the schema (it is then `output`).
    pub valid: bool,
    /// The validation errors of the last invalid result (`at /path: what`), at most 20.
    pub errors: Vec<String>,
    /// The last invalid result, when no valid one came (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<serde_json::Value>,
}
