//! Command-line interface (clap derive). The doc comments are the `--help` text.

mod eval;
mod shard;
pub use eval::EvalAction;

pub use shard::{Shard, ShardError};

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// hone: a headless LLM coding agent for CI. It runs a job spec against a git repository:
/// a model edits the code in a tool loop, hone verifies the result with the repo's own checks,
/// commits it on a branch, and writes JSON, JUnit and Markdown reports.
#[derive(Debug, Parser)]
#[command(name = "hone", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output on stderr (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No progress on stderr: only errors and the result line.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum FleetAction {
    /// Merge the `fleet.json` of several shard workspaces into one aggregate report set.
    Merge {
        /// Shard workspace directories (each holding a fleet.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged reports.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// Follow the PRs a fleet opened (its fleet.json) to merged: their status, close or merge them.
    Prs {
        #[command(subcommand)]
        action: PrsAction,
    },
}

/// `hone fleet prs …`: the PR lifecycle of a fleet.
#[derive(Debug, Subcommand)]
pub enum PrsAction {
    /// Each PR's state, checks, reviews, mergeability and age: `prs-status.json` and `.md`.
    /// Exit 0 when every PR is merged or closed by choice, 4 while some are open.
    Status(PrsArgs),
    /// Close the open PRs with a comment saying why, and delete their branches (hone's only).
    Close {
        #[command(flatten)]
        args: PrsArgs,
        /// The comment's text (default: names hone and the fleet's job).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// Say what would be closed; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Merge the PRs that are open, not drafts, with checks passing, reviews allowing and
    /// mergeable, at the head commit checked; never forced. A base branch that requires a merge
    /// queue gets them queued instead.
    Merge {
        #[command(flatten)]
        args: PrsArgs,
        /// Say what would be merged, and why the others are not; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// How GitHub merges.
        #[arg(long, value_enum, default_value = "merge")]
        method: crate::fleet::prs::Method,
    },
}

#[derive(Debug, clap::Args)]
pub struct PrsArgs {
    /// The fleet file (YAML): its targets name each PR's repository, its job the forge settings.
    pub file: PathBuf,
    /// Where fleet.json is read and the prs reports written (default: the fleet file's `out`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where the fleet's runs left their reports, each saying which commit it pushed (default:
    /// the fleet file's `workspace`); alone, it is where fleet.json is too, as for `hone fleet`.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Skip the repositories the last run of this command finished (its report or journal).
    #[arg(long)]
    pub resume: bool,
    /// At most N PRs at once (default: the fleet's `concurrency`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub concurrency: Option<u32>,
    /// Print the report (JSON) on stdout instead of the result line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a job: model tool loop, verification, commit, reports.
    ///
    /// Without a job spec, `--task` and `--model` run a one-off job on the repository of the
    /// current directory, with the defaults of a spec.
    Run(RunArgs),
    /// Run one job across many repositories (a fleet file), concurrently; or merge shard results.
    #[command(args_conflicts_with_subcommands = true)]
    Fleet {
        #[command(subcommand)]
        action: Option<FleetAction>,
        #[command(flatten)]
        args: FleetArgs,
    },
    /// Check a job spec (and the policy it names), a fleet file or a policy file without running
    /// anything. Every error is listed.
    Validate {
        /// The file (YAML): what it is is told from its keys.
        file: PathBuf,
    },
    /// Write a job spec, a policy and a workflow for this repository's ecosystem (Python, Node,
    /// Rust or Go): an issue labelled `hone` becomes a pull request. Never overwrites a file.
    Init {
        /// The repository (default: the one that contains the current directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The model the job uses (`claude-*` selects Anthropic).
        #[arg(long, default_value = "gpt-4.1")]
        model: String,
        /// Write for this forge (default: the remote's, github.com, gitlab.com or codeberg.org;
        /// else GitLab when the project has a `.gitlab-ci.yml`, Forgejo when it has `.forgejo/`
        /// or `.gitea/`, else GitHub).
        #[arg(long, value_enum)]
        forge: Option<crate::forge::Kind>,
    },
    /// Run a recorded job again from its report dir: in a clone of a local repository at the
    /// commit it started from, the model answering from `transcript.jsonl` (offline: no network,
    /// no key, nothing pushed; commands in the jail). Exit 0 when the run did what the recorded one
    /// did; 1 at the first divergence; 2 when replay refuses (see docs/transcript.md).
    Replay {
        /// The recorded run's report dir (it holds `transcript.jsonl`).
        dir: PathBuf,
        /// Where the replayed run's reports go (default: a temp dir, removed after).
        #[arg(long)]
        report_dir: Option<PathBuf>,
        /// The job spec to run (default: the recorded one).
        #[arg(long)]
        job: Option<PathBuf>,
        /// The repository to run on, from its HEAD (default: the recorded one, a local path,
        /// from the commit the run started from). With a transcript from elsewhere, this makes it
        /// a test.
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Run a job whose policy says `sandbox: off`: its commands run unconfined on this
        /// machine, with its network (replay refuses such a job without this).
        #[arg(long)]
        allow_sandbox_off: bool,
        /// Of a run with tries (`attempts:`), replay try K (its `try-K.transcript.jsonl`);
        /// default: the chosen try.
        #[arg(long = "try", value_name = "K")]
        try_no: Option<u32>,
    },
    /// Evaluate configurations on the repository's own history (docs/eval.md).
    Eval {
        #[command(subcommand)]
        action: EvalAction,
    },
    /// Recover a checkout a killed `hone run` left mid-run (as every run does first): its work
    /// (uncommitted changes, untracked files, commits on its branch) saved on
    /// `refs/hone/<job>/killed-<run id>`, the checkout put back on the branch or commit the run
    /// started from, clean. Exit 0 when recovered or nothing was left; 2 while another hone run
    /// works in the checkout (E_CONFLICT) or the repository cannot be used; 3 when it failed.
    Recover {
        /// The checkout (default: the one that contains the current directory).
        #[arg(long, value_name = "PATH")]
        repo: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What hone remembers of earlier runs, per repository (docs/memory.md): list it, show a
    /// repository's entries, forget some, or clear it.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// Print the JSON Schema of a job spec, a fleet file or a policy file, for editors (the same
    /// as docs/schemas/*.schema.json).
    Schema {
        /// Which file.
        #[arg(value_enum)]
        which: crate::schema::Which,
    },
}

/// `hone memory …`: the memory store.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// Every repository with a memory: its key, entries, when it was last seen, its file.
    List {
        /// The memory dir (default: HONE_MEMORY_DIR, else $XDG_STATE_HOME/hone/memory, else
        /// ~/.local/state/hone/memory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A repository's entries, one line each with its id.
    Show {
        #[command(flatten)]
        at: MemoryRepo,
        /// Print JSON (the entries as stored).
        #[arg(long)]
        json: bool,
    },
    /// Remove entries by id (as `show` lists them).
    Forget {
        /// The entries' ids.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        #[command(flatten)]
        at: MemoryRepo,
    },
    /// Remove a repository's memory, or with `--all` every memory in the dir.
    Clear {
        #[command(flatten)]
        at: MemoryRepo,
        /// Every repository's memory in the dir.
        #[arg(long, conflicts_with = "repo")]
        all: bool,
    },
}

/// Which repository's memory, and where memories are kept.
#[derive(Debug, clap::Args)]
pub struct MemoryRepo {
    /// The repository (default: the one that contains the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// The remote whose URL identifies the repository (without one: its first commit).
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// The memory dir (default: HONE_MEMORY_DIR, else $XDG_STATE_HOME/hone/memory, else
    /// ~/.local/state/hone/memory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The job spec (YAML). The repository is the git work tree that contains it, unless
    /// `repo.path` or `--repo` names one.
    pub job: Option<PathBuf>,
    /// The repository to work on (overrides `repo.path`).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Where to write the reports (overrides `report.dir`).
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Write the JSONL event stream to stdout instead of the one-line result.
    #[arg(long)]
    pub json: bool,
    /// Do not push or call the GitHub API: write pr.md and change.patch to the report dir.
    #[arg(long)]
    pub dry_run: bool,
    /// Override the spec's task (or give one the spec lacks).
    #[arg(long)]
    pub task: Option<String>,
    /// Override the spec's model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Override the job's name (and so its branch, `hone/NAME`).
    #[arg(long)]
    pub name: Option<String>,
    /// A verify command for a one-off job without a spec (repeatable).
    #[arg(long, value_name = "COMMAND")]
    pub verify: Vec<String>,
    /// Autofix mode: fix this pull request in place (overrides `pr.number`).
    #[arg(long)]
    pub pr: Option<u64>,
    /// Review mode: offer the verified change on the PR as one review of suggested changes,
    /// pushing nothing (same as `--change review`; needs `--pr` or a pull request event).
    #[arg(long, conflicts_with = "change")]
    pub review: bool,
    /// What to do with the change (overrides `change:`): commit, review, or none (read-only).
    #[arg(long, value_enum)]
    pub change: Option<crate::spec::answer::Change>,
    /// A second attempt: start from the work a failed run saved on REF (`failed` for
    /// `refs/hone/<name>/failed`), applied after the baseline.
    #[arg(long = "continue", value_name = "REF")]
    pub continue_from: Option<String>,
    /// Where hone keeps its memory of repositories (default: `HONE_MEMORY_DIR`, else
    /// `$XDG_STATE_HOME/hone/memory`, else `~/.local/state/hone/memory`).
    #[arg(long, value_name = "DIR")]
    pub memory_dir: Option<PathBuf>,
    /// Neither read nor record memory in this run (as `memory: {enabled: false}`).
    #[arg(long)]
    pub no_memory: bool,
    /// Independent tries of the task, each in its own worktree, the repository's checks
    /// choosing the one that lands (overrides the number of `attempts:`; 1 to 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub attempts: Option<u32>,
}

#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// The fleet file (YAML).
    pub file: Option<PathBuf>,
    /// Skip repositories whose last run in this workspace succeeded with the same job.
    #[arg(long)]
    pub resume: bool,
    /// Re-run only the repositories whose last run failed.
    #[arg(long, value_enum)]
    pub only: Option<Only>,
    /// No push and no PR for any repository: write every pr.md and change.patch (a preview).
    #[arg(long)]
    pub dry_run: bool,
    /// Print a GitHub Actions matrix of N shards (JSON) and exit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub emit_matrix: Option<u32>,
    /// Run one shard, written `i/N` (1-based), or `auto/N` to take i from
    /// `JOB_COMPLETION_INDEX` (0-based, as a Kubernetes Indexed Job sets it).
    #[arg(long, value_name = "i/N")]
    pub shard: Option<Shard>,
    /// Stream every run's events to stdout as JSONL, each with a `repo` field.
    #[arg(long)]
    pub json: bool,
    /// The workspace (clones and per-repository reports), instead of the fleet file's
    /// `workspace`; the aggregate reports follow it unless `out` says otherwise.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Where the aggregate reports go (`fleet.json`, `fleet-junit.xml`, `fleet-summary.md`),
    /// and where `--resume` reads the last ones, instead of the fleet file's `out`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Which repositories `--only` re-runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// Those whose last run failed.
    Failed,
}

#[cfg(test)]
mod tests;
