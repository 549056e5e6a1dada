//! `hone fleet`: one job across many repositories, run concurrently in one process. Each
//! repository gets its own work tree and report dir; only the model request limit and the
//! GitHub mutation queue are shared. The aggregate reports say exactly what happened to each.

pub mod aggregate;
pub mod spec;

use crate::agent::{self, RunOptions};
use crate::redact::Redactor;
use aggregate::{RepoResult, RepoStatus};
use spec::{Source, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

pub struct FleetOptions {
    pub file: PathBuf,
    pub resume: bool,
    pub only_failed: bool,
    pub dry_run: bool,
    /// `(i, n)`: run shard i of n (1-based).
    pub shard: Option<(usize, usize)>,
    pub cancel: CancellationToken,
    pub redactor: Redactor,
    /// Stream every run's events to stdout as JSONL, each tagged with its repository.
    pub json: bool,
    /// No progress lines on stderr.
    pub quiet: bool,
    pub env: std::sync::Arc<crate::env::RunEnv>,
}

pub struct FleetOutcome {
    pub exit_code: i32,
    pub line: String,
}

fn hash_job(text: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Clone `url` into `dir`, or reuse the clone: fetch, then reset hard to the base and clean.
/// Every git process is bounded by the fleet's cancellation and a per-operation limit.
async fn prepare_clone(
    url: &str,
    dir: &Path,
    base: Option<&str>,
    env: &crate::env::RunEnv,
    cancel: &CancellationToken,
) -> Result<(), String> {
    use crate::forge::remote::{hardened, run};
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3600);
    let git = |d: &Path, args: &[&str]| {
        let mut c = hardened(d, env, None);
        c.args(args);
        c
    };
    let go = |c, what: &'static str| async move { run(c, what, deadline, cancel).await.map_err(|e| e.message) };
    if !dir.join(".git").exists() {
        let parent = dir.parent().ok_or("bad workspace path")?;
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // A partial clone: blobs are fetched when the run needs them (servers without filter
        // support, and local paths, fall back to a full clone).
        go(git(parent, &["clone", "--quiet", "--no-tags", "--filter=blob:none", url, &name]), "clone").await?;
    } else {
        go(git(dir, &["fetch", "--quiet", "--prune", "origin"]), "fetch").await?;
    }
    let base = match base {
        Some(b) => b.to_string(),
        None => go(git(dir, &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]), "find the default branch")
            .await?
            .trim_start_matches("origin/")
            .to_string(),
    };
    let start = format!("origin/{base}");
    go(git(dir, &["checkout", "--quiet", "-f", "-B", &base, &start]), "check out the base").await?;
    go(git(dir, &["clean", "-ffdq"]), "clean").await?;
    Ok(())
}

