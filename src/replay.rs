//! `hone replay REPORT_DIR`: run a recorded job again, in a clone of its repository at the
//! commit it started from, with the model answering from its `transcript.jsonl` (no network, no
//! key, nothing pushed), and say whether the run did what the recorded one did, or where it
//! first differed.

use crate::agent::{self, RunOptions};
use crate::exit;
use crate::protocol::transcript::{Entry, VERSION};
use crate::redact::Redactor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Read a transcript: its entries, the header first.
pub fn read(dir: &Path) -> Result<Vec<Entry>, String> {
    let path = dir.join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!("hone: error[E_IO]: cannot read {}: {e}\n  = help: give the report dir of a run (it holds transcript.jsonl)", path.display())
    })?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let e: Entry = serde_json::from_str(line)
            .map_err(|e| format!("hone: error[E_SPEC]: {}:{}: not a transcript entry: {e}", path.display(), i + 1))?;
        entries.push(e);
    }
    match entries.first() {
        Some(Entry::Header { version, .. }) if *version == VERSION => Ok(entries),
        Some(Entry::Header { version, .. }) => Err(format!(
            "hone: error[E_SPEC]: {}: transcript version {version}; this hone reads version {VERSION}",
            path.display()
        )),
        _ => Err(format!("hone: error[E_SPEC]: {}:1: the first line is not the transcript's header", path.display())),
    }
}

/// Clone `repo` into `into` (a local clone: no network), its work tree at `base` when given.
fn clone(repo: &str, into: &Path, base: Option<&str>) -> Result<PathBuf, String> {
    let git = |e: git2::Error| {
        format!("hone: error[E_GIT]: cannot clone the recorded run's repository {repo}: {}", e.message())
    };
    let r = git2::Repository::clone(repo, into).map_err(git)?;
    if let Some(b) = base {
        let oid = git2::Oid::from_str(b).map_err(git)?;
        r.set_head_detached(oid).map_err(git)?;
        r.checkout_head(Some(git2::build::CheckoutBuilder::new().force())).map_err(git)?;
    }
    std::fs::canonicalize(into).map_err(|e| format!("hone: error[E_IO]: {}: {e}", into.display()))
}

/// Where a replay runs, when not where the recorded run did.
#[derive(Debug, Default)]
pub struct Where {
    pub report_dir: Option<PathBuf>,
    /// Another job spec.
    pub job: Option<PathBuf>,
    /// Another repository, from its HEAD.
    pub repo: Option<PathBuf>,
}

/// Replay the run recorded in `dir`: the exit code and the result line for stdout (none when it
/// could not start: the error is on stderr); the run's progress goes to stderr.
pub async fn replay(dir: &Path, at: Where, quiet: bool, redactor: Redactor) -> (i32, Option<String>) {
    let entries = match read(dir) {
        Ok(e) => e,
        Err(msg) => {
            eprintln!("{msg}");
            return (exit::INVALID_INPUT, None);
        }
    };
    let Some(Entry::Header { spec, repo, base_sha, task, job: name, model, continued_from, .. }) =
        entries.first().cloned()
    else {
        return (exit::INVALID_INPUT, None);
    };
    if let Some(from) = continued_from {
        eprintln!(
            "hone: error[E_SPEC]: the recorded run continued saved work ({from}); replaying a second attempt is not supported: replay the first"
        );
        return (exit::INVALID_INPUT, None);
    }
    let scratch = match tempfile::Builder::new().prefix("hone-replay-").tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("hone: error[E_IO]: cannot make a temp dir: {e}");
            return (exit::INFRA_FAILURE, None);
        }
    };
    let spec = at.job.map_or(spec, |j| j.display().to_string());
    let base = if at.repo.is_some() { None } else { Some(base_sha) };
    let repo = at.repo.map_or(repo, |r| r.display().to_string());
    let (job, root) = match prepare(&spec, &repo, base, (task, name, model), scratch.path()) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("{msg}");
            return (exit::INVALID_INPUT, None);
        }
    };
    let replayer = Arc::new(crate::model::replay::Replay::new(&entries, &root.display().to_string()));
    // Not a CI step, whatever the environment says: no autofix, no workflow outputs.
    let vars = std::env::vars().filter(|(k, _)| !["GITHUB_", "ACTIONS_", "RUNNER_"].iter().any(|p| k.starts_with(p)));
    let env = Arc::new(crate::env::RunEnv::from_vars(vars.collect()));
    let mut opts = RunOptions::new(None, env, CancellationToken::new(), redactor);
    opts.job = Some(Box::new(job));
    opts.dry_run = true;
    opts.replay = Some(replayer.clone());
    opts.report_dir = Some(at.report_dir.unwrap_or_else(|| scratch.path().join("reports")));
    opts.progress = (!quiet).then(|| crate::progress::Progress::stderr(false));
    let outcome = agent::run(opts).await;
    let results = entries.iter().filter(|e| matches!(e, Entry::ToolResult { .. })).count();
    if replayer.asked() == 0 && outcome.status == crate::report::Status::InvalidInput {
        let why = outcome.message.unwrap_or_default();
        return (exit::INVALID_INPUT, Some(format!("hone replay: the run could not start: {why}")));
    }
    match replayer.verdict() {
        Ok(n) => (
            exit::SUCCESS,
            Some(format!(
                "hone replay: the run did what the recorded one did ({n} request(s), {results} tool result(s)); it ended {}",
                outcome.status.as_str()
            )),
        ),
        Err(d) => (exit::TASK_FAILED, Some(format!("hone replay: diverged: {d}"))),
    }
}

/// The recorded job, pointed at a clone of its repository at `base` (its HEAD without one),
/// pushing nothing.
fn prepare(
    spec: &str,
    repo: &str,
    base: Option<String>,
    (task, name, model): (String, String, String),
    scratch: &Path,
) -> Result<(crate::spec::Job, PathBuf), String> {
    let overrides = crate::spec::Overrides { task: Some(task), name: Some(name), model: Some(model) };
    let root = clone(repo, &scratch.join("repo"), base.as_deref())?;
    // A spec inside the recorded repository is read from the clone: as it was at the base.
    let in_clone = Path::new(spec).strip_prefix(repo).ok().map(|rel| root.join(rel)).filter(|p| p.is_file());
    let spec = in_clone.unwrap_or_else(|| PathBuf::from(spec));
    let mut job = crate::spec::load_with(&spec, &overrides).map_err(|e| e.render())?;
    job.repo.path = Some(root.clone());
    job.repo.scratch = false;
    job.repo.allow_dirty = false;
    job.repo.base = base;
    job.git.push = false;
    job.pr.number = None;
    Ok((job, root))
}
