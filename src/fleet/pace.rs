//! The fleet's side of the campaign's pace (`pr.hourly_limit`, `pr.open_limit`): before any
//! repository runs, the campaign's PRs in every target are read from the forge (never from a
//! file); then each repository, as it starts, runs, runs to update its open PR, or waits
//! (`forge::pace_campaign` decides). A waiting repository is not run at all; the decision is not
//! revisited within the fleet run. Without a limit, nothing is asked of the forge.

use super::aggregate::{RepoResult, RepoStatus};
use super::spec::{Source, Target};
use super::{Ctx, outcome::failed};
use crate::error::{Code, HoneError};
use crate::forge::campaign::Clients;
use crate::forge::pace_campaign::{Budget, Decision, Limits, Seen};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Mutex;

/// The longest the campaign's PRs may take to read, for every target together.
const READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The budget the fleet's runs spend, and what was read of each target.
pub(super) struct Pace {
    budget: Mutex<Budget>,
    /// Each URL target's own campaign PRs, by id (a path target's are not read).
    mine: HashMap<String, Vec<Seen>>,
    /// The targets whose PRs could not be read, with why.
    unread: HashMap<String, HoneError>,
}

/// Whether a repository runs: with a slot of the budget to give back if it opens no PR.
pub(super) enum Admit {
    Run { slot: bool },
    Not(Box<RepoResult>),
}

/// The job's limits; none when the job opens no PR (`pr.enabled: false`).
pub(super) fn limits(job: &crate::spec::Job) -> Limits {
    if job.pr.enabled == crate::spec::PrEnabled::No {
        return Limits::default();
    }
    Limits { hourly: job.pr.hourly_limit, open: job.pr.open_limit }
}

/// The time now, in Unix seconds. Debug builds (the test suite's) only: `HONE_TEST_NOW=<unix
/// seconds>` sets it, so a test can run the fleet an hour later; a release build never reads it.
fn now(env: &crate::env::RunEnv) -> i64 {
    #[cfg(debug_assertions)]
    if let Some(t) = env.var("HONE_TEST_NOW").and_then(|v| v.parse().ok()) {
        return t;
    }
    let _ = env;
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Read the campaign's PRs in every URL target (at most `concurrency` at once), and the budget
/// they leave; `None` (and no request) when the job sets no limit.
pub(super) async fn plan(
    c: &Ctx,
    runs: &crate::shared::Shared,
    targets: &[Target],
    concurrency: usize,
) -> Result<Option<Pace>, HoneError> {
    let limits = limits(&c.job);
    if !limits.any() {
        return Ok(None);
    }
    let clients = Clients::new(&c.env, &c.job, runs.forge.clone(), &c.redactor, &c.cancel);
    let urls = targets.iter().filter_map(|t| match &t.source {
        Source::Url(u) => Some((t.id.clone(), u.clone())),
        Source::Path(_) => None,
    });
    let clients = &clients;
    let reading = futures_util::stream::iter(urls)
        .map(|(id, u)| async move { (id, super::prs::pace::seen(clients, &u).await) })
        .buffer_unordered(concurrency.max(1))
        .collect::<Vec<(String, Result<Vec<Seen>, HoneError>)>>();
    let read = tokio::select! {
        r = tokio::time::timeout(READ_LIMIT, reading) => r.map_err(|_| HoneError::new(
            Code::Forge,
            format!("reading the campaign's PRs for its pace took over {} minutes", READ_LIMIT.as_secs() / 60),
        ).hint("try again later, or raise or remove `pr.hourly_limit` and `pr.open_limit`"))?,
        () = c.cancel.cancelled() => {
            return Err(HoneError::new(Code::Cancelled, "cancelled while reading the campaign's PRs for its pace"));
        }
    };
    let (mut mine, mut unread) = (HashMap::new(), HashMap::new());
    for (id, r) in read {
        match r {
            Ok(seen) => _ = mine.insert(id, seen),
            Err(e) => _ = unread.insert(id, e),
        }
    }
    let all: Vec<Seen> = mine.values().flatten().copied().collect();
    let budget = Mutex::new(Budget::new(limits, &all, now(&c.env)));
    Ok(Some(Pace { budget, mine, unread }))
}

impl Pace {
    fn budget(&self) -> std::sync::MutexGuard<'_, Budget> {
        self.budget.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `t` runs now (taking a slot when it may open a PR), or its result without a run.
pub(super) fn admit(c: &Ctx, t: &Target) -> Admit {
    let Some(p) = c.pace.get() else { return Admit::Run { slot: false } };
    if let Some(e) = p.unread.get(&t.id) {
        let why = format!("cannot count the campaign's PRs here, so it is not run: {}", e.message);
        return Admit::Not(Box::new(c.lost(t, e.code, &why)));
    }
    let mine = p.mine.get(&t.id).map_or(&[][..], Vec::as_slice);
    let decision = match p.unread.keys().min() {
        // Another target's PRs are unknown: so is the budget, and nothing new is opened.
        Some(other) if !mine.iter().any(|s| s.open) => Decision::Waiting(format!(
            "waiting: the campaign's PRs in {other} could not be read, so what is left of its pace is unknown"
        )),
        _ => p.budget().admit(mine),
    };
    match decision {
        Decision::Run => Admit::Run { slot: true },
        Decision::RunUpdating => Admit::Run { slot: false },
        Decision::Waiting(why) => Admit::Not(Box::new(waiting(c, t, &why))),
    }
}

/// A run that held a slot ended: the slot comes back unless it opened a PR (or, in a dry run,
/// found a change it would have opened one for). A run that names a PR it did not merely update
/// keeps its slot: a failed run's draft (`pr.on_failure: draft`) is a PR opened too.
pub(super) fn ended(c: &Ctx, slot: bool, r: &RepoResult) {
    let opened = r.status == RepoStatus::PrCreated
        || (r.pr_number.is_some() && r.status != RepoStatus::PrUpdated)
        || (r.dry_run && r.status == RepoStatus::Succeeded);
    if let (true, false, Some(p)) = (slot, opened, c.pace.get()) {
        p.budget().give_back();
    }
}

/// The result of a repository that waits: its report dir emptied (nothing ran), and with
/// `--json` its `waiting` and `run_completed` events.
fn waiting(c: &Ctx, t: &Target, why: &str) -> RepoResult {
    if let Err(e) = super::layout::clear_report_dir(&c.fleet.workspace, &t.id) {
        tracing::warn!("cannot clear the report dir of {}: {e}", t.id);
    }
    if c.json {
        // The `--json` stream: `Events` writes it through `ci_text::Out`, neutral for the runner.
        #[allow(clippy::disallowed_methods)]
        let stdout = Box::new(std::io::stdout()) as Box<dyn std::io::Write + Send>;
        let events =
            crate::events::Events::new(String::new(), c.redactor.clone(), Some(stdout), Some(t.id.clone()), None);
        events.emit(crate::protocol::Event::Waiting { reason: why.to_string() });
        let status = RepoStatus::Waiting.as_str().to_string();
        events.emit(crate::protocol::Event::RunCompleted { status, exit_code: 0, duration_ms: 0 });
    }
    let mut r = failed(t, Code::Internal, why, &c.digest_for(t), &c.report_dir(t));
    (r.status, r.code, r.dry_run) = (RepoStatus::Waiting, None, c.dry_run);
    r
}
