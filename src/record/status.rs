//! How a run ended, and the exit code each ending maps to.

use serde::Serialize;

/// How a run ended. Each maps to one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Checks pass and the change is committed.
    Success,
    /// Checks pass and nothing needed to change.
    NoChange,
    /// Checks still fail after every fix attempt, or the model could not finish.
    Failed,
    /// A budget (turns, wall time, tokens) ran out.
    BudgetExhausted,
    /// Stopped by SIGINT or SIGTERM.
    Cancelled,
    /// Infrastructure failure: model API or git.
    Error,
    /// The model judged the task too ambiguous and asked questions instead of guessing.
    NeedsClarification,
    /// Nothing was done on purpose (autofix: a fork PR, or hone's own head commit).
    Skipped,
    /// The run could not start: an invalid spec or policy, a dirty work tree, a check that
    /// cannot run. The model was never asked anything.
    InvalidInput,
}

impl Status {
    pub fn exit_code(self) -> i32 {
        use crate::exit::*;
        match self {
            Status::Success | Status::NoChange | Status::Skipped => SUCCESS,
            Status::Failed | Status::BudgetExhausted | Status::NeedsClarification => TASK_FAILED,
            Status::Cancelled => INTERRUPTED,
            Status::Error => INFRA_FAILURE,
            Status::InvalidInput => INVALID_INPUT,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::NoChange => "no_change",
            Status::Failed => "failed",
            Status::BudgetExhausted => "budget_exhausted",
            Status::Cancelled => "cancelled",
            Status::Error => "error",
            Status::NeedsClarification => "needs_clarification",
            Status::Skipped => "skipped",
            Status::InvalidInput => "invalid_input",
        }
    }
}
