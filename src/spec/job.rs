//! The validated job: what a run needs, with every default applied and every path resolved.

use super::raw::Provider;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Serialize)]
pub struct Job {
    pub spec_path: PathBuf,
    /// SHA-256 (hex) of the spec's text as read (the transcript records it for `hone replay`).
    #[serde(skip)]
    pub spec_sha256: String,
    pub name: String,
    pub task: String,
    pub repo: RepoSpec,
    pub model: ModelSpec,
    /// Commands that prepare the work tree (install dependencies) before the baseline.
    pub setup: Vec<CommandSpec>,
    /// Commands run around the model's edits (formatters, fixers).
    pub hooks: HooksSpec,
    /// MCP servers whose tools (as the policy allows) the model is offered.
    pub mcp: Vec<super::mcp::McpServerSpec>,
    pub verify: Vec<VerifySpec>,
    pub limits: Limits,
    pub policy: Option<PathBuf>,
    pub git: GitSpec,
    /// `report.dir`, resolved against the spec's directory; `None`: `.hone/reports` at the
    /// repository root.
    pub report_dir: Option<PathBuf>,
    pub tools: ToolLimits,
    /// Ask the model for an explicit plan first (`plan: false` skips it for small jobs).
    pub plan: bool,
    /// Token budget of the repo map in the system prompt (0: no map).
    pub repo_map_tokens: usize,
    /// The repository's instruction files the model is given (`context.instructions`).
    pub instructions: InstructionsSpec,
    pub pr: PrSpec,
    pub forge: super::forge::ForgeSpec,
    /// What the job does with its change (`change:`).
    pub change: super::answer::Change,
    /// The schema the job's answer must satisfy (`output:`).
    pub output: Option<super::answer::OutputSpec>,
    /// Whether the run reads and adds to hone's memory of the repository (`memory:`).
    pub memory: super::memory::MemorySpec,
    /// OpenTelemetry export (`telemetry:`).
    pub telemetry: super::telemetry::TelemetrySpec,
    /// The job's tries (`attempts:`): one, unless the spec or `--attempts` asks for more.
    pub attempts: super::attempts::AttemptsSpec,
}

