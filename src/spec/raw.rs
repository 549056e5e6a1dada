//! Raw serde types mirroring the job spec file. Every field is optional here; `spec::check`
//! applies defaults and required-field rules with positions.

use super::duration::Dur;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJob {
    pub version: Option<u32>,
    pub name: Option<String>,
    pub task: Option<String>,
    pub repo: Option<RawRepo>,
    pub model: Option<RawModel>,
    pub setup: Option<Vec<RawCommand>>,
    pub hooks: Option<RawHooks>,
    pub mcp: Option<super::mcp::RawMcp>,
    pub verify: Option<Vec<RawVerify>>,
    pub limits: Option<RawLimits>,
    pub policy: Option<String>,
    pub git: Option<RawGit>,
    pub report: Option<RawReport>,
    pub tools: Option<RawTools>,
    pub plan: Option<bool>,
    pub context: Option<RawContext>,
    pub pr: Option<RawPr>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    pub repo_map_tokens: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRepo {
    pub path: Option<String>,
    pub base: Option<String>,
    pub allow_dirty: Option<bool>,
    pub scratch: Option<bool>,
}

/// Which model API hone talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    Openai,
    Anthropic,
    OpenaiCompatible,
    /// Replays scripted turns from a file: for the offline example and tests, never a real model.
    Script,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenaiCompatible => "openai-compatible",
            Provider::Script => "script",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub provider: Option<Provider>,
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u32>,
    pub stream: Option<bool>,
    pub script: Option<String>,
    pub request_timeout: Option<Dur>,
    pub idle_timeout: Option<Dur>,
    pub retry: Option<RawRetry>,
    pub tool_mode: Option<ToolMode>,
    pub context_window: Option<u64>,
    pub pricing: Option<super::pricing::RawPricing>,
}

/// How the model calls tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// The API's own tool calling.
    #[default]
    Native,
    /// Tools described in the prompt; calls parsed from the answer text.
    Text,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetry {
    pub max_attempts: Option<u32>,
    pub initial_delay: Option<Dur>,
    pub max_delay: Option<Dur>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    pub name: Option<String>,
    pub run: Option<String>,
    pub timeout: Option<Dur>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    pub after_edit: Option<Vec<RawCommand>>,
    pub before_verify: Option<Vec<RawCommand>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVerify {
    pub name: Option<String>,
    pub run: Option<String>,
    pub timeout: Option<Dur>,
    pub expect: Option<Expect>,
    pub junit: Option<String>,
}

/// What a check must show at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// It must pass.
    #[default]
    Pass,
    /// It may fail, but no worse than at the baseline.
    NoRegression,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_turns: Option<u32>,
    pub max_wall_time: Option<Dur>,
    pub max_tokens: Option<u64>,
    pub max_fix_attempts: Option<u32>,
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGit {
    pub branch: Option<String>,
    pub commit: Option<bool>,
    pub author_name: Option<String>,
    pub author_email: Option<String>,
    pub remote: Option<String>,
    pub token_env: Option<String>,
    pub push: Option<bool>,
    pub protected: Option<Vec<String>>,
}

/// `pr.enabled`: true, false, or "auto" (open a PR when a token is present).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrEnabled {
    Yes,
    No,
    #[default]
    Auto,
}

impl<'de> Deserialize<'de> for PrEnabled {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(PrEnabled::Yes),
            serde_json::Value::Bool(false) => Ok(PrEnabled::No),
            serde_json::Value::String(s) if s == "auto" => Ok(PrEnabled::Auto),
            other => Err(serde::de::Error::custom(format!("expected true, false or \"auto\", found {other}"))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    #[default]
    None,
    Draft,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPr {
    pub enabled: Option<PrEnabled>,
    pub title: Option<String>,
    pub draft: Option<bool>,
    pub labels: Option<Vec<String>>,
    pub reviewers: Option<Vec<String>>,
    pub team_reviewers: Option<Vec<String>>,
    pub update_existing: Option<bool>,
    pub close_if_empty: Option<bool>,
    pub on_failure: Option<OnFailure>,
    pub number: Option<u64>,
    pub allow_forks: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReport {
    pub dir: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    pub cmd_timeout: Option<Dur>,
    pub max_output_bytes: Option<usize>,
    pub max_read_bytes: Option<usize>,
}
