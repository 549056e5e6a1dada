//! One `hone run`, as a sequence of stages called from `run` below: intake → environment and
//! baseline → the model session → land (guards, then commit or save; the checkout put back) →
//! ship → outputs. Each stage takes the scope intake settled and what the stage before it
//! returned (`handoff`), and writes what happened into the one run record; no stage imports a
//! sibling. However the run ends, the record is sealed once and published by `output`.

mod checks;
mod environment;
mod handoff;
pub mod intake;
mod land;
mod meter;
mod remember;
pub mod request;
mod session;
mod ship;
pub mod state;
mod summarize;
mod telemetry;
mod transcript;
mod tries;

pub use request::{EventSinks, Hooks, Overrides, Request, RunOutcome, Sinks, Source};

use crate::events::{Events, now_rfc3339};
use crate::output;
use crate::protocol::{Event, Stage};
use crate::record::{RunRecord, Status};
use handoff::{Scope, Start, Work};
use state::{Run, State};
use tokio::time::Instant;

/// Run the request to its end, and publish what happened.
pub async fn run(req: Request, sinks: Sinks, hooks: Hooks) -> RunOutcome {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let Sinks { events, mut commands } = sinks;
    let (scope, start) = match intake::intake(&req, events, hooks).await {
        Ok(i) => i,
        Err(f) => return intake_failed(*f, &req, commands.as_mut(), started, started_at).await,
    };
    if let Some(out) = commands.as_mut() {
        for c in output::actions::mask_commands(&scope.redactor.values()) {
            let _ = out.command(&c);
        }
    }
    let mut run = Run::new(begin_record(&scope, &start, started_at), started);
    scope.events.emit(Event::RunStarted {
        job: scope.job.name.clone(),
        repo: run.record.repo.clone(),
        branch: scope.job.git.branch.clone(),
        provider: run.record.provider.clone(),
        model: run.record.model.clone(),
    });
    let Start { work, model, try_models, jail, map, saved, history, ignored, .. } = start;
    // The commit hone was started on (the checkout has not moved yet).
    let status = match &work {
        Work::Skip(reason) => {
            run.record.summary = format!("Skipped: {}\n", crate::markdown::inline(reason));
            run.record.warnings.push(reason.clone());
            run.enter(&scope.events, State::Summarizing, "nothing to do");
            Status::Skipped
        }
        Work::Do(pr) if scope.job.attempts.several() => {
            // Intake's jail was the probe: each try builds its own, for its tree.
            drop(jail);
            let models = (0..scope.job.attempts.tries.len()).map(|k| try_models.get(k).unwrap_or(&model)).collect();
            let orders = tries::Orders { pr: pr.as_ref(), models, map, ignored };
            let worked = tries::work_on(&scope, orders, &mut run).await;
            worked.unwrap_or_else(|e| run.fail(&scope.redactor, e))
        }
        Work::Do(pr) => {
            let opening = FromIntake { jail, map, saved: saved.as_ref(), history, ignored };
            let worked = work_on(&scope, pr.as_ref(), &model, opening, &mut run).await;
            worked.unwrap_or_else(|e| run.fail(&scope.redactor, e))
        }
    };
    let pr = if let Work::Do(Some(target)) = &work { Some(target) } else { None };
    let orders =
        ship::Orders { dry_run: req.dry_run, env_repo: req.env_repo, remote_trusted: req.remote_trusted, autofix: pr };
    scope.events.emit(Event::Stage { stage: Stage::Ship });
    let status = ship::ship_if_verified(&scope, orders, status, &mut run).await;
    // The paths memory may name are the base's; in autofix, those of the PR's base as the forge
    // names it, never of its head (its author's, or hone's earlier work with files a model
    // named); none when that base is unknown.
    let paths_at = match pr {
        Some(t) => t.base_sha.as_ref().ok().and_then(|sha| git2::Oid::from_str(sha).ok()),
        None => git2::Oid::from_str(&run.record.base_sha).ok(),
    };
    let mut record = conclude(&scope, &mut run, status, paths_at);
    let said = run.transcript.with_header(&record, &scope.job, &scope.policy);
    let ended = telemetry::Ended {
        req: &req,
        events: &scope.events,
        said: &said,
        redactor: &scope.redactor,
        job: &scope.job.telemetry,
        root: Some(scope.ws.root()),
        budget_left: scope.job.limits.max_wall_time.saturating_sub(started.elapsed()),
    };
    telemetry::export(ended, &mut record).await;
    publish(&scope, record, &said, &run.try_files, commands.as_mut())
}

