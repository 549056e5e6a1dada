//! `hone fleet`: one job across many repositories, run concurrently in one process. Each
//! repository gets its own work tree and report dir; only the model request limit and the
//! GitHub mutation queue are shared. The aggregate reports say exactly what happened to each.

pub mod aggregate;
mod clone;
mod journal;
mod layout;
pub(crate) mod live;
mod outcome;
mod pace;
mod pool;
pub mod prs;
pub mod resolve;
mod resume;
pub mod spec;
mod trace;
mod usage;

use crate::error::{Code, HoneError};
use crate::forge::credential::{url_secrets, without_userinfo};
use crate::redact::Redactor;
use crate::run::{self, EventSinks, Request, Sinks};
use aggregate::{RepoResult, RepoStatus};
use outcome::{failed, result_from_outcome, shown};
use resume::{digest, previous_results, select};
use spec::{JobFile, Source, Target, read_job};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// `--workspace DIR` and `--out DIR`: instead of the fleet file's (relative to the current
    /// directory, as command-line paths are). `--workspace` alone moves the reports with it.
    pub workspace: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub env: std::sync::Arc<crate::env::RunEnv>,
}

pub struct FleetOutcome {
    pub exit_code: i32,
    pub line: String,
}

/// The forge place of a URL target: its forge by the URL's host, and the repository's path from
/// the URL itself, never from the environment (which names the fleet's own repository).
fn target_place(c: &Ctx, url: &str) -> crate::forge::place::Place {
    use crate::forge::place::{Input, Place};
    let (env, spec, token_env) = (&c.env, &c.job.forge, c.job.git.token_env.as_deref());
    Place::decide(&Input { env, spec, token_env, remote_url: Some(url), env_repo: false, remote_trusted: true })
}

/// Run one repository: prepare its work tree, then the same pipeline as `hone run`.
async fn run_one(t: Target, c: Arc<Ctx>, telemetry: crate::telemetry::Link) -> RepoResult {
    let ws = &c.fleet.workspace;
    let report_dir = layout::report_dir(ws, &t.id);
    let target_digest = c.digest_for(&t);
    if let Err(e) = layout::clear_report_dir(ws, &t.id) {
        let why = format!("cannot clear the report dir {}: {e}", report_dir.display());
        return failed(&t, Code::Io, &why, &target_digest, &report_dir);
    }
    let started = std::time::Instant::now();
    let repo_dir = match &t.source {
        Source::Path(p) => p.clone(),
        Source::Url(u) => {
            let mut place = target_place(&c, u);
            if let Err(e) = c.app_token(&mut place).await {
                let why = e.hint.as_ref().map_or_else(|| e.message.clone(), |h| format!("{}; {h}", e.message));
                return failed(&t, e.code, &why, &target_digest, &report_dir);
            }
            let want = clone::Wanted { url: u, base: t.base.as_deref(), workspace: ws, id: &t.id };
            match clone::prepare(&want, &c.env, &place, &c.cancel).await {
                Ok(dir) => dir,
                Err(e) => return failed(&t, e.code(), &e.to_string(), &target_digest, &report_dir),
            }
        }
    };
    let job = run::Source::Job(Box::new(c.job.clone()));
    let mut req = Request::new(job, c.env.clone(), c.cancel.child_token(), c.redactor.clone());
    req.shared = c.runs.clone();
    (req.repo, req.report_dir) = (Some(repo_dir), Some(report_dir.clone()));
    (req.dry_run, req.env_repo) = (c.dry_run, false);
    req.remote_trusted = matches!(t.source, Source::Url(_));
    req.overrides.base = t.base.clone();
    req.memory_dir = Some(layout::memory_dir(&c.fleet.workspace));
    req.telemetry = telemetry;
    // The `--json` stream: `Events` writes it through `ci_text::Out`, neutral for the runner.
    #[allow(clippy::disallowed_methods)]
    let stdout = || Box::new(std::io::stdout()) as Box<dyn std::io::Write + Send>;
    let events = EventSinks { json: c.json.then(stdout), progress: None, tag: Some(t.id.clone()) };
    let outcome = run::run(req, Sinks { events, commands: None }, Default::default()).await;
    let mut r = result_from_outcome(&t, &outcome, &report_dir, &target_digest, c.dry_run);
    r.duration_ms = started.elapsed().as_millis() as u64;
    r
}

