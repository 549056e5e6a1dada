//! One try of a job (`attempts:`), in its own tree: its first jail, setup and (the first try
//! only) the baseline, which the other tries wait for and copy; the session; its tools closed
//! and its change judged by the guards in its tree; then kept on its ref, with its patch.

use super::super::handoff::{Checkout, Ended, Lane, Tree};
use super::super::state::Run;
use super::super::{environment, land, session};
use super::trees::attempt_ref;
use crate::error::{Code, HoneError};
use crate::protocol::{Event, Stage};
use crate::record::Status;
use crate::record::tries::TryRecord;
use crate::verify::CheckResult;
use std::sync::Arc;
use tokio::sync::watch;

/// What the first try hands the others once its baseline is taken: the baseline, what hone
/// remembered for the task, and the repo map; or why no other try may start.
pub type Opening = Result<Arc<Shared>, HoneError>;

pub struct Shared {
    pub baseline: Vec<CheckResult>,
    /// What the baseline's checks (and the first try's setup) wrote: artifacts in every tree,
    /// never part of a try's change.
    pub artifacts: Vec<String>,
    pub memory: Option<String>,
    pub map: String,
}

/// How a try begins: the first takes the baseline and tells the others; the others wait for it.
pub enum Begin {
    First { map: Option<tokio::task::JoinHandle<String>>, tell: watch::Sender<Option<Opening>> },
    After(watch::Receiver<Option<Opening>>),
}

/// What every try works from.
pub struct Given<'a> {
    pub checkout: &'a Checkout,
    pub pr: Option<&'a crate::forge::autofix::Target>,
    pub model: &'a crate::model::chain::Models,
    pub spec: &'a crate::spec::ModelSpec,
    /// The try's own limits.
    pub limits: crate::spec::attempts::TryLimits,
    pub meter: &'a super::super::meter::Meter,
}

/// A try that ended: its run, its line in the report, and its change where it is kept.
pub struct Done {
    pub run: Run,
    pub record: TryRecord,
    /// The kept change: its commit (on `refs/hone/<job>/attempts/<k>`) and its patch.
    pub kept: Option<(git2::Oid, String)>,
}

/// Run try `tree` from `begin` to its end; `failed` is set when a verification round fails or
/// the try ends without success (`cascade` starts the next try then).
pub async fn run(
    s: &super::super::handoff::Scope,
    tree: &Tree,
    given: &Given<'_>,
    begin: Begin,
    failed: &watch::Sender<bool>,
    mut run: Run,
) -> Done {
    let started = std::time::Instant::now();
    // The job's limits, with the try's own turns, fix attempts and wall time (from its start).
    let own = given.limits;
    let mut limits = s.job.limits.clone();
    limits.max_turns = own.max_turns.unwrap_or(limits.max_turns);
    limits.max_fix_attempts = own.max_fix_attempts.unwrap_or(limits.max_fix_attempts);
    let deadline = match own.max_wall_time {
        Some(d) => tree.bound.deadline.min(tokio::time::Instant::now() + d),
        None => tree.bound.deadline,
    };
    limits.max_wall_time = own.max_wall_time.map_or(limits.max_wall_time, |d| d.min(limits.max_wall_time));
    let bound = crate::bound::Bound::new(deadline, &tree.bound.cancel);
    let keeps = super::super::handoff::Keeps { meter: given.meter, limits: &limits, own: &own, bound: &bound };
    let lane = tree.lane(keeps);
    run.transcript.work_tree = Some(tree.ws.root().display().to_string());
    run.transcript.try_no = Some(tree.number);
    let ended = live(s, lane, given, begin, failed, &mut run).await;
    let (status, kept) = match ended {
        Ok(status) => status,
        Err(e) => (run.fail(&s.redactor, e), None),
    };
    run.record.status = status;
    if status != Status::Success {
        failed.send_replace(true);
    }
    let spec = given.spec;
    let mut record = TryRecord::of(tree.number, spec, &run.record, ms(started));
    if kept.is_some() {
        record.refname = Some(attempt_ref(&s.job.name, tree.number));
        record.patch = Some(patch_file(tree.number));
    }
    Done { run, record, kept }
}

/// The report dir's file of try `k`'s patch.
pub fn patch_file(k: u32) -> String {
    format!("try-{k}.patch")
}

fn ms(since: std::time::Instant) -> u64 {
    since.elapsed().as_millis() as u64
}