/// What the stages after intake start from, besides the model.
struct FromIntake<'a> {
    jail: crate::sandbox::Sandbox,
    map: Option<tokio::task::JoinHandle<String>>,
    saved: Option<&'a crate::git::Saved>,
    history: Vec<crate::protocol::Message>,
    ignored: Vec<String>,
}

/// The run's branch; the environment and the baseline; the session; landing the work; and,
/// however that went, the checkout put back.
async fn work_on(
    s: &Scope,
    pr: Option<&crate::forge::autofix::Target>,
    model: &crate::model::chain::Models,
    o: FromIntake<'_>,
    run: &mut Run,
) -> Result<Status, crate::error::HoneError> {
    s.events.emit(Event::Stage { stage: Stage::Environment });
    let checkout = environment::check_out(s, pr, o.ignored, run).await?;
    let begin = environment::Begin { saved: o.saved, with_history: !o.history.is_empty(), baseline: None };
    let (status, setup_jail) = match environment::prepare(s, s.lane(), o.jail, &checkout, o.map, begin, run).await {
        Err(status) => (status, None),
        Ok(ready) => {
            let handoff::Ready { tools, mut checks, map, git_guard, setup_jail, stop, note, touched } = ready;
            let ended = match stop {
                Some(status) => {
                    checks.settle(run).await;
                    // Land closes the run's jail: nothing else may hold it.
                    drop(checks);
                    handoff::Ended { status, touched }
                }
                None => {
                    let guidance = checkout.guidance.clone();
                    // The files the PR touches are those from its base (when known) to its head.
                    let trusted = guidance.clone().ok();
                    let memory = if o.history.is_empty() { recall(s, pr, trusted, checkout.base, run) } else { None };
                    let opening = session::Opening { map, history: o.history, note, touched, memory, guidance };
                    s.events.emit(Event::Stage { stage: Stage::Session });
                    session::run(
                        s,
                        s.lane(),
                        session::Parts { model, tools: &tools, checks, failed_round: None },
                        opening,
                        checkout.base,
                        run,
                    )
                    .await
                }
            };
            s.events.emit(Event::Stage { stage: Stage::Land });
            land::close(tools, run).await;
            (land::land(s, git_guard, ended, checkout.base, run).await, setup_jail)
        }
    };
    land::restore(s, checkout, run).await;
    drop(setup_jail);
    Ok(status)
}

/// What hone remembers of the repository, for the session's first message: reviewers'
/// feedback on the PR (autofix) is remembered first, then the entries for the task retrieved:
/// for its text, the checks failing at the baseline, the files the PR touches (from its base as
/// the forge names it to its head; none when that is unknown) and the files those checks' output names.
fn recall(
    s: &Scope,
    pr: Option<&crate::forge::autofix::Target>,
    trusted: Option<git2::Oid>,
    head: git2::Oid,
    run: &mut Run,
) -> Option<String> {
    let pr_files = match (pr, trusted) {
        (Some(_), Some(base)) => s.ws.paths_between(base, head, 50).unwrap_or_default(),
        _ => Vec::new(),
    };
    let files = remember::query_files(pr_files, &run.record, s.ws.root());
    if let Some(t) = pr {
        run.record.warnings.extend(t.feedback_unread.clone());
        if let Err(e) = remember::feedback(s, &t.feedback, &run.record, trusted) {
            run.record.warnings.push(format!("memory: {}", e.render()));
        }
    }
    let recalled = remember::recall(s, &run.record, &files);
    run.record.warnings.extend(recalled.warnings.into_iter().map(|w| format!("memory: {w}")));
    (run.record.memory.used, run.record.memory.entries) = (recalled.used, recalled.entries);
    recalled.block
}

