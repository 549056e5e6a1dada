//! `hone eval`'s subcommands and their flags.

use std::path::PathBuf;

/// `hone eval` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EvalAction {
    /// Mine the history for tasks: commits that change source and tests together whose tests
    /// fail without the source change and pass with it (run in the jail, twice each way), written
    /// as SWE-bench's JSON Lines; why every other commit was left out goes beside them.
    Mine {
        /// The job spec: its check with `junit:` runs the tests; its policy builds the jail.
        #[arg(long)]
        job: PathBuf,
        /// The repository (default: the job's).
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// Only commits made on or after this day (YYYY-MM-DD, UTC).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Only commits made before this day (YYYY-MM-DD, UTC).
        #[arg(long, value_name = "DATE")]
        until: Option<String>,
        /// Only commits whose source change touches this glob (repeatable).
        #[arg(long = "path", value_name = "GLOB")]
        paths: Vec<String>,
        /// Only changes of at most N lines.
        #[arg(long, value_name = "N", default_value_t = 0)]
        max_lines: usize,
        /// Stop after N candidates.
        #[arg(long, value_name = "N", default_value_t = 0)]
        count: usize,
        /// Where the tasks go (`.dropped.jsonl` beside it says why each other commit was left out).
        #[arg(long, default_value = "tasks.jsonl")]
        out: PathBuf,
        /// The result as one JSON object on stdout, instead of the result line.
        #[arg(long)]
        json: bool,
        /// A task's text from the issue its fix closes (`Fixes #12`), read from the repository's
        /// forge with its token (as `hone run` finds them); else the commit's message.
        #[arg(long)]
        issues: bool,
    },
    /// Run every task (SWE-bench's JSON Lines; `hone eval mine` writes them) with each job spec,
    /// each in a repository holding its start and nothing later, and grade it with its held-out
    /// tests in the jail; `eval.json` in `--out` says, per task and job, resolved or not and at
    /// what cost.
    Run {
        /// The tasks file.
        tasks: PathBuf,
        /// A job spec to evaluate (repeatable: the configurations compared).
        #[arg(long = "job", required = true)]
        jobs: Vec<PathBuf>,
        /// Where the tasks' repositories, each run's reports and `eval.json` go.
        #[arg(long, default_value = "eval")]
        out: PathBuf,
        /// Keep what an earlier run in `--out` finished with the same job spec (its journal,
        /// `eval.state.jsonl`); errors run again.
        #[arg(long)]
        resume: bool,
        /// Tasks run at once.
        #[arg(long, value_name = "N", default_value_t = 2)]
        concurrency: usize,
        /// Start no task once the finished ones cost this much (US dollars; needs priced models).
        #[arg(long, value_name = "USD")]
        budget_usd: Option<f64>,
        /// Per-repository settings (where each is, a local path or a URL; its setup; its test
        /// command): see docs/eval.md.
        #[arg(long, value_name = "FILE")]
        repos: Option<PathBuf>,
        /// Each task's outcome as a JSON line on stdout as it finishes, then the totals as one
        /// more, instead of the result line.
        #[arg(long)]
        json: bool,
    },
}
