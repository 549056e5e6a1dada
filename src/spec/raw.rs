//! Raw serde types mirroring the job spec file. Every field is optional here; `spec::check`
//! applies defaults and required-field rules with positions.

use super::duration::Dur;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJob {
    /// The spec format: must be 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: Option<u32>,
    /// The job name (branch `hone/{name}`, refs, reports). Default: the file name without extension.
    pub name: Option<String>,
    /// What to do, in plain language.
    pub task: Option<String>,
    /// The repository to work on: the git work tree that contains the spec unless `path` names one.
    pub repo: Option<RawRepo>,
    /// The model and how to reach it.
    pub model: Option<RawModel>,
    /// Commands that prepare the work tree (install dependencies) before the baseline, in their own jail.
    pub setup: Option<Vec<RawCommand>>,
    /// Commands run around the model's edits: `after_edit` (with `{files}`) and `before_verify`.
    pub hooks: Option<RawHooks>,
    /// MCP servers whose tools the model may use, as the policy's `mcp:` rules allow.
    pub mcp: Option<super::mcp::RawMcp>,
    /// The repository's own checks, run before any change (the baseline) and after the model finishes.
    pub verify: Option<Vec<RawVerify>>,
    /// The run's budgets: turns, wall time, tokens, fix attempts, cost.
    pub limits: Option<RawLimits>,
    /// The policy file, relative to the spec (default: the built-in policy).
    pub policy: Option<String>,
    /// Branch, commit and push settings.
    pub git: Option<RawGit>,
    /// Where the reports go.
    pub report: Option<RawReport>,
    /// Limits of the model's tools.
    pub tools: Option<RawTools>,
    /// Ask the model for a plan first (default true).
    pub plan: Option<bool>,
    /// What goes into the model's context.
    pub context: Option<RawContext>,
    /// The pull request hone opens or updates.
    pub pr: Option<RawPr>,
    /// The forge (GitHub or GitLab) when the remote does not say, and a self-managed GitLab's address.
    pub forge: Option<super::forge::RawForge>,
    /// What the job does with its change: commit (default), review (suggestions on the PR, no push) or none (read-only).
    pub change: Option<super::answer::Change>,
    /// The JSON Schema the job's answer (the model's `result`) must satisfy.
    pub output: Option<super::answer::RawOutput>,
    /// hone's memory of this repository: facts it observed in earlier runs (on by default).
    pub memory: Option<super::memory::RawMemory>,
    /// Independent tries of the task, each in its own worktree: a number, a list of tries (each with its own `model` or the job's), or `{tries, strategy: parallel | cascade}`; the repository's checks choose the one that lands (default 1).
    pub attempts: Option<super::attempts::RawAttempts>,
    /// OpenTelemetry: whether this job exports when the environment names a collector, content capture, the flush bound, attributes of your own.
    pub telemetry: Option<super::telemetry::RawTelemetry>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    /// The token budget of the repo map in the system prompt (default 1500; 0: no map).
    pub repo_map_tokens: Option<usize>,
    /// The repository's instruction files for agents, relative to the root, read from the base
    /// commit; a plain file name is also looked for in each directory the model works in.
    /// Default: AGENTS.md, CLAUDE.md, .github/copilot-instructions.md, .goosehints,
    /// .openhands/microagents/repo.md. `[]`: none.
    pub instructions: Option<Vec<String>>,
    /// At most this many bytes of each instruction file are given (default 16384).
    #[schemars(range(min = 1, max = 1048576))]
    pub instructions_max_bytes: Option<usize>,
    /// The token budget of all the instruction files a run gives (default 4000; 0: none).
    pub instructions_tokens: Option<usize>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRepo {
    pub path: Option<String>,
    pub base: Option<String>,
    pub allow_dirty: Option<bool>,
    pub scratch: Option<bool>,
}

/// Which model API hone talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    Openai,
    Anthropic,
    OpenaiCompatible,
    /// Azure OpenAI: a resource's deployments, with an `api-key` or a Microsoft Entra ID token.
    Azure,
    /// Amazon Bedrock's Converse API, signed with SigV4 from the standard AWS credentials.
    Bedrock,
    /// Google Vertex AI: Anthropic models (rawPredict) and Gemini models (its OpenAI-compatible
    /// endpoint), with Application Default Credentials.
    Vertex,
    /// Replays scripted turns from a file: for the offline example and tests, never a real model.
    Script,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenaiCompatible => "openai-compatible",
            Provider::Azure => "azure",
            Provider::Bedrock => "bedrock",
            Provider::Vertex => "vertex",
            Provider::Script => "script",
        }
    }
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// Which API: openai, anthropic, openai-compatible (Ollama, vLLM, llama.cpp), azure, bedrock, vertex or script (replayed turns, for tests and demos).
    pub provider: Option<Provider>,
    /// The model id sent to the API.
    pub name: Option<String>,
    /// The API root, like http://localhost:11434/v1.
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key, never the key itself.
    pub api_key_env: Option<String>,
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// The most tokens one answer may have (default 4096).
    pub max_output_tokens: Option<u32>,
    /// Stream answers over SSE (default true).
    pub stream: Option<bool>,
    /// For `provider: script`: the YAML file of turns.
    pub script: Option<String>,
    /// Time limit of a request, or of waiting for a stream to start (default 10m).
    pub request_timeout: Option<Dur>,
    /// A stream silent this long is cut and retried (default 2m).
    pub idle_timeout: Option<Dur>,
    /// Retries of failed model requests.
    pub retry: Option<RawRetry>,
    /// native (the API's tool calling) or text (tools in the prompt).
    pub tool_mode: Option<ToolMode>,
    /// The model's context window in tokens.
    pub context_window: Option<u64>,
    /// Which OpenAI API: chat (Chat Completions) or responses (the Responses API). Default: responses for models served only there (codex, -pro), else chat.
    pub api: Option<Api>,
    /// Prices in US dollars per million tokens, for the run's cost and `limits.max_cost_usd`.
    pub pricing: Option<super::pricing::RawPricing>,
    /// Azure OpenAI: the deployment (the `openai/deployments/NAME/…?api-version=` form); without it, the `openai/v1/` form with `name` as the model.
    pub deployment: Option<String>,
    /// Azure OpenAI: the `api-version` of the deployments form.
    pub api_version: Option<String>,
    /// Bedrock and Vertex AI: the region (us-east-1, us-east5, global); default AWS_REGION, or GOOGLE_CLOUD_LOCATION.
    pub region: Option<String>,
    /// Vertex AI: the Google Cloud project; default GOOGLE_CLOUD_PROJECT, or the credentials' own.
    pub project: Option<String>,
    /// Other models to continue on, in order, when this one stays unavailable (rate limits, 5xx, overloaded, throttled) after its retries.
    pub fallback: Option<Vec<RawModel>>,
}

