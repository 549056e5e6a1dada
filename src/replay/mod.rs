//! `hone replay REPORT_DIR`: run a recorded job again, in a clone of a local repository at the
//! commit it started from, with the model answering from its `transcript.jsonl` (no network, no
//! key, nothing pushed), and say whether the run did what the recorded one did, or where it
//! first differed. The report dir is data: see `trust` for what replay takes from it.

pub(crate) mod source;
mod trust;

use crate::output::transcript::read;

use crate::error::{Code, HoneError};
use crate::exit;
use crate::protocol::transcript::Entry;
use crate::redact::Redactor;
use crate::run::{self, EventSinks, Hooks, Request, Sinks, Source};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long copying the repository for the replay may take.
const COPY_TIMEOUT: Duration = Duration::from_secs(600);

/// `s` for a message: control characters (a CR, a newline) shown escaped, so that text from the
/// repository or the transcript cannot start a line of its own on stderr.
fn plain(s: impl std::fmt::Display) -> String {
    s.to_string().chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// What the command line says besides the report dir.
#[derive(Debug, Default)]
pub struct Where {
    pub report_dir: Option<PathBuf>,
    /// Another job spec.
    pub job: Option<PathBuf>,
    /// Another repository, from its HEAD.
    pub repo: Option<PathBuf>,
    /// Run a job whose policy says `sandbox: off` (unconfined, with the network).
    pub allow_sandbox_off: bool,
    /// Of a run with tries (`attempts:`), replay this one (default: the one chosen, whose
    /// conversation is `transcript.jsonl`).
    pub try_no: Option<u32>,
}

/// A refusal or failure before the run: said on stderr, exit 2 (3 for `infra`).
struct Stop {
    error: HoneError,
    infra: bool,
}

impl From<HoneError> for Stop {
    fn from(error: HoneError) -> Stop {
        Stop { error, infra: false }
    }
}

/// Replay the run recorded in `dir`: the exit code and the result line for stdout (none when it
/// could not start: the error is on stderr); the run's progress goes to stderr.
pub async fn replay(
    dir: &Path,
    at: Where,
    quiet: bool,
    redactor: Redactor,
    cancel: CancellationToken,
) -> (i32, Option<String>) {
    let scratch = match tempfile::Builder::new().prefix("hone-replay-").tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("hone: {}", HoneError::new(Code::Io, format!("cannot make a temp dir: {e}")).render());
            return (exit::INFRA_FAILURE, None);
        }
    };
    match prepare(dir, &at, scratch.path(), &cancel).await {
        Ok((entries, settled)) => {
            if !quiet {
                for n in &settled.notes {
                    eprintln!("hone replay: {n}");
                }
            }
            let report_dir = at.report_dir.unwrap_or_else(|| scratch.path().join("reports"));
            run(&entries, settled, report_dir, quiet, redactor, cancel).await
        }
        Err(Stop { error, infra }) => {
            eprintln!("hone: {}", error.render());
            (if infra { exit::INFRA_FAILURE } else { exit::INVALID_INPUT }, None)
        }
    }
}

/// Read the transcript, copy the repository, and settle the job and policy.
async fn prepare(
    dir: &Path,
    at: &Where,
    scratch: &Path,
    cancel: &CancellationToken,
) -> Result<(Vec<Entry>, trust::Settled), Stop> {
    let entries = match at.try_no {
        Some(k) => crate::output::transcript::read_try(dir, k)?,
        None => read(dir)?,
    };
    let Some(Entry::Header {
        spec,
        repo,
        base_sha,
        task,
        job,
        model,
        continued_from,
        spec_sha256,
        policy_sha256,
        instructions_commit,
        try_no,
        ..
    }) = entries.first().cloned()
    else {
        return Err(HoneError::new(Code::Spec, "the transcript has no header").into());
    };
    if continued_from.is_some() {
        let msg = "the recorded run continued saved work (`--continue`); replaying a second attempt is not supported";
        return Err(HoneError::new(Code::Spec, msg).hint("replay the first attempt's report dir").into());
    }
    // The repository: the user's (from its HEAD), or the recorded one, a local path, at the base,
    // with the commit the recorded run read its instruction files at (a pull request's base).
    let (src, base, guidance) = match &at.repo {
        Some(r) => (r.clone(), None, None),
        None => (source::recorded_path("repo", &repo)?, Some(base_sha), instructions_commit),
    };
    let into = scratch.join("repo");
    let shown = src.display().to_string();
    let also = guidance.clone();
    let copy = tokio::task::spawn_blocking(move || source::clone(&src, base.as_deref(), also.as_deref(), &into));
    let copied = tokio::select! {
        done = copy => done.map_err(|e| Stop { error: HoneError::new(Code::Internal, e.to_string()), infra: true })??,
        () = tokio::time::sleep(COPY_TIMEOUT) => {
            let msg = format!("copying the repository for the replay took longer than {}s", COPY_TIMEOUT.as_secs());
            return Err(Stop { error: HoneError::new(Code::Git, msg), infra: true });
        }
        () = cancel.cancelled() => return Err(Stop { error: HoneError::new(Code::Cancelled, "cancelled"), infra: true }),
    };
    let from = match &at.job {
        Some(j) => trust::JobFrom::User(j),
        None => trust::JobFrom::Recorded {
            spec: &spec,
            repo: &repo,
            spec_sha256: spec_sha256.as_deref(),
            policy_sha256: policy_sha256.as_deref(),
        },
    };
    let overrides = crate::spec::Overrides { task: Some(task), name: Some(job), model: Some(model) };
    let mut settled = trust::settle(&from, &overrides, &copied, at.allow_sandbox_off)?;
    let source::Copied { root, base } = copied;
    let what = match &at.job {
        Some(j) => format!("the job {}", j.display()),
        None => {
            format!("the recorded job {}", plain(settled.job.spec_path.strip_prefix(&root).unwrap_or(&root).display()))
        }
    };
    let how = if settled.policy.sandbox { "offline" } else { "unconfined" };
    settled.notes.insert(0, format!("{what} on commit {base} of {shown}, in a clone, {how}"));
    settled.job.repo.path = Some(root);
    settled.job.repo.guidance = guidance.filter(|g| *g != base.to_string());
    in_the_clone(&mut settled, base, at.try_no.or(try_no));
    Ok((entries, settled))
}

