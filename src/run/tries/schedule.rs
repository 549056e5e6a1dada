//! When each try runs: all at once (`parallel`), or each only once every earlier one failed a
//! verification round or ended without success (`cascade`), the ones still running stopped when
//! one passes. A try is not started when the job's cost budget could not pay for one answer of
//! its model, and says so.

use super::super::handoff::{Scope, Tree};
use super::super::state::Run;
use super::one::{self, Begin, Done, Given};
use crate::error::{Code, HoneError};
use crate::record::Status;
use crate::record::tries::TryRecord;
use crate::spec::attempts::Strategy;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::watch;

/// How a try's turn went: it ran to its end, or it never started (and why).
pub enum Slot {
    Ran(Box<Done>),
    NotStarted(Box<TryRecord>),
}

type Running<'a> = FuturesUnordered<Pin<Box<dyn Future<Output = Done> + 'a>>>;

/// Run the tries in `trees` (try `k` with `givens[k]`), as the job's strategy says; the first
/// try builds on intake's repo map (`map`) and takes the baseline. Every try has a slot.
pub async fn run(
    s: &Scope,
    trees: &[Tree],
    givens: &[Given<'_>],
    map: Option<tokio::task::JoinHandle<String>>,
    main: &mut Run,
) -> Vec<Slot> {
    let n = trees.len();
    let cascade = s.job.attempts.strategy == Strategy::Cascade;
    let (tell, heard) = watch::channel(None);
    let failed: Vec<watch::Sender<bool>> = (0..n).map(|_| watch::channel(false).0).collect();
    let mut begins: Vec<Option<Begin>> = (0..n).map(|_| Some(Begin::After(heard.clone()))).collect();
    begins[0] = Some(Begin::First { map, tell });
    let mut slots: Vec<Option<Slot>> = (0..n).map(|_| None).collect();
    let running: Running<'_> = FuturesUnordered::new();
    let mut running = running;
    let (mut next, mut won) = (0usize, false);
    loop {
        while next < n && !won && !stopped(s) && (!cascade || next == 0 || *failed[next - 1].borrow()) {
            let k = next;
            next += 1;
            let given = &givens[k];
            match affordable(s, given.spec, k) {
                Err(e) => {
                    // Not started is not passed: a cascade goes on to the next try.
                    failed[k].send_replace(true);
                    slots[k] = Some(Slot::NotStarted(Box::new(not_started(k, given, e))));
                }
                Ok(()) => {
                    let begin = begins[k].take().unwrap_or(Begin::After(heard.clone()));
                    let run = for_try(&main.record, given.spec, s);
                    running.push(Box::pin(one::run(s, &trees[k], given, begin, &failed[k], run)));
                    if cascade {
                        break;
                    }
                }
            }
        }
        if running.is_empty() {
            break;
        }
        let waiting_on = (cascade && next < n && !won && !stopped(s)).then(|| failed[next - 1].subscribe());
        tokio::select! {
            Some(done) = running.next() => {
                let k = done.record.number as usize - 1;
                if cascade && done.run.record.status == Status::Success {
                    won = true;
                    for t in trees.iter().filter(|t| t.number as usize != k + 1) {
                        t.bound.cancel.cancel();
                    }
                }
                slots[k] = Some(Slot::Ran(Box::new(done)));
            }
            () = failed_round(waiting_on) => {}
        }
    }
    let why = |won: bool| match (won, s.bound.cancel.is_cancelled()) {
        (_, true) => HoneError::new(Code::Cancelled, "never started: the run was cancelled"),
        (true, _) => HoneError::new(Code::Cancelled, "never started: an earlier try passed its checks"),
        _ => HoneError::new(Code::Budget, "never started: the job's wall-time budget ran out"),
    };
    slots
        .into_iter()
        .enumerate()
        .map(|(k, slot)| slot.unwrap_or_else(|| Slot::NotStarted(Box::new(not_started(k, &givens[k], why(won))))))
        .collect()
}

/// No more tries start: the run was cancelled, or its wall time is spent.
fn stopped(s: &Scope) -> bool {
    s.bound.cancel.is_cancelled() || tokio::time::Instant::now() >= s.bound.deadline
}

/// Until the try being waited on fails a verification round (never, when none is waited on).
async fn failed_round(rx: Option<watch::Receiver<bool>>) {
    match rx {
        Some(mut rx) => {
            if rx.wait_for(|f| *f).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Whether the job's cost budget can still pay for one answer of try `k`'s model (the first try
/// is always started: its own session says when the budget cannot pay).
fn affordable(s: &Scope, spec: &crate::spec::ModelSpec, k: usize) -> Result<(), HoneError> {
    let (Some(limit), Some(p)) = (s.job.limits.max_cost_usd, spec.pricing) else { return Ok(()) };
    let (spent, least) = (s.meter.spent().usd, p.most(0, spec.max_output_tokens));
    if k == 0 || spent + least <= limit {
        return Ok(());
    }
    use crate::spec::pricing::dollars;
    Err(HoneError::new(
        Code::Budget,
        format!(
            "never started: the cost budget ({}) would be exceeded: {} spent by the earlier tries, and one answer of this try's model could cost up to {}",
            dollars(limit),
            dollars(spent),
            dollars(least)
        ),
    ))
}

fn not_started(k: usize, given: &Given<'_>, why: HoneError) -> TryRecord {
    TryRecord::not_started(k as u32 + 1, given.spec.provider.as_str(), &given.spec.name, why)
}

/// A try's own run: the job's record as it stands after the checkout, with the try's model.
fn for_try(main: &crate::record::RunRecord, spec: &crate::spec::ModelSpec, s: &Scope) -> Run {
    let mut r = main.clone();
    (r.provider, r.model, r.context_window) = (spec.provider.as_str().into(), spec.name.clone(), spec.context_window);
    let priced = spec.unpriced().is_none();
    r.cost = spec.pricing.filter(|_| priced).map(|pricing| crate::spec::pricing::Cost {
        usd: 0.0,
        limit_usd: s.job.limits.max_cost_usd,
        pricing,
    });
    r.warnings.clear();
    r.errors.clear();
    Run::new(r, tokio::time::Instant::now())
}
