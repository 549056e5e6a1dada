//! The process exit codes hone promises, as named constants (listed in docs/exit-codes.md).

/// The run succeeded, or nothing needed to change.
pub const SUCCESS: i32 = 0;
/// The task failed: checks still failing, a budget exhausted, or the model gave up.
pub const TASK_FAILED: i32 = 1;
/// Invalid input: the job spec, the policy file or the command line.
pub const INVALID_INPUT: i32 = 2;
/// Infrastructure failure: the model API unreachable after retries, git errors, a required MCP
/// server down.
pub const INFRA_FAILURE: i32 = 3;
/// Interrupted by SIGINT or SIGTERM.
pub const INTERRUPTED: i32 = 130;
/// `hone fleet prs`: some pull requests are still open (or closed by someone else, or a merge
/// is still to happen): not every PR is merged or closed by choice yet.
pub const PRS_OPEN: i32 = 4;