/// The job as replay runs it: in the clone (its path already set), from the base; nothing
/// pushed, no PR; one try (the one whose conversation is replayed).
fn in_the_clone(settled: &mut trust::Settled, base: git2::Oid, try_no: Option<u32>) {
    let j = &mut settled.job;
    j.repo.scratch = false;
    j.repo.allow_dirty = false;
    j.repo.base = Some(base.to_string());
    j.git.push = false;
    j.pr.number = None;
    if j.attempts.several() {
        let k = try_no.unwrap_or(1);
        settled.notes.push(format!("the recorded job made {} tries: this replays try {k}", j.attempts.tries.len()));
        // That try's own model and limits, as the recorded try had them.
        if let Some(t) = (k as usize).checked_sub(1).and_then(|i| j.attempts.tries.get(i)).cloned() {
            j.model = t.model;
            let (own, l) = (t.limits, &mut j.limits);
            l.max_turns = own.max_turns.unwrap_or(l.max_turns);
            l.max_fix_attempts = own.max_fix_attempts.unwrap_or(l.max_fix_attempts);
            l.max_wall_time = own.max_wall_time.map_or(l.max_wall_time, |d| d.min(l.max_wall_time));
            l.max_tokens = own.max_tokens.map_or(l.max_tokens, |t| t.min(l.max_tokens));
            l.max_cost_usd = match (own.max_cost_usd, l.max_cost_usd) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        j.attempts = crate::spec::attempts::AttemptsSpec::one(&j.model);
    }
    // A review is a verified commit offered on a PR: replayed, it is the commit, and nothing is posted.
    if j.change == crate::spec::answer::Change::Review {
        j.change = crate::spec::answer::Change::Commit;
    }
}

/// Run the settled job with the model answering from `entries`, and judge it.
async fn run(
    entries: &[Entry],
    settled: trust::Settled,
    report_dir: PathBuf,
    quiet: bool,
    redactor: Redactor,
    cancel: CancellationToken,
) -> (i32, Option<String>) {
    let root = settled.job.repo.path.clone().unwrap_or_default();
    let replayer = Arc::new(crate::model::replay::Replay::new(entries, &root.display().to_string()));
    // Not a CI step, whatever the environment says: no autofix, no workflow outputs.
    let vars = std::env::vars().filter(|(k, _)| !["GITHUB_", "ACTIONS_", "RUNNER_"].iter().any(|p| k.starts_with(p)));
    let env = Arc::new(crate::env::RunEnv::from_vars(vars.collect()));
    let mut req = Request::new(Source::Job(Box::new(settled.job)), env, cancel, redactor);
    (req.dry_run, req.report_dir) = (true, Some(report_dir));
    // A replay is not a run of the job: nothing of it goes to the team's dashboards.
    req.telemetry = crate::telemetry::Link::Off;
    let hooks = Hooks { model: Some(replayer.clone()), policy: Some(Box::new(settled.policy)) };
    let progress = (!quiet).then(|| crate::progress::Progress::stderr(false));
    let sinks = Sinks { events: EventSinks { progress, ..Default::default() }, commands: None };
    let outcome = run::run(req, sinks, hooks).await;
    let results = entries.iter().filter(|e| matches!(e, Entry::ToolResult { .. })).count();
    if replayer.asked() == 0 && outcome.record.status == crate::record::Status::InvalidInput {
        let why = outcome.message.unwrap_or_default();
        return (exit::INVALID_INPUT, Some(format!("hone replay: the run could not start: {why}")));
    }
    match replayer.verdict() {
        Ok(n) => (
            exit::SUCCESS,
            Some(format!(
                "hone replay: the run did what the recorded one did ({n} request(s), {results} tool result(s)); it ended {}",
                outcome.record.status.as_str()
            )),
        ),
        Err(d) => (exit::TASK_FAILED, Some(format!("hone replay: diverged: {d}"))),
    }
}