/// What every worker of one fleet reads.
struct Ctx {
    fleet: spec::Fleet,
    /// The job, read and parsed once.
    job: crate::spec::Job,
    job_bytes: Vec<u8>,
    policy_bytes: Option<Vec<u8>>,
    env: Arc<crate::env::RunEnv>,
    /// What every run of the fleet shares: the model request limit and the GitHub queue.
    runs: crate::shared::Shared,
    json: bool,
    /// The live progress on stderr (none with `--quiet`).
    live: Option<live::Live>,
    /// The most the process held (threads, descriptors, children, memory) as repositories
    /// started and finished (`usage`).
    peak: std::sync::Mutex<usage::Usage>,
    cancel: CancellationToken,
    redactor: Redactor,
    dry_run: bool,
    /// Each repository's outcome, recorded durably as it finishes (`journal`).
    journal: journal::Journal,
    /// The campaign's pace, when the job sets one (`pace`).
    pace: std::sync::OnceLock<pace::Pace>,
    /// The fleet's trace and exporters, when telemetry is on.
    trace: Option<trace::FleetTrace>,
}

impl Ctx {
    /// With an App configured, its token for the place's repository (`forge::tokens`), for
    /// the clone; the run mints or reuses its own at intake.
    async fn app_token(&self, place: &mut crate::forge::place::Place) -> Result<(), HoneError> {
        let (env, shared, redactor) = (self.env.as_ref(), &self.runs.forge, &self.redactor);
        let bound =
            &crate::bound::Bound::new(tokio::time::Instant::now() + std::time::Duration::from_secs(3600), &self.cancel);
        let cx = crate::forge::tokens::Context { env, shared, redactor, bound };
        crate::forge::tokens::into_place(&cx, &self.job, place).await
    }

    fn digest_for(&self, t: &Target) -> String {
        digest(&self.job_bytes, self.policy_bytes.as_deref(), Some(t))
    }

    fn report_dir(&self, t: &Target) -> PathBuf {
        layout::report_dir(&self.fleet.workspace, &t.id)
    }

    fn sample(&self) {
        let now = usage::now();
        let mut peak = self.peak.lock().unwrap_or_else(|p| p.into_inner());
        *peak = peak.max(now);
    }

    /// A repository that never got a result of its own: `failed` (or `cancelled`) with a code.
    fn lost(&self, t: &Target, code: Code, why: &str) -> RepoResult {
        failed(t, code, why, &self.digest_for(t), &self.report_dir(t))
    }

    /// One repository on a worker: skipped once the fleet is stopped; otherwise run, counted in
    /// the live progress, stopping the fleet on failure under `fail_fast`.
    fn work(self: &Arc<Self>, rt: &tokio::runtime::Runtime, t: Target) -> RepoResult {
        if self.cancel.is_cancelled() {
            let mut r = self.lost(&t, Code::Cancelled, "not started: the fleet was stopped");
            r.status = RepoStatus::Cancelled;
            return r;
        }
        let now = std::time::Instant::now;
        if let Some(l) = &self.live {
            l.started(&t.id, now());
        }
        self.sample();
        let traced = self.trace.as_ref().map(|tr| tr.repository(&t.id));
        let link = traced.as_ref().map_or(crate::telemetry::Link::Off, |r| r.link.clone());
        let mut r = match pace::admit(self, &t) {
            pace::Admit::Run { slot } => {
                let r = rt.block_on(run_one(t, self.clone(), link));
                pace::ended(self, slot, &r);
                r
            }
            pace::Admit::Not(r) => *r,
        };
        self.sample();
        // Credentials in URLs never reach a report or a log line.
        r.error = r.error.map(|e| self.redactor.apply(&without_userinfo(&e)));
        // Recorded and synced before it counts as done: a kill from here on cannot lose it.
        if let Err(e) = self.journal.add(&r) {
            tracing::warn!(
                "cannot record {}'s outcome in the fleet's journal (`--resume` will run it again): {e}",
                r.id
            );
        }
        if let Some(l) = &self.live {
            l.finished(&r, now());
        }
        // After the journal: the export may wait for the collector, the outcome must not.
        if let (Some(tr), Some(repo)) = (&self.trace, traced) {
            rt.block_on(tr.repository_done(repo, &r));
        }
        if self.fleet.fail_fast && r.status == RepoStatus::Failed {
            self.cancel.cancel();
        }
        r
    }
}

