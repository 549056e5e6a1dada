//! Driving one `hone fleet prs` command over its PRs: each repository's forge place and client,
//! at most `concurrency` PRs at once, each result journaled as it comes, a signal stopping the
//! rest, and the reports written at the end whatever happened.

use super::report::{self, PrResult, Totals};
use super::state::{Journal, Ledger, previous};
use super::{Command, Item, PrsOptions};
use crate::error::{Code, HoneError};
use crate::forge::Kind;
use crate::forge::campaign::{Clients, Opened};
use crate::forge::place::Place;
use crate::output::dir::ReportDir;
use futures_util::StreamExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub struct Plan {
    pub opts: PrsOptions,
    pub job: crate::spec::Job,
    pub out: PathBuf,
    /// Each PR with its target's URL (credentials and all: the place decides from it).
    pub items: Vec<(Item, String)>,
    /// PRs of targets the fleet file does not name as URLs: errors, as they are.
    pub lost: Vec<PrResult>,
    pub concurrency: usize,
}

/// An empty result for `item` on `forge`.
pub fn result_for(item: &Item, forge: &str) -> PrResult {
    PrResult {
        id: item.id.clone(),
        source: item.source.clone(),
        forge: forge.into(),
        number: item.number,
        dry_run: false,
        ..Default::default()
    }
}

struct Ctx<'c> {
    plan_opts: &'c PrsOptions,
    clients: Clients<'c>,
    retries: AtomicU64,
    ledger: Ledger,
    comment: String,
    done: AtomicUsize,
    total: usize,
}

impl Ctx<'_> {
    /// One PR, start to end; an error is the result's, never the run's.
    async fn one(&self, item: Item, url: String) -> PrResult {
        let place = self.clients.place(&url).await;
        let forge = place.as_ref().map_or(Kind::default(), |p| p.kind).id();
        let mut r = result_for(&item, forge);
        if let Err(e) = self.act(place, &item, &mut r).await {
            let why = e.hint.as_ref().map_or_else(|| e.message.clone(), |h| format!("{}; {h}", e.message));
            (r.code, r.error) = (Some(e.code), Some(self.plan_opts.redactor.apply(&why)));
        }
        r.dry_run = self.plan_opts.command.dry_run();
        r
    }

    async fn act(&self, place: Result<Place, HoneError>, item: &Item, r: &mut PrResult) -> Result<(), HoneError> {
        let Opened { api, repo } = self.clients.open(place?)?;
        let item = Item { repo, ..item.clone() };
        let res = match &self.plan_opts.command {
            Command::Status => {
                r.closed_by_hone = self.ledger.has(&item.id, item.number);
                super::status::one(&api, &item, r).await
            }
            Command::Close { dry_run, .. } => {
                let c = super::close::Close { comment: &self.comment, dry_run: *dry_run, ledger: &self.ledger };
                super::close::one(&api, &item, &c, r).await
            }
            Command::Merge { method, dry_run } => super::merge::one(&api, &item, *method, *dry_run, r).await,
        };
        let retried = api.retries();
        self.clients.sent.fetch_add(retried, Ordering::Relaxed);
        self.retries.fetch_add(retried, Ordering::Relaxed);
        res
    }

    /// One PR, or `cancelled` when a signal comes first (a request under way is dropped).
    async fn guarded(&self, item: Item, url: String) -> PrResult {
        let cancel = &self.plan_opts.cancel;
        let stopped = |item: &Item| PrResult {
            code: Some(Code::Cancelled),
            error: Some("stopped by a signal".into()),
            ..result_for(item, "")
        };
        if cancel.is_cancelled() {
            return stopped(&item);
        }
        let it = item.clone();
        let r = tokio::select! {
            r = self.one(item, url) => r,
            () = cancel.cancelled() => stopped(&it),
        };
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.plan_opts.quiet {
            let why = r.error.as_deref().or(r.reason.as_deref()).map(|e| format!(": {e}")).unwrap_or_default();
            eprintln!("hone fleet prs: {} #{}: {}{why} ({n}/{})", r.id, r.number, r.label(), self.total);
        }
        r
    }
}

/// Run the plan and write the reports.
pub async fn drive(plan: Plan) -> Result<super::PrsOutcome, HoneError> {
    let Plan { opts, job, out, items, lost, concurrency } = plan;
    let name = opts.command.name();
    let io =
        |what: &str, e: std::io::Error| HoneError::new(Code::Io, format!("cannot {what} in {}: {e}", out.display()));
    let dir = ReportDir::new(&out, None).map_err(|e| io("use the reports directory", e))?;
    let mut results = lost;
    // A result is carried over only for the very PR fleet.json names now (a fleet run since may
    // have opened another for the repository).
    let now = |k: &PrResult| items.iter().any(|(i, _)| i.id == k.id && i.number == k.number);
    let kept: Vec<PrResult> = if opts.resume {
        previous(&dir, name)
            .into_iter()
            .filter(|p| p.finished() && now(p))
            .map(|p| PrResult { resumed: true, ..p })
            .collect()
    } else {
        Vec::new()
    };
    let items: Vec<(Item, String)> = items.into_iter().filter(|(i, _)| !kept.iter().any(|k| k.id == i.id)).collect();
    let journal = Journal::start(&dir, name, &kept).map_err(|e| io("write the journal", e))?;
    results.extend(kept);
    let comment = match &opts.command {
        Command::Close { reason, .. } => super::close::comment_text(reason.as_deref(), &job.name),
        _ => String::new(),
    };
    let clients = Clients::new(&opts.env, &job, Default::default(), &opts.redactor, &opts.cancel);
    let ctx = Ctx {
        ledger: Ledger::read(&dir),
        total: items.len(),
        plan_opts: &opts,
        clients,
        retries: AtomicU64::new(0),
        comment,
        done: AtomicUsize::new(0),
    };
    let (started, started_at) = (std::time::Instant::now(), crate::events::now_rfc3339());
    let mut stream = futures_util::stream::iter(items).map(|(i, u)| ctx.guarded(i, u)).buffer_unordered(concurrency);
    while let Some(r) = stream.next().await {
        if let Err(e) = journal.add(&r) {
            tracing::warn!("cannot journal a result: {e}");
        }
        results.push(r);
    }
    drop(stream);
    let totals = Totals {
        started_at,
        duration_ms: started.elapsed().as_millis() as u64,
        requests: ctx.clients.sent.load(Ordering::Relaxed),
        retries: ctx.retries.load(Ordering::Relaxed),
        interrupted: ctx.plan_opts.cancel.is_cancelled(),
    };
    let dry_run = ctx.plan_opts.command.dry_run();
    let r = report::build(name, dry_run, results, totals);
    let json = serde_json::to_vec_pretty(&r).map_err(|e| io("write the report", std::io::Error::other(e)))?;
    dir.write(&format!("prs-{name}.json"), &json).map_err(|e| io("write the report", e))?;
    dir.write(&format!("prs-{name}.md"), report::markdown(&r).as_bytes()).map_err(|e| io("write the report", e))?;
    let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let line = format!(
        "hone fleet prs {name}: {} PRs: {} (exit {}); {} requests; reports in {}",
        r.prs.len(),
        if counts.is_empty() { "none".to_string() } else { counts.join(", ") },
        r.exit_code,
        r.requests,
        out.display()
    );
    let json = String::from_utf8_lossy(&json).into_owned();
    Ok(super::PrsOutcome { exit_code: r.exit_code, line, json })
}