/// Which OpenAI API hone speaks (`model.api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// Chat Completions (`/chat/completions`): OpenAI and every compatible server.
    Chat,
    /// The Responses API (`/responses`): OpenAI's newest models; reasoning carried between turns.
    Responses,
}

/// How the model calls tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// The API's own tool calling.
    #[default]
    Native,
    /// Tools described in the prompt; calls parsed from the answer text.
    Text,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetry {
    pub max_attempts: Option<u32>,
    pub initial_delay: Option<Dur>,
    pub max_delay: Option<Dur>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    /// A short name, unique in its list.
    pub name: Option<String>,
    /// The shell command, run with bash -c in the repo root.
    pub run: Option<String>,
    /// Its time limit.
    pub timeout: Option<Dur>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    pub after_edit: Option<Vec<RawCommand>>,
    pub before_verify: Option<Vec<RawCommand>>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVerify {
    /// A short name, unique among the checks.
    pub name: Option<String>,
    /// The shell command, run with bash -c in the repo root.
    pub run: Option<String>,
    /// Its time limit (default 10m).
    pub timeout: Option<Dur>,
    /// pass (default) or no-regression (fail no worse than at the baseline).
    pub expect: Option<Expect>,
    /// A JUnit XML file the command writes (repo-relative), to judge test case by test case.
    pub junit: Option<String>,
}

/// What a check must show at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// It must pass.
    #[default]
    Pass,
    /// It may fail, but no worse than at the baseline.
    NoRegression,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Model requests per run (default 40).
    #[schemars(range(min = 1))]
    pub max_turns: Option<u32>,
    /// The whole run (default 20m).
    pub max_wall_time: Option<Dur>,
    /// Total tokens (default 2000000).
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// How often failing checks go back to the model (default 3).
    pub max_fix_attempts: Option<u32>,
    /// The run's cost cap in US dollars; needs `model.pricing`.
    #[schemars(range(min = 0))]
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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

impl schemars::JsonSchema for PrEnabled {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PrEnabled".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "oneOf": [{"type": "boolean"}, {"const": "auto"}],
            "description": "true, false, or \"auto\": open a PR when a token is present",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    #[default]
    None,
    Draft,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPr {
    pub enabled: Option<PrEnabled>,
    pub title: Option<String>,
    pub draft: Option<bool>,
    pub labels: Option<Vec<String>>,
    pub reviewers: Option<Vec<String>>,
    /// Users the PR (merge request) is assigned to.
    pub assignees: Option<Vec<String>>,
    pub team_reviewers: Option<Vec<String>>,
    pub update_existing: Option<bool>,
    pub close_if_empty: Option<bool>,
    pub on_failure: Option<OnFailure>,
    pub number: Option<u64>,
    pub allow_forks: Option<bool>,
    /// `hone fleet`: at most this many of the campaign's PRs opened in any hour (Renovate's
    /// `prHourlyLimit`); a repository that would open one more waits for a later fleet run.
    #[schemars(range(min = 1))]
    pub hourly_limit: Option<u32>,
    /// `hone fleet`: at most this many of the campaign's PRs open at once (Renovate's
    /// `prConcurrentLimit`); a repository whose PR is open still runs and updates it.
    #[schemars(range(min = 1))]
    pub open_limit: Option<u32>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawReport {
    pub dir: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    pub cmd_timeout: Option<Dur>,
    pub max_output_bytes: Option<usize>,
    pub max_read_bytes: Option<usize>,
}