/// The fleet file, with `--workspace` and `--out` applied, and its URLs' secrets masked.
fn load(opts: &FleetOptions) -> Result<spec::Fleet, HoneError> {
    let mut fleet = spec::load(&opts.file).map_err(|d| HoneError::located(Code::Spec, d))?;
    if let Some(w) = &opts.workspace {
        // The reports follow the workspace unless the fleet file or `--out` puts them elsewhere.
        if fleet.out == fleet.workspace {
            fleet.out = w.clone();
        }
        fleet.workspace = w.clone();
    }
    if let Some(o) = &opts.out {
        fleet.out = o.clone();
    }
    // A user or password in a target URL is a secret: masked wherever the runs write.
    for t in &fleet.targets {
        if let Source::Url(u) = &t.source {
            url_secrets(u).iter().for_each(|s| opts.redactor.add(s));
        }
    }
    Ok(fleet)
}

/// A fresh journal in the fleet's out dir for the run over `planned`, holding the results it
/// carries over; and the run's start time, which the journal and `fleet.json` share.
fn start_journal(
    fleet: &spec::Fleet,
    job: &str,
    job_hash: &str,
    planned: Vec<journal::Planned>,
    carried: &[RepoResult],
) -> Result<(journal::Journal, String), HoneError> {
    let started_at = crate::events::now_rfc3339();
    let header = journal::Header {
        version: 1,
        job: job.into(),
        job_hash: job_hash.into(),
        started_at: started_at.clone(),
        repos: planned,
    };
    let journal = journal::Journal::start(&fleet.out, header, carried).map_err(|e| {
        let at = fleet.out.join(journal::FILE);
        HoneError::new(Code::Io, format!("cannot start the fleet's journal {}: {e}", at.display()))
    })?;
    Ok((journal, started_at))
}

pub async fn run(opts: FleetOptions) -> Result<FleetOutcome, HoneError> {
    let mut fleet = load(&opts)?;
    let JobFile { job, bytes: job_bytes, policy_bytes } = read_job(&fleet)?;
    let runs = crate::shared::Shared::with_model_limit(fleet.model_concurrency);
    resolve::run(&mut fleet, &opts, &job, &runs).await?;
    let job_hash = digest(&job_bytes, policy_bytes.as_deref(), None);
    let mut targets = fleet.targets.clone();
    if let Some((i, n)) = opts.shard {
        targets = aggregate::shard(&targets, i, n);
    }
    let previous = if opts.resume || opts.only_failed { previous_results(&fleet.out)? } else { vec![] };
    let planned: Vec<journal::Planned> =
        targets.iter().map(|t| journal::Planned { id: t.id.clone(), source: shown(t) }).collect();
    let ws = fleet.workspace.clone();
    let (targets, mut results) = select(
        targets,
        &previous,
        &opts,
        |t| digest(&job_bytes, policy_bytes.as_deref(), Some(t)),
        |t| layout::report_dir(&ws, &t.id),
    );
    let (journal, started_at) = start_journal(&fleet, &job.name, &job_hash, planned, &results)?;
    let (job_name, workers, total) = (job.name.clone(), fleet.concurrency, targets.len());
    let (trace, trace_warning) = trace::FleetTrace::start(&opts.env, &job);
    let ctx = Arc::new(Ctx {
        runs,
        fleet,
        job,
        job_bytes,
        policy_bytes,
        env: opts.env.clone(),
        cancel: opts.cancel.clone(),
        redactor: opts.redactor.clone(),
        dry_run: opts.dry_run,
        json: opts.json,
        live: (!opts.quiet).then(|| live::Live::stderr(total, workers, opts.json, opts.redactor.clone())),
        peak: Default::default(),
        journal,
        pace: Default::default(),
        trace,
    });
    // Every target of the fleet file counts toward the pace, not only those this shard or this
    // `--resume` runs: their PRs were opened by the same campaign.
    if let Some(p) = pace::plan(&ctx, &ctx.runs, &ctx.fleet.targets, workers).await? {
        _ = ctx.pace.set(p);
    }
    let started = std::time::Instant::now();
    results.extend(run_all(targets, workers, ctx.clone()).await);
    let interrupted = opts.cancel.is_cancelled() && !ctx.fleet.fail_fast;
    let elapsed = started.elapsed().as_millis() as u64;
    let mut report = aggregate::build(&job_name, &job_hash, started_at, elapsed, results, interrupted);
    report.warnings.extend(trace_warning);
    if let Some(t) = &ctx.trace {
        t.finish(&mut report, opts.cancel.is_cancelled()).await;
    }
    let out = &ctx.fleet.out;
    aggregate::write(out, &report)
        .map_err(|e| HoneError::new(Code::Io, format!("cannot write the fleet reports: {e}")))?;
    if let Some(p) = &opts.env.actions_output
        && let Err(e) = crate::output::actions::write_outputs(p, &aggregate::ci_outputs(&report))
    {
        tracing::warn!("cannot write GITHUB_OUTPUT: {e}");
    }
    let counts: Vec<String> = report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let line = format!(
        "hone fleet: {} repositories: {} (exit {}); reports in {}",
        report.repos.len(),
        counts.join(", "),
        report.exit_code,
        out.display()
    );
    Ok(FleetOutcome { exit_code: report.exit_code, line })
}

