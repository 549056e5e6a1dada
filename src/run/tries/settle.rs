//! The tries settled: the checks choose the winner ([`super::choose`]); every try's line goes in
//! the report, and its spend, and the winner's account of its work, into the run's record; the
//! winner's change (from its ref) is applied to the checkout, for the landing to judge again and
//! commit (or save) as a run of one try would.

use super::super::handoff::{Ended, Scope};
use super::super::state::{Run, State};
use super::choose::{Candidate, choose};
use super::schedule::Slot;
use crate::error::{Code, HoneError};
use crate::record::Status;
use crate::record::tries::{TryOutcome, TryRecord};

/// Choose, record, and apply the winner: how the landing starts.
pub async fn settle(s: &Scope, slots: Vec<Slot>, run: &mut Run) -> Ended {
    let cancelled = s.bound.cancel.is_cancelled();
    let candidates: Vec<Candidate> = slots
        .iter()
        .filter_map(|slot| match slot {
            // A try stopped before it ended (a cascade's) never wins: its change is half made.
            Slot::Ran(d) if d.kept.is_some() && d.record.status != Some(Status::Cancelled) => {
                Some(Candidate::of(&d.record))
            }
            _ => None,
        })
        .collect();
    let choice = if cancelled { None } else { choose(&candidates) };
    let (mut winner, mut records, mut statuses) = (None, Vec::new(), Vec::new());
    for slot in slots {
        let done = match slot {
            Slot::NotStarted(r) => {
                if let Some(e) = r.errors.first() {
                    let why = e.message.trim_start_matches("never started: ");
                    run.record.warnings.push(format!("try {} never started: {why}", r.number));
                }
                records.push(*r);
                continue;
            }
            Slot::Ran(d) => *d,
        };
        let k = done.record.number;
        let won = choice.is_some_and(|c| c.number == k);
        run.record.absorb_try(k, &done.run.record, won);
        let mut record = done.record;
        record.outcome = outcome(&record, won, cancelled);
        statuses.push((k, record.status, record.errors.first().cloned()));
        if won {
            run.transcript = done.run.transcript.clone();
            winner = done.kept.as_ref().map(|(oid, _)| *oid);
        }
        let said = done.run.transcript.with_header(&done.run.record, &s.job, &s.policy);
        let patch = done.kept.as_ref().map(|(_, p)| p.clone());
        run.try_files.push(crate::output::TryFiles { number: k, patch, said });
        records.push(record);
    }
    records.sort_by_key(|r| r.number);
    (run.record.tries, run.record.chosen) = (records, choice);
    cost_of_all(s, run);
    match (choice, winner) {
        (Some(c), Some(oid)) => apply(s, c, oid, run).await,
        _ => none_chosen(s, cancelled, &statuses, run),
    }
}

/// The job's cost is known when every try that asked a model has its prices: then it is the
/// sum over the tries (at each one's prices); otherwise it is not given, and a warning says why.
fn cost_of_all(s: &Scope, run: &mut Run) {
    let asked = |t: &&TryRecord| t.turns > 0;
    let unpriced: Vec<String> =
        run.record.tries.iter().filter(asked).filter(|t| t.cost_usd.is_none()).map(|t| t.number.to_string()).collect();
    if !unpriced.is_empty() {
        // Said only when some prices are known (a job with none has no cost, as always).
        let some_priced = run.record.tries.iter().filter(asked).any(|t| t.cost_usd.is_some());
        if run.record.cost.take().is_some() || some_priced {
            run.record.warnings.push(format!(
                "the job's cost is not known: the model of try {} has no prices",
                unpriced.join(", try ")
            ));
        }
        return;
    }
    if run.record.cost.is_none() {
        let priced = s.job.attempts.tries.iter().find_map(|t| t.model.pricing);
        run.record.cost = priced.map(|pricing| crate::spec::pricing::Cost {
            usd: 0.0,
            limit_usd: s.job.limits.max_cost_usd,
            pricing,
        });
    }
}

/// Where a try that ran ended up.
fn outcome(r: &TryRecord, won: bool, cancelled: bool) -> TryOutcome {
    match r.outcome {
        _ if won => TryOutcome::Chosen,
        TryOutcome::Refused => TryOutcome::Refused,
        _ if r.status == Some(Status::Cancelled) && !cancelled => TryOutcome::Stopped,
        _ => TryOutcome::NotChosen,
    }
}

/// The winner's change in the checkout (claimed as the run's), for the landing.
async fn apply(s: &Scope, c: crate::record::tries::Choice, oid: git2::Oid, run: &mut Run) -> Ended {
    let status = run.record.tries.iter().find(|t| t.number == c.number).and_then(|t| t.status).unwrap_or(Status::Error);
    match s.ws.blocking(move |ws| ws.apply_saved(oid)).await {
        Ok(paths) => {
            for rel in &paths {
                s.ws.claim(rel);
            }
            let why = format!("try {} chosen: {}", c.number, c.why.words());
            run.enter(&s.events, State::Summarizing, &why);
            Ended { status, touched: !paths.is_empty() }
        }
        Err(e) => {
            let message =
                format!("the chosen try's change (try {}) does not apply to the checkout: {}", c.number, e.message);
            run.record.errors.push(HoneError::new(Code::Git, message));
            run.enter(&s.events, State::Summarizing, "the chosen try's change does not apply");
            Ended { status: Status::Error, touched: false }
        }
    }
}

/// No try's change can land: the run's status says why (every try changed nothing, every
/// change was refused, a cancel, or how the tries ended), and each try's first error is the
/// run's too.
fn none_chosen(
    s: &Scope,
    cancelled: bool,
    statuses: &[(u32, Option<Status>, Option<HoneError>)],
    run: &mut Run,
) -> Ended {
    let refused = run.record.tries.iter().any(|t| t.outcome == TryOutcome::Refused);
    let status = if cancelled {
        Status::Cancelled
    } else if statuses.iter().any(|(_, st, _)| *st == Some(Status::Success)) {
        // Every try that passed changed nothing: the landing says `no_change`.
        Status::Success
    } else if refused {
        let why = "every try's change was refused by a guard or ended without a change: see `tries` in the report";
        run.record.errors.push(HoneError::new(Code::PolicyDenied, why));
        Status::Failed
    } else {
        statuses.iter().find_map(|(_, st, _)| *st).unwrap_or(Status::Error)
    };
    for (k, _, e) in statuses {
        if let Some(e) = e {
            run.record.errors.push(HoneError { message: format!("try {k}: {}", e.message), ..e.clone() });
        }
    }
    // A cancel: the landing says so (it enters `ABORTED`).
    if !cancelled && !run.machine.state().is_terminal() {
        run.enter(&s.events, State::Summarizing, "no try's change can land");
    }
    Ended { status, touched: false }
}