/// Turn a finished run's typed outcome into the repository's outcome.
fn result_from_outcome(
    t: &Target,
    o: &agent::RunOutcome,
    report_dir: &Path,
    job_hash: &str,
    dry_run: bool,
) -> RepoResult {
    use crate::report::Status;
    let report = &o.report;
    use crate::protocol::PrOperation;
    let operation = report.pr.as_ref().map_or(PrOperation::None, |p| p.operation);
    let status = match (o.status, operation) {
        (Status::Success, PrOperation::Created) => RepoStatus::PrCreated,
        (Status::Success, PrOperation::Updated) => RepoStatus::PrUpdated,
        (Status::Success, _) => RepoStatus::Succeeded,
        (Status::NoChange, _) => RepoStatus::NoChange,
        (Status::Skipped, _) => RepoStatus::Skipped,
        (Status::Cancelled, _) => RepoStatus::Cancelled,
        _ => RepoStatus::Failed,
    };
    let first = report.errors.first().filter(|_| !status.ok());
    RepoResult {
        status,
        code: first.map(|e| e.code.as_str().to_string()),
        error: first.map(|e| e.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").to_string()),
        pr_url: report.pr.as_ref().and_then(|p| p.url.clone()),
        duration_ms: report.duration_ms,
        tokens: report.usage.total_tokens,
        dry_run,
        ..failed(t, "", "", job_hash, report_dir)
    }
}

fn failed(t: &Target, code: &str, msg: &str, job_hash: &str, report_dir: &Path) -> RepoResult {
    RepoResult {
        id: t.id.clone(),
        source: match &t.source {
            Source::Url(u) => u.clone(),
            Source::Path(p) => p.display().to_string(),
        },
        status: RepoStatus::Failed,
        code: Some(code.into()),
        error: Some(msg.lines().find(|l| !l.trim().is_empty()).unwrap_or(msg).to_string()),
        pr_url: None,
        duration_ms: 0,
        tokens: 0,
        report_dir: report_dir.display().to_string(),
        job_hash: job_hash.into(),
        resumed: false,
        dry_run: false,
    }
}

/// Run one repository: prepare its work tree, then the same pipeline as `hone run`.
async fn run_one(t: Target, f: Arc<spec::Fleet>, o: Arc<Shared>) -> RepoResult {
    let report_dir = f.workspace.join("reports").join(&t.id);
    let _ = std::fs::remove_dir_all(&report_dir);
    let started = std::time::Instant::now();
    let repo_dir = match &t.source {
        Source::Path(p) => p.clone(),
        Source::Url(u) => {
            let dir = f.workspace.join("repos").join(&t.id);
            match prepare_clone(u, &dir, t.base.as_deref(), &o.env, &o.cancel).await {
                Ok(()) => dir,
                Err(e) => return failed(&t, "E_GIT", &e, &o.job_hash, &report_dir),
            }
        }
    };
    let github_repo = match &t.source {
        Source::Url(u) => crate::forge::github::owner_repo(None, Some(u)).map(|(a, b)| format!("{a}/{b}")),
        Source::Path(_) => None,
    };
    let mut opts = RunOptions::new(Some(f.job.clone()), o.env.clone(), o.cancel.child_token(), o.redactor.clone());
    opts.shared = o.runs.clone();
    opts.repo = Some(repo_dir);
    opts.report_dir = Some(report_dir.clone());
    opts.json_out = o.json.then(|| Box::new(std::io::stdout()) as Box<dyn std::io::Write + Send>);
    opts.dry_run = o.dry_run;
    opts.base = t.base.clone();
    opts.github_repo = github_repo;
    opts.event_repo = Some(t.id.clone());
    let outcome = agent::run(opts).await;
    let mut r = result_from_outcome(&t, &outcome, &report_dir, &o.job_hash, o.dry_run);
    r.duration_ms = started.elapsed().as_millis() as u64;
    r
}

struct Shared {
    env: std::sync::Arc<crate::env::RunEnv>,
    /// What every run of the fleet shares: the model request limit and the GitHub queue.
    runs: crate::env::Shared,
    json: bool,
    /// Print a line per repository start and finish on stderr.
    progress: bool,
    job_hash: String,
    cancel: CancellationToken,
    redactor: Redactor,
    dry_run: bool,
}

pub async fn run(opts: FleetOptions) -> Result<FleetOutcome, agent::Invalid> {
    use crate::error::Code;
    let render = |d: Vec<crate::spec::Diagnostic>| {
        agent::Invalid::new(Code::Spec, d.iter().map(|d| d.render("E_SPEC")).collect::<Vec<_>>().join("\n"))
    };
    let fleet = spec::load(&opts.file).map_err(render)?;
    let job_text = std::fs::read_to_string(&fleet.job).map_err(|e| {
        agent::Invalid::new(Code::Io, format!("error[E_IO]: cannot read the job {}: {e}", fleet.job.display()))
    })?;
    let job_name =
        crate::spec::parse(&fleet.job, &job_text).map_err(|e| agent::Invalid::new(Code::Spec, e.render()))?.name;
    let job_hash = hash_job(&job_text);
    let mut targets = fleet.targets.clone();
    if let Some((i, n)) = opts.shard {
        targets = aggregate::shard(&targets, i, n);
    }
    let previous = aggregate::read(&fleet.workspace).ok();
    let mut carried: Vec<RepoResult> = Vec::new();
    if opts.resume || opts.only_failed {
        let prev: Vec<RepoResult> = previous.map(|p| p.repos).unwrap_or_default();
        targets.retain(|t| {
            let last = prev.iter().find(|r| r.id == t.id);
            let keep_old = match last {
                // A dry run's result stands only for another dry run: it pushed nothing.
                Some(r) if r.dry_run && !opts.dry_run => false,
                Some(r) if opts.only_failed => r.status.ok(),
                Some(r) => r.status.ok() && r.job_hash == job_hash,
                None => false,
            };
            if let (true, Some(r)) = (keep_old, last) {
                carried.push(RepoResult { resumed: true, ..r.clone() });
            }
            !keep_old
        });
    }
    let started = std::time::Instant::now();
    let started_at = crate::events::now_rfc3339();
    let total = targets.len();
    let shared = Arc::new(Shared {
        env: opts.env.clone(),
        runs: crate::env::Shared::with_model_limit(fleet.model_concurrency),
        job_hash: job_hash.clone(),
        cancel: opts.cancel.clone(),
        redactor: opts.redactor.clone(),
        dry_run: opts.dry_run,
        json: opts.json,
        progress: !opts.quiet,
    });
    let fleet = Arc::new(fleet);
    let done = Arc::new(AtomicUsize::new(0));
    // Runs hold libgit2 handles (not Sync) across awaits, so each runs on a worker thread with its
    // own single-threaded runtime. `concurrency` workers pull from one queue: their synchronous
    // work (git, files, spawning) then spreads over the cores instead of one thread.
    let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(targets)));
    let (tx, rx) = std::sync::mpsc::channel::<RepoResult>();
    let mut workers = Vec::new();
    for _ in 0..fleet.concurrency.min(total.max(1)) {
        let (queue, fleet, shared, done, tx) = (queue.clone(), fleet.clone(), shared.clone(), done.clone(), tx.clone());
        workers.push(std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            // The guard is moved into the closure and dropped before the body runs.
            while let Some(t) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                let r = if shared.cancel.is_cancelled() {
                    let mut r = failed(
                        &t,
                        "E_CANCELLED",
                        "not started: the fleet was stopped",
                        &shared.job_hash,
                        &fleet.workspace.join("reports").join(&t.id),
                    );
                    r.status = RepoStatus::Cancelled;
                    r
                } else {
                    if shared.progress {
                        eprintln!("hone fleet: start {}", t.id);
                    }
                    let r = rt.block_on(run_one(t, fleet.clone(), shared.clone()));
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    let how = serde_json::to_value(r.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    if shared.progress {
                        let secs = r.duration_ms as f64 / 1000.0;
                        let why = r.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
                        eprintln!("hone fleet: {}: {how}{why} ({secs:.1}s), {n}/{total} done", r.id);
                    }
                    if fleet.fail_fast && r.status == RepoStatus::Failed {
                        shared.cancel.cancel();
                    }
                    r
                };
                if tx.send(r).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut results = carried;
    let collected = tokio::task::spawn_blocking(move || {
        let results: Vec<RepoResult> = rx.iter().collect();
        for w in workers {
            let _ = w.join();
        }
        results
    })
    .await
    .unwrap_or_default();
    results.extend(collected);
    let interrupted = opts.cancel.is_cancelled() && !fleet.fail_fast;
    let report =
        aggregate::build(&job_name, &job_hash, started_at, started.elapsed().as_millis() as u64, results, interrupted);
    aggregate::write(&fleet.workspace, &report)
        .map_err(|e| agent::Invalid::new(Code::Io, format!("error[E_IO]: cannot write the fleet reports: {e}")))?;
    let counts: Vec<String> = report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let line = format!(
        "hone fleet: {} repositories: {} (exit {}); reports in {}",
        report.repos.len(),
        counts.join(", "),
        report.exit_code,
        fleet.workspace.display()
    );
    Ok(FleetOutcome { exit_code: report.exit_code, line })
}

/// `hone fleet merge DIR...`: combine shard results into one aggregate in `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<FleetOutcome, agent::Invalid> {
    use crate::error::Code;
    let mut reports = Vec::new();
    for d in dirs {
        reports.push(aggregate::read(d).map_err(|e| {
            agent::Invalid::new(Code::Io, format!("error[E_IO]: cannot read {}/fleet.json: {e}", d.display()))
        })?);
    }
    let merged = aggregate::merge(reports).ok_or_else(|| {
        agent::Invalid::new(Code::Spec, "error[E_SPEC]: nothing to merge: give one or more shard directories")
    })?;
    aggregate::write(out, &merged)
        .map_err(|e| agent::Invalid::new(Code::Io, format!("error[E_IO]: cannot write the merged reports: {e}")))?;
    Ok(FleetOutcome {
        exit_code: merged.exit_code,
        line: format!(
            "hone fleet merge: {} repositories (exit {}); reports in {}",
            merged.repos.len(),
            merged.exit_code,
            out.display()
        ),
    })
}