/// The try's life up to its judged status, and its change kept (when it made one that may be
/// kept anywhere).
async fn live(
    s: &super::super::handoff::Scope,
    lane: Lane<'_>,
    given: &Given<'_>,
    begin: Begin,
    failed: &watch::Sender<bool>,
    run: &mut Run,
) -> Result<(Status, Option<(git2::Oid, String)>), HoneError> {
    let base = given.checkout.base;
    let (map, tell, shared) = match begin {
        Begin::First { map, tell } => (map, Some(tell), None),
        Begin::After(rx) => match wait_for_baseline(lane, rx).await {
            Ok(shared) => (Some(done_task(shared.map.clone())), None, Some(shared)),
            Err(status) => return Ok((status, None)),
        },
    };
    let site =
        crate::sandbox::Site { ws: lane.ws, env: &s.env, report_dir: s.report_dir.path(), run_id: s.events.run_id() };
    let jail = match super::super::intake::first_jail(lane.policy, &site, &[], &s.job, &s.egress).await {
        Ok((jail, _)) => jail,
        Err(e) => {
            told(tell, Err(e.clone()));
            return Err(e);
        }
    };
    let baseline = shared.as_ref().map(|o| o.baseline.as_slice());
    lane.events.emit(Event::Stage { stage: Stage::Environment });
    let begin = environment::Begin { saved: None, with_history: false, baseline };
    let prepared = match environment::prepare(s, lane, jail, given.checkout, map, begin, run).await {
        Ok(r) => r,
        Err(status) => {
            told(tell, Err(HoneError::new(Code::Setup, "the first try's setup or tools failed: see its errors")));
            return Ok((status, None));
        }
    };
    let super::super::handoff::Ready { tools, mut checks, map, git_guard, setup_jail, stop, .. } = prepared;
    if let Some(shared) = &shared {
        lane.ws.add_artifacts(&shared.artifacts);
    }
    let ended = match stop {
        Some(status) => {
            told(
                tell,
                Err(HoneError::new(Code::Check, "the first try stopped before its first request: see its errors")),
            );
            checks.settle(run).await;
            drop(checks);
            Ended { status, touched: false }
        }
        None => {
            let (map, memory) = match (tell, shared) {
                (Some(tell), _) => {
                    checks.settle(run).await;
                    first_opening(s, lane, given, map, tell, run).await
                }
                (None, Some(shared)) => (done_task(shared.map.clone()), shared.memory.clone()),
                (None, None) => (map, None),
            };
            let guidance = given.checkout.guidance.clone();
            let opening = session::Opening { map, history: vec![], note: None, touched: false, memory, guidance };
            let parts = session::Parts { model: given.model, tools: &tools, checks, failed_round: Some(failed) };
            lane.events.emit(Event::Stage { stage: Stage::Session });
            session::run(s, lane, parts, opening, base, run).await
        }
    };
    lane.events.emit(Event::Stage { stage: Stage::Land });
    land::close(tools, run).await;
    let (status, may_save) = land::judge(s, lane, &git_guard, &ended, base, run).await?;
    let kept = if may_save && !run.record.files_changed.is_empty() { keep(s, lane, base, run).await } else { None };
    drop(setup_jail);
    Ok((status, kept))
}

/// The first try's baseline is taken: what hone remembers for the task is recalled (once, for
/// every try), the repo map awaited, and both handed to the others with the baseline.
async fn first_opening(
    s: &super::super::handoff::Scope,
    lane: Lane<'_>,
    given: &Given<'_>,
    map: tokio::task::JoinHandle<String>,
    tell: watch::Sender<Option<Opening>>,
    run: &mut Run,
) -> (tokio::task::JoinHandle<String>, Option<String>) {
    let trusted = given.checkout.guidance.clone().ok();
    let memory = super::super::recall(s, given.pr, trusted, given.checkout.base, run);
    let map = crate::repomap::wait(map, lane.bound).await;
    let (baseline, artifacts) = (run.record.baseline.clone(), lane.ws.artifact_list());
    let shared = Shared { baseline, artifacts, memory: memory.clone(), map: map.clone() };
    tell.send_replace(Some(Ok(Arc::new(shared))));
    (done_task(map), memory)
}

/// A task that has its answer already.
fn done_task(map: String) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move { map })
}

fn told(tell: Option<watch::Sender<Option<Opening>>>, what: Opening) {
    if let Some(t) = tell {
        t.send_replace(Some(what));
    }
}

/// The first try's baseline, or the status of a try that cannot start without it.
async fn wait_for_baseline(lane: Lane<'_>, mut rx: watch::Receiver<Option<Opening>>) -> Result<Arc<Shared>, Status> {
    let got = tokio::select! {
        biased;
        () = lane.bound.cancel.cancelled() => return Err(Status::Cancelled),
        r = rx.wait_for(Option::is_some) => r.ok().and_then(|o| o.clone()),
    };
    match got {
        Some(Ok(shared)) => Ok(shared),
        _ => Err(Status::Skipped),
    }
}

/// The try's change on its ref (`refs/hone/<job>/attempts/<k>`), and its patch; `None` (with a
/// warning) when it cannot be kept.
async fn keep(
    s: &super::super::handoff::Scope,
    lane: Lane<'_>,
    base: git2::Oid,
    run: &mut Run,
) -> Option<(git2::Oid, String)> {
    let (job, k) = (&s.job, lane.number);
    let refname = attempt_ref(&job.name, k);
    let msg = s.redactor.apply(&format!(
        "hone: try {k} of {} ({})\n\nRun: {}\n\n{}",
        job.name,
        run.record.status.as_str(),
        run.record.run_id,
        run.record.final_message
    ));
    let (name, email) = (job.git.author_name.clone(), job.git.author_email.clone());
    let kept = lane
        .ws
        .blocking(move |ws| {
            let oid = ws.snapshot(base, &refname, &msg, &name, &email)?;
            Ok((oid, ws.diff_commits(base, oid)?))
        })
        .await;
    match kept {
        Ok((oid, patch)) => Some((oid, s.redactor.apply(&patch))),
        Err(e) => {
            run.record.warnings.push(format!("could not keep try {k}'s change: {}", e.message));
            None
        }
    }
}
