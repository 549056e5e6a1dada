//! A job's tries (`attempts:` in the job spec): several independent tries of the task, each in
//! its own worktree and jail, from one baseline (taken by the first try, copied by the others),
//! sharing the job's budgets; the repository's own checks choose the one that lands ([`choose`]),
//! which alone is applied to the checkout and landed as a run of one try would be. Not a stage:
//! it runs the stages, once per try and once for the landing.

pub mod choose;
mod one;
mod schedule;
mod settle;
mod trees;

use super::handoff::{Ended, Scope};
use super::state::{Run, State};
use super::{environment, land};
use crate::error::HoneError;
use crate::record::Status;

/// What the tries start from, besides the scope.
pub struct Orders<'a> {
    pub pr: Option<&'a crate::forge::autofix::Target>,
    /// Each try's models, in order.
    pub models: Vec<&'a crate::model::chain::Models>,
    /// The repo map intake started (it reads the base, as every tree holds it).
    pub map: Option<tokio::task::JoinHandle<String>>,
    pub ignored: Vec<String>,
}

/// The run's branch; the tries in their trees; the winner applied and landed; and, however that
/// went, the trees removed and the checkout put back.
pub async fn work_on(s: &Scope, mut o: Orders<'_>, run: &mut Run) -> Result<Status, HoneError> {
    s.events.emit(crate::protocol::Event::Stage { stage: crate::protocol::Stage::Environment });
    let checkout = environment::check_out(s, o.pr, std::mem::take(&mut o.ignored), run).await?;
    // The git dir's own files as they were before any try's command ran.
    let git_guard = crate::guard::GitGuard::snapshot(&s.ws.git_dir());
    let map = o.map.take();
    let status = match tried(s, &o, map, &checkout, run).await {
        Ok(ended) => {
            s.events.emit(crate::protocol::Event::Stage { stage: crate::protocol::Stage::Land });
            land::land(s, git_guard, ended, checkout.base, run).await
        }
        Err(e) => run.fail(&s.redactor, e),
    };
    land::restore(s, checkout, run).await;
    Ok(status)
}

/// The tries run and settled: how the landing starts (the winner's change applied to the
/// checkout, or none).
async fn tried(
    s: &Scope,
    o: &Orders<'_>,
    map: Option<tokio::task::JoinHandle<String>>,
    checkout: &super::handoff::Checkout,
    run: &mut Run,
) -> Result<Ended, HoneError> {
    let n = s.job.attempts.tries.len();
    trees::clear_refs(s).await?;
    let how = match s.job.attempts.strategy {
        crate::spec::attempts::Strategy::Parallel => "at once",
        crate::spec::attempts::Strategy::Cascade => "in a cascade",
    };
    run.enter(&s.events, State::ContextBuilding, &format!("{n} tries {how}, each in a worktree at the base"));
    let opened = trees::open(s, checkout.base, n).await?;
    run.enter(&s.events, State::Executing, &format!("{n} tries {how}"));
    let givens: Vec<one::Given<'_>> = s
        .job
        .attempts
        .tries
        .iter()
        .zip(&o.models)
        .map(|(t, model)| one::Given { checkout, pr: o.pr, model, spec: &t.model, limits: t.limits, meter: &s.meter })
        .collect();
    let dones = schedule::run(s, &opened.trees, &givens, map, run).await;
    trees::remove(s, opened).await;
    Ok(settle::settle(s, dones, run).await)
}