/// An intake failure still ends with reports (where a report dir is known) that say why.
async fn intake_failed(
    f: intake::Failure,
    req: &Request,
    commands: Option<&mut crate::ci_text::Out>,
    started: Instant,
    started_at: String,
) -> RunOutcome {
    let redactor = &req.redactor;
    let events =
        f.events.unwrap_or_else(|| Events::new(uuid::Uuid::new_v4().to_string(), redactor.clone(), None, None, None));
    let mut record = RunRecord::new(f.job.as_deref().unwrap_or("hone"), events.run_id(), started_at);
    record.status = Status::InvalidInput;
    record.errors.push(redactor.error(f.error.clone()));
    record.summary = redactor.apply(&summarize::intake_failed(&record.errors));
    record.seal(started.elapsed());
    let ended = telemetry::Ended {
        req,
        events: &events,
        said: &[],
        redactor,
        job: &f.telemetry.clone().unwrap_or_default(),
        root: req.repo.as_deref(),
        budget_left: std::time::Duration::ZERO,
    };
    telemetry::export(ended, &mut record).await;
    let sinks = output::Sinks {
        dir: f.report_dir.as_ref(),
        events: &events,
        redactor,
        env: &req.env,
        repo_root: None,
        commands,
        tries: &[],
    };
    let published = output::publish(&record, &[], sinks);
    RunOutcome {
        exit_code: published.exit_code,
        line: published.line,
        message: Some(redactor.apply(&f.error.render())),
        record: Box::new(record),
    }
}

/// The record of a run that got past intake, as it starts: the job, the repository, the model,
/// the policy and its jail, and the warnings the setup deserves.
fn begin_record(s: &Scope, start: &Start, started_at: String) -> RunRecord {
    let job = &s.job;
    let mut r = RunRecord::new(&job.name, s.events.run_id(), started_at);
    (r.provider, r.model) = (job.model.provider.as_str().into(), job.model.name.clone());
    r.repo = s.ws.root().display().to_string();
    r.base = job.repo.base.clone().unwrap_or_else(|| "HEAD".into());
    (r.branch, r.context_window) = (job.git.branch.clone(), job.model.context_window);
    // With fallbacks, the cost is known only when every model has prices.
    let priced = job.model.unpriced().is_none();
    r.cost = job.model.pricing.filter(|_| priced).map(|pricing| crate::spec::pricing::Cost {
        usd: 0.0,
        limit_usd: job.limits.max_cost_usd,
        pricing,
    });
    r.policy.source =
        s.policy.source.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "built-in default".into());
    r.policy.sandbox = start.jail_report.clone();
    r.policy.network = crate::record::network::NetworkReport::of(&s.policy);
    r.change = job.change;
    r.memory = s.memory.report();
    r.warnings.extend(start.claimed.warnings.iter().cloned());
    if let Some(k) = &start.claimed.recovered {
        r.warnings.push(k.warning());
        r.recovered = Some(k.clone());
    }
    if job.verify.is_empty() && job.change != crate::spec::answer::Change::None {
        r.warnings.push("no verify commands are configured: the change is not verified".into());
    }
    if !s.policy.sandbox {
        r.warnings.push("the policy sets `sandbox: off`: commands ran with the host's network and file access".into());
    }
    r
}

/// The end of every run that got past intake: the final state and the summary; then the record,
/// sealed once.
fn conclude(s: &Scope, run: &mut Run, status: Status, paths_at: Option<git2::Oid>) -> RunRecord {
    let end = match status {
        Status::Success | Status::NoChange | Status::Skipped => State::Done,
        Status::Cancelled => State::Aborted,
        _ => State::Failed,
    };
    if !run.machine.state().is_terminal() {
        run.enter(&s.events, end, status.as_str());
    }
    run.record.status = status;
    if run.record.summary.is_empty() {
        run.record.summary = s.redactor.apply(&summarize::write(run, status));
    }
    match remember::record(s, &run.record, paths_at) {
        Ok(n) => run.record.memory.recorded = n,
        Err(e) => run.record.warnings.push(format!("memory: {}", e.render())),
    }
    run.record.warnings.extend(s.events.write_errors());
    run.record.policy.network.hosts = s.egress.tally();
    run.seal()
}

/// The sealed record, and what was said, out through the one writer.
fn publish(
    s: &Scope,
    record: RunRecord,
    said: &[crate::protocol::transcript::Entry],
    tries: &[output::TryFiles],
    commands: Option<&mut crate::ci_text::Out>,
) -> RunOutcome {
    let message = (record.status == Status::InvalidInput)
        .then(|| record.errors.first().map(|e| s.redactor.apply(&e.render())))
        .flatten();
    let sinks = output::Sinks {
        tries,
        dir: Some(&s.report_dir),
        events: &s.events,
        redactor: &s.redactor,
        env: &s.env,
        repo_root: Some(s.ws.root()),
        commands,
    };
    let published = output::publish(&record, said, sinks);
    RunOutcome { exit_code: published.exit_code, line: published.line, message, record: Box::new(record) }
}
