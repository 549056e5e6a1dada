//! The records of a run that the loop keeps and the report shows: the plan, the states the
//! run went through, and what happened to the branch and the pull request. Plain data.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Blocked,
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    #[default]
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub title: String,
    #[serde(default)]
    pub intent: String,
    pub status: StepStatus,
    #[serde(default)]
    pub expected_files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// How the work will be verified.
    pub verification: String,
    pub risk: Risk,
    /// How many times the model has updated the plan.
    pub updates: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum State {
    Intake,
    ContextBuilding,
    Planning,
    Executing,
    Verifying,
    Recovering,
    Summarizing,
    Done,
    Failed,
    Aborted,
    NeedsClarification,
}

impl State {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Aborted | Self::NeedsClarification)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Intake => "INTAKE",
            Self::ContextBuilding => "CONTEXT_BUILDING",
            Self::Planning => "PLANNING",
            Self::Executing => "EXECUTING",
            Self::Verifying => "VERIFYING",
            Self::Recovering => "RECOVERING",
            Self::Summarizing => "SUMMARIZING",
            Self::Done => "DONE",
            Self::Failed => "FAILED",
            Self::Aborted => "ABORTED",
            Self::NeedsClarification => "NEEDS_CLARIFICATION",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StateSpan {
    pub state: State,
    /// Milliseconds since the run started.
    pub entered_ms: u64,
    pub duration_ms: u64,
    /// Why the machine entered this state.
    pub reason: String,
}

/// What hone did to the pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrOperation {
    Created,
    Updated,
    Closed,
    #[default]
    None,
}

impl PrOperation {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Closed => "closed",
            Self::None => "none",
        }
    }
}

/// What happened to the branch and the PR, for `report.json`.
#[derive(Debug, Clone, Serialize, Default, Deserialize, schemars::JsonSchema)]
pub struct PrReport {
    /// `github` or `gitlab`: where the PR (merge request) is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<String>,
    pub operation: PrOperation,
    pub number: Option<u64>,
    pub url: Option<String>,
    pub pushed: bool,
    /// The commit the push set the branch to (`hone fleet prs` merges a PR only at this head,
    /// and deletes its branch only while it is here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_sha: Option<String>,
    pub dry_run: bool,
    /// Why nothing was pushed or opened, when that is the case.
    pub notice: Option<String>,
    pub warnings: Vec<String>,
    /// Forge API requests retried after rate limits.
    pub retries: u32,
}

/// How an MCP server of the job fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpStatus {
    /// Started, and still answering at the end of the run.
    Running,
    /// Could not start (spawn or connect, handshake, tool list): its tools were not offered.
    Failed,
    /// Stopped answering during the run: its tools were withdrawn.
    Stopped,
}

/// One MCP server of the job, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpServerRecord {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    pub required: bool,
    pub status: McpStatus,
    /// `SERVER/TOOL` of each tool offered to the model, with the name the model saw.
    pub offered: Vec<McpToolRecord>,
    /// `SERVER/TOOL` of each tool the policy kept from the model.
    pub denied: Vec<String>,
    /// `SERVER/TOOL: why` of each allowed tool left out: its name holds a secret, its spec is
    /// too big, or the run's budget for MCP tools is spent.
    pub skipped: Vec<String>,
    pub calls: u32,
    /// Calls that failed: the tool said so, timed out, or the server was gone.
    pub failed_calls: u32,
    /// Why it failed or stopped (its stderr tail included, redacted).
    pub error: Option<String>,
    pub start_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpToolRecord {
    pub tool: String,
    pub exposed: String,
}

/// What a review (review mode) did to hone's review on the PR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewOperation {
    /// A new review was posted (the first, or one that replaces hone's earlier ones).
    Created,
    /// hone's earlier review was edited in place (nothing new to suggest, or the same suggestions).
    Updated,
    /// Nothing was posted.
    #[default]
    None,
}

/// The review posted on the PR in review mode, for `report.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewReport {
    /// `github` or `gitlab`.
    pub forge: String,
    pub number: u64,
    pub operation: ReviewOperation,
    /// The review (GitHub) or its first note (GitLab).
    pub url: Option<String>,
    /// The commit the review is for: the PR's head the change was made on.
    pub commit: String,
    /// Suggested changes anchored to the PR's diff.
    pub suggestions: usize,
    /// Files given as a patch in the body instead, each with why.
    pub in_patch: Vec<String>,
    /// hone's earlier reviews this one replaced (their comments deleted, their bodies marked).
    pub superseded: Vec<u64>,
    pub dry_run: bool,
    pub warnings: Vec<String>,
}
