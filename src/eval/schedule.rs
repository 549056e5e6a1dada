//! `hone eval run`'s schedule: every task with every job, at most `concurrency` at once, within a
//! total budget: once what the finished runs cost reaches it, no more start (and the line says
//! how many did not). What an earlier run finished with the same job spec is kept (`--resume`);
//! each finished outcome is journaled at once. A cancel starts nothing more.

use super::running::{Ctx, Outcome, one};
use super::task::Task;
use crate::error::HoneError;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::path::PathBuf;

/// How many at once, and the total budget.
pub struct Limits {
    pub concurrency: usize,
    pub budget_usd: Option<f64>,
}

/// Every outcome (in task, then job, order), and how many pairs were not run for the budget.
pub async fn all(
    ctx: &Ctx,
    list: &[Task],
    jobs: &[PathBuf],
    carried: &[Outcome],
    journal: &std::sync::Mutex<std::fs::File>,
    limits: &Limits,
) -> Result<(Vec<Outcome>, usize), HoneError> {
    let pairs: Vec<(usize, &Task, &PathBuf)> =
        list.iter().flat_map(|t| jobs.iter().map(move |j| (t, j))).enumerate().map(|(i, (t, j))| (i, t, j)).collect();
    let mut done: Vec<Option<Outcome>> =
        pairs.iter().map(|(_, t, j)| super::journal::finished(carried, t, j, ctx.sources.settings(&t.repo))).collect();
    let mut spent: f64 = done.iter().flatten().filter_map(|o| o.cost_usd).sum();
    let todo: Vec<&(usize, &Task, &PathBuf)> = pairs.iter().filter(|(i, ..)| done[*i].is_none()).collect();
    let mut waiting = todo.into_iter();
    let mut running = FuturesUnordered::new();
    let mut not_run = 0;
    loop {
        while running.len() < limits.concurrency.max(1) && !ctx.cancel.is_cancelled() {
            let Some((i, t, j)) = waiting.next() else { break };
            if limits.budget_usd.is_some_and(|b| spent >= b) {
                not_run += 1;
                continue;
            }
            let i = *i;
            running.push(async move { (i, one(ctx, t, j).await) });
        }
        let Some((i, o)) = running.next().await else { break };
        eprintln!("hone eval: {} with {}: {:?}", o.instance_id, o.config, o.verdict);
        super::journal::append(journal, &o)?;
        if ctx.json {
            let mut line = serde_json::to_value(&o).unwrap_or_default();
            line["event"] = "eval_outcome".into();
            let _ = crate::ci_text::Out::stdout().json(&line.to_string());
        }
        spent += o.cost_usd.unwrap_or(0.0);
        done[i] = Some(o);
    }
    not_run += waiting.count();
    Ok((done.into_iter().flatten().collect(), not_run))
}
