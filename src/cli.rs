//! Command-line interface (clap derive). The doc comments are the `--help` text.

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
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a job: model tool loop, verification, commit, reports.
    ///
    /// Without a job spec, `--task` and `--model` run a one-off job on the repository of the
    /// current directory, with the defaults of a spec.
    Run {
        /// The job spec (YAML). The repository is the git work tree that contains it, unless
        /// `repo.path` or `--repo` names one.
        job: Option<PathBuf>,
        /// The repository to work on (overrides `repo.path`).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Where to write the reports (overrides `report.dir`).
        #[arg(long)]
        report_dir: Option<PathBuf>,
        /// Write the JSONL event stream to stdout instead of the one-line result.
        #[arg(long)]
        json: bool,
        /// Do not push or call the GitHub API: write pr.md and change.patch to the report dir.
        #[arg(long)]
        dry_run: bool,
        /// Override the spec's task (or give one the spec lacks).
        #[arg(long)]
        task: Option<String>,
        /// Override the spec's model name.
        #[arg(long)]
        model: Option<String>,
        /// Override the job's name (and so its branch, `hone/NAME`).
        #[arg(long)]
        name: Option<String>,
        /// A verify command for a one-off job without a spec (repeatable).
        #[arg(long, value_name = "COMMAND")]
        verify: Vec<String>,
        /// Autofix mode: fix this pull request in place (overrides `pr.number`).
        #[arg(long)]
        pr: Option<u64>,
    },
    /// Run one job across many repositories (a fleet file), concurrently; or merge shard results.
    #[command(args_conflicts_with_subcommands = true)]
    Fleet {
        #[command(subcommand)]
        action: Option<FleetAction>,
        /// The fleet file (YAML).
        file: Option<PathBuf>,
        /// Skip repositories whose last run in this workspace succeeded with the same job.
        #[arg(long)]
        resume: bool,
        /// Re-run only the repositories whose last run failed.
        #[arg(long, value_parser = ["failed"])]
        only: Option<String>,
        /// No push and no PR for any repository: write every pr.md and change.patch (a preview).
        #[arg(long)]
        dry_run: bool,
        /// Print a GitHub Actions matrix of N shards (JSON) and exit.
        #[arg(long, value_name = "N")]
        emit_matrix: Option<usize>,
        /// Run one shard, written `i/N` (1-based).
        #[arg(long, value_name = "i/N")]
        shard: Option<String>,
        /// Stream every run's events to stdout as JSONL, each with a `repo` field.
        #[arg(long)]
        json: bool,
    },
    /// Check a job spec (and the policy it names), a fleet file or a policy file without running
    /// anything. Every error is listed.
    Validate {
        /// The file (YAML): what it is is told from its keys.
        file: PathBuf,
    },
}