/// Run every target on the worker pool, off the async executor. Each target gets exactly one
/// result: one whose worker was lost is `failed` with `E_INTERNAL`.
async fn run_all(targets: Vec<Target>, workers: usize, ctx: Arc<Ctx>) -> Vec<RepoResult> {
    // Runs hold libgit2 handles (not Sync) across awaits, so each runs on a worker thread with its
    // own single-threaded runtime; their synchronous work (git, files, spawning) spreads over the
    // cores instead of one thread.
    let before = usage::now();
    let (work_ctx, lost_ctx) = (ctx.clone(), ctx.clone());
    let backup = targets.clone();
    // The live progress's clock: a terminal's time left redrawn, a log's periodic line.
    let ticker = ctx.live.is_some().then(|| {
        let c = ctx.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                c.live.iter().for_each(|l| l.tick(std::time::Instant::now()));
            }
        })
    });
    let joined = tokio::task::spawn_blocking(move || {
        pool::run(
            targets,
            workers,
            move |rt, t| work_ctx.work(rt, t),
            move |t, why| lost_ctx.lost(t, Code::Internal, why),
        )
    })
    .await;
    ticker.iter().for_each(|t| t.abort());
    ctx.live.iter().for_each(|l| l.finish());
    let peak = *ctx.peak.lock().unwrap_or_else(|p| p.into_inner());
    tracing::debug!("hone fleet resources: before {before}; peak {peak}; after {}", usage::now());
    joined.unwrap_or_else(|e| {
        backup.iter().map(|t| ctx.lost(t, Code::Internal, &format!("the fleet's pool failed: {e}"))).collect()
    })
}

/// `hone fleet merge DIR...`: combine shard results into one aggregate in `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<FleetOutcome, HoneError> {
    let mut reports = Vec::new();
    for d in dirs {
        reports.push(journal::report_in(d).map_err(|e| {
            let what = format!("{} (or {}/{})", d.join("fleet.json").display(), d.display(), journal::FILE);
            HoneError::new(Code::Io, format!("cannot read {what}: {e}"))
        })?);
    }
    let merged = aggregate::merge(reports)
        .ok_or_else(|| HoneError::new(Code::Spec, "nothing to merge: give one or more shard directories"))?;
    aggregate::write(out, &merged)
        .map_err(|e| HoneError::new(Code::Io, format!("cannot write the merged reports: {e}")))?;
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
