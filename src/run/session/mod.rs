//! The model session: the conversation's start (the repo map, the system prompt, the first user
//! turn, planning or not), then the turn loop under the wall-time budget and cancellation. What
//! the loop keeps (the messages, checkpoints' objects, the watchdogs) stays in here; the session
//! hands back only how it ended.

mod answer;
mod budget;
mod checkpoint;
mod context;
mod cost;
mod history;
mod hooks;
mod instructions;
mod models;
mod plan;
mod prompt;
mod toolcall;
mod turns;
mod watch;
mod watchdog;

use super::checks::Checks;
use super::handoff::{Ended, Lane, Scope};
use super::state::{Run, State};
use crate::error::{Code, HoneError};
use crate::model::chain::Models;
use crate::protocol::Message;
use crate::record::Status;
use crate::tools::ToolContext;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What the loop works with: the model, the tools in the run's jail, and the job's checks.
/// What the session works with: the models, the tools and the checks.
pub struct Parts<'a> {
    pub model: &'a Models,
    pub tools: &'a Arc<ToolContext>,
    pub checks: Checks,
    /// Set when a verification round fails (a job's `cascade` starts its next try then).
    pub failed_round: Option<&'a tokio::sync::watch::Sender<bool>>,
}

/// How the session starts.
pub struct Opening {
    /// The repo map, being built.
    pub map: JoinHandle<String>,
    /// The failed run's conversation (`--continue` from a report dir).
    pub history: Vec<Message>,
    /// The note on saved work taken up (`--continue`).
    pub note: Option<String>,
    /// The model's work is already in the tree (saved work taken up).
    pub touched: bool,
    /// What hone remembered of the repository: the data block for the first message.
    pub memory: Option<String>,
    /// The commit the repository's instruction files are read from, or why there is none
    /// (`Checkout::guidance`).
    pub guidance: Result<git2::Oid, crate::error::HoneError>,
}

/// Run the session from the baseline to an outcome.
pub async fn run<'a>(
    s: &'a Scope,
    lane: Lane<'a>,
    parts: Parts<'a>,
    opening: Opening,
    base: git2::Oid,
    run: &'a mut Run,
) -> Ended {
    let mut lp = turns::Loop::new(s, lane, parts, run, base, opening.guidance.clone());
    lp.touched = opening.touched;
    begin(&mut lp, opening).await;
    let budget_note =
        || format!("the wall-time budget ({}) ran out", crate::spec::duration::format(lane.limits.max_wall_time));
    let bound = lp.lane.bound;
    let status = tokio::select! {
        r = tokio::time::timeout_at(bound.deadline, lp.drive()) => r.unwrap_or_else(|_| {
            lp.run.record.errors.push(HoneError::new(Code::Budget, budget_note()));
            lp.enter(State::Summarizing, "the wall-time budget ran out");
            Status::BudgetExhausted
        }),
        () = bound.cancel.cancelled() => Status::Cancelled,
    };
    lp.settle_marks().await;
    Ended { status, touched: lp.touched }
}

/// The conversation's start once the baseline is taken: the repo map, the system prompt and the
/// first user turn, then planning or not.
async fn begin(lp: &mut turns::Loop<'_>, opening: Opening) {
    let (s, lane) = (lp.s, lp.lane);
    lp.enter(State::ContextBuilding, "intake passed; baseline taken");
    let map = crate::repomap::wait(opening.map, lane.bound).await;
    let job = &s.job;
    let start = if job.plan { prompt::START_WITH_PLAN } else { prompt::START };
    let mut messages =
        vec![Message::system(prompt::system(job, lane.limits.max_fix_attempts, lane.ws.root(), &map, lane.policy))];
    // A second attempt from a report dir goes on with the failed run's conversation.
    let continued = !opening.history.is_empty();
    let start = match opening.note {
        Some(n) if continued => n,
        Some(n) => format!("{start}\n\n{n}"),
        None => start.to_string(),
    };
    // The repository's guidance and hone's memory come before the start text, as quoted data.
    let memory = opening.memory.filter(|_| !continued);
    let first: Vec<String> = [lp.instructions_opening(continued), memory, Some(start)].into_iter().flatten().collect();
    messages.extend(opening.history);
    messages.push(Message::user(first.join("\n\n")));
    lp.start(messages);
    if job.plan {
        lp.enter(State::Planning, "waiting for the model's plan");
    } else {
        lp.enter(State::Executing, "planning is off (`plan: false`)");
    }
}