/// `context.instructions*`: which instruction files, and how much of them.
#[derive(Debug, Clone, Serialize)]
pub struct InstructionsSpec {
    /// Paths from the repository root; the plain file names among them are also looked for in
    /// every directory between the root and a file the model works on.
    pub files: Vec<String>,
    /// At most this many bytes of each file.
    pub max_bytes: usize,
    /// The budget of all of them over the run, in tokens (4 bytes each).
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepoSpec {
    /// `repo.path`, resolved against the spec file's directory; `None`: the git work tree that
    /// contains the spec.
    pub path: Option<PathBuf>,
    /// The branch or ref to start from; `None` means the current HEAD.
    pub base: Option<String>,
    /// Allow starting with uncommitted changes (they are left untouched and not committed).
    pub allow_dirty: bool,
    /// Copy `path` into a fresh scratch git repository and run there (demos, experiments).
    pub scratch: bool,
    /// The commit the instruction files are read from when it is not the base and no pull
    /// request names it: only a replay sets it (where the recorded run read them, a pull
    /// request's base), never a spec.
    #[serde(skip)]
    pub guidance: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelSpec {
    pub provider: Provider,
    pub name: String,
    /// Explicit base URL from the spec; env defaults are applied at run time.
    pub base_url: Option<String>,
    pub api_key_env: String,
    pub temperature: Option<f64>,
    pub max_output_tokens: u32,
    pub stream: bool,
    /// Script file for `provider: script`.
    pub script: Option<PathBuf>,
    #[serde(with = "dur_ser")]
    pub request_timeout: Duration,
    #[serde(with = "dur_ser")]
    pub idle_timeout: Duration,
    pub retry: RetrySpec,
    pub tool_mode: super::raw::ToolMode,
    /// The model's context window in tokens (explicit, or a default for known model families).
    pub context_window: u64,
    /// Chat Completions or the Responses API (OpenAI and compatible servers only).
    pub api: super::raw::Api,
    /// Prices per million tokens, for the run's cost (`None`: the cost is not known).
    pub pricing: Option<super::pricing::Pricing>,
    /// Azure OpenAI: the deployment (`None`: the `/openai/v1/` form, `name` as the model).
    pub deployment: Option<String>,
    /// Azure OpenAI: the `api-version` of the deployments form.
    pub api_version: Option<String>,
    /// Bedrock and Vertex AI: the region from the spec (`None`: from the environment at run time).
    pub region: Option<String>,
    /// Vertex AI: the project from the spec (`None`: from the environment or the credentials).
    pub project: Option<String>,
    /// The models to continue on, in order, when this one stays unavailable after its retries
    /// (each without a fallback of its own).
    pub fallback: Vec<ModelSpec>,
}

impl ModelSpec {
    /// The path of the first model block without prices (`model`, or `model.fallback[i]`).
    pub fn unpriced(&self) -> Option<String> {
        if self.pricing.is_none() {
            return Some("model".into());
        }
        self.fallback.iter().position(|f| f.pricing.is_none()).map(|i| format!("model.fallback[{i}]"))
    }

    /// This model, then its fallbacks, in order.
    pub fn chain(&self) -> impl Iterator<Item = &ModelSpec> {
        std::iter::once(self).chain(&self.fallback)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RetrySpec {
    pub max_attempts: u32,
    #[serde(with = "dur_ser")]
    pub initial_delay: Duration,
    #[serde(with = "dur_ser")]
    pub max_delay: Duration,
}

impl Default for RetrySpec {
    /// Five attempts; the first retry after 200–300 ms (a transient 5xx or a cut stream is
    /// usually over by then), doubling up to a minute.
    fn default() -> Self {
        RetrySpec { max_attempts: 5, initial_delay: Duration::from_millis(200), max_delay: Duration::from_secs(60) }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifySpec {
    pub name: String,
    pub run: String,
    pub expect: super::raw::Expect,
    /// A JUnit XML file the command writes (repo-relative), to compare failing test cases.
    pub junit: Option<String>,
    #[serde(with = "dur_ser")]
    pub timeout: Duration,
}

/// A named command with a timeout: a `setup` entry (run once, in order, after the checkout and
/// before the baseline) or a hook.
#[derive(Debug, Clone, Serialize)]
pub struct CommandSpec {
    pub name: String,
    pub run: String,
    #[serde(with = "dur_ser")]
    pub timeout: Duration,
}

impl CommandSpec {
    /// As a check that must pass, to run and report like one.
    pub fn as_check(&self) -> VerifySpec {
        VerifySpec {
            name: self.name.clone(),
            run: self.run.clone(),
            expect: super::raw::Expect::default(),
            junit: None,
            timeout: self.timeout,
        }
    }
}

/// `hooks:`: `after_edit` runs after each successful write tool, with `{files}` the changed
/// paths (shell-quoted); `before_verify` once before each verification round, with `{files}` the
/// change's paths.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HooksSpec {
    pub after_edit: Vec<CommandSpec>,
    pub before_verify: Vec<CommandSpec>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub max_turns: u32,
    #[serde(with = "dur_ser")]
    pub max_wall_time: Duration,
    pub max_tokens: u64,
    pub max_fix_attempts: u32,
    /// Stop before a request that could take the run's cost past this (needs `model.pricing`).
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GitSpec {
    /// The branch name, with `{name}` already substituted.
    pub branch: String,
    pub commit: bool,
    pub author_name: String,
    pub author_email: String,
    pub remote: String,
    /// The env var holding the token for HTTPS pushes and the forge's API, when the job names
    /// one (default: GITHUB_TOKEN on GitHub; GITLAB_TOKEN, else CI_JOB_TOKEN, on GitLab).
    pub token_env: Option<String>,
    pub push: bool,
    /// Branches hone never pushes to (globs), besides the base.
    pub protected: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrSpec {
    pub enabled: super::raw::PrEnabled,
    pub title: String,
    pub draft: bool,
    pub labels: Vec<String>,
    pub reviewers: Vec<String>,
    pub assignees: Vec<String>,
    pub team_reviewers: Vec<String>,
    pub update_existing: bool,
    pub close_if_empty: bool,
    pub on_failure: super::raw::OnFailure,
    /// Autofix mode: the PR to fix in place.
    pub number: Option<u64>,
    pub allow_forks: bool,
    /// `hone fleet`'s pace: at most this many of the campaign's PRs opened an hour.
    pub hourly_limit: Option<u32>,
    /// `hone fleet`'s pace: at most this many of the campaign's PRs open at once.
    pub open_limit: Option<u32>,
}

impl From<super::raw::RawPr> for PrSpec {
    fn from(r: super::raw::RawPr) -> PrSpec {
        PrSpec {
            enabled: r.enabled.unwrap_or_default(),
            title: r.title.unwrap_or_else(|| "hone: {summary_title}".into()),
            draft: r.draft.unwrap_or(false),
            labels: r.labels.unwrap_or_default(),
            reviewers: r.reviewers.unwrap_or_default(),
            assignees: r.assignees.unwrap_or_default(),
            team_reviewers: r.team_reviewers.unwrap_or_default(),
            update_existing: r.update_existing.unwrap_or(true),
            close_if_empty: r.close_if_empty.unwrap_or(false),
            on_failure: r.on_failure.unwrap_or_default(),
            number: r.number,
            allow_forks: r.allow_forks.unwrap_or(false),
            hourly_limit: r.hourly_limit,
            open_limit: r.open_limit,
        }
    }
}

impl super::Checker<'_> {
    /// `pr.hourly_limit` and `pr.open_limit`: positive when given.
    pub(super) fn pace(&mut self, pr: &PrSpec) {
        for (key, n) in [("hourly_limit", pr.hourly_limit), ("open_limit", pr.open_limit)] {
            if n == Some(0) {
                self.err(&format!("pr.{key}"), "must be at least 1", "leave it out for no limit");
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolLimits {
    #[serde(with = "dur_ser")]
    pub cmd_timeout: Duration,
    pub max_output_bytes: usize,
    pub max_read_bytes: usize,
}

pub(super) mod dur_ser {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::spec::duration::format(*d))
    }
}
