//! What a run is asked to do, fixed before it starts: the request (the command line, or a
//! fleet's or replay's settings, and the environment read once), where its live output goes,
//! and the stand-ins replay puts in place of the job's own model and policy.

use crate::ci_text::Out;
use crate::env::RunEnv;
use crate::progress::Progress;
use crate::record::RunRecord;
use crate::redact::Redactor;
use crate::shared::Shared;
use crate::spec::Job;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where the job comes from.
pub enum Source {
    /// A job spec file.
    Spec(PathBuf),
    /// A job already read and parsed (a fleet reads its job file once; replay settles one).
    Job(Box<Job>),
    /// A one-off job from the overrides' `task` and `model` alone.
    OneOff,
}

/// The command line's (or a fleet's) changes to the job.
#[derive(Default, Clone)]
pub struct Overrides {
    pub task: Option<String>,
    pub model: Option<String>,
    pub name: Option<String>,
    /// Verify commands for a one-off job (refused with a spec: they belong in its `verify:`).
    pub verify: Vec<String>,
    /// The PR to fix in place (autofix).
    pub pr: Option<u64>,
    /// `repo.base` (fleet: a repository's base branch).
    pub base: Option<String>,
    /// `change:` (`--review`, `--change`).
    pub change: Option<crate::spec::answer::Change>,
    /// `--no-memory`: memory off whatever the job says.
    pub no_memory: bool,
    /// `--attempts N`: the job's number of tries.
    pub attempts: Option<u32>,
}

/// One run's request. Never changed once made: each stage reads what it needs of it.
pub struct Request {
    pub source: Source,
    pub overrides: Overrides,
    /// `--repo`: the repository, instead of the one that holds the spec.
    pub repo: Option<PathBuf>,
    /// `--report-dir`.
    pub report_dir: Option<PathBuf>,
    /// Write `pr.md` and `change.patch` only: no push, no GitHub API calls.
    pub dry_run: bool,
    /// `--continue REF`: start from the work a failed run saved there.
    pub continue_from: Option<String>,
    /// Whether `GITHUB_REPOSITORY` / `CI_PROJECT_PATH` name this repository (not for a fleet's
    /// targets: each one's remote says which it is).
    pub env_repo: bool,
    /// Whether the checkout's remote URL is trusted input: a fleet's clone, made by hone from the
    /// fleet file's URL (not a checkout whose config the repository's side controls).
    pub remote_trusted: bool,
    /// The environment the run starts in, read once by the caller.
    pub env: Arc<RunEnv>,
    /// What the runs of this process share (a fleet's caps and queues).
    pub shared: Shared,
    /// Cancels the run (SIGINT/SIGTERM, or a fleet failing fast).
    pub cancel: CancellationToken,
    /// The process's redactor: the run adds the secrets it finds.
    pub redactor: Redactor,
    /// Where hone's memory of repositories is kept (`--memory-dir`, a fleet's workspace);
    /// `None`: the default place for this environment.
    pub memory_dir: Option<PathBuf>,
    /// Where the run's trace and metrics go (its own exporters, a fleet's, or nowhere).
    pub telemetry: crate::telemetry::Link,
}

impl Request {
    /// A request for `source` with nothing overridden.
    pub fn new(source: Source, env: Arc<RunEnv>, cancel: CancellationToken, redactor: Redactor) -> Self {
        Request {
            source,
            overrides: Overrides::default(),
            repo: None,
            report_dir: None,
            dry_run: false,
            continue_from: None,
            env_repo: true,
            remote_trusted: false,
            env,
            shared: Shared::default(),
            cancel,
            redactor,
            memory_dir: None,
            telemetry: crate::telemetry::Link::Own,
        }
    }
}

/// Where the run's live output goes, besides its report dir.
#[derive(Default)]
pub struct Sinks {
    pub events: EventSinks,
    /// GitHub Actions workflow commands (`::add-mask::`, `::error`), under Actions.
    pub commands: Option<Out>,
}

/// Where the run's events go as they happen, besides `events.jsonl`.
#[derive(Default)]
pub struct EventSinks {
    /// The JSONL event stream, under `--json`.
    pub json: Option<Box<dyn Write + Send>>,
    /// Human progress (stderr), unless `--quiet`.
    pub progress: Option<Progress>,
    /// Tag every event with this repository id (fleet runs under `--json`).
    pub tag: Option<String>,
}

/// `hone replay`'s stand-ins for the job's own parts.
#[derive(Default)]
pub struct Hooks {
    /// The model answers from a transcript.
    pub model: Option<Arc<crate::model::replay::Replay>>,
    /// The policy replay settled (verify commands allowed), instead of the job's `policy:` file.
    pub policy: Option<Box<crate::policy::Policy>>,
}

/// How the run ended: its record, and what the command line prints and exits with.
pub struct RunOutcome {
    /// The record's exit code, unless the reports could not be written.
    pub exit_code: i32,
    /// The one-line result for stdout.
    pub line: String,
    /// A message for stderr (an input problem, rendered with its position and what to do).
    pub message: Option<String>,
    pub record: Box<RunRecord>,
}
