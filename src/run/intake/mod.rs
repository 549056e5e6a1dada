//! Intake: load and check the spec and the policy, find the repository and the report dir, build
//! the model client, open the repo, and set up the sandbox. Everything here is an input problem
//! (exit 2) when it fails, and is reported in the report dir as far as intake got.

mod autofix;
pub mod credentials;
pub mod gitconfig;
pub mod locate;
mod refuse;
pub mod saved;
pub mod setup;

use super::handoff::{Scope, Start};
use super::request::{EventSinks, Hooks, Request, Source};
use crate::error::{Code, HoneError};
use crate::events::Events;
use crate::git::Workspace;
use crate::model::chain::Models;
use crate::output::dir::ReportDir;
use crate::policy::{self, Policy};
use crate::spec::{self, Job};
use refuse::{read_only_fits, refuse_dirty};

/// Intake failed: why, and as much as intake knew of where to report it.
pub struct Failure {
    pub error: HoneError,
    /// The job's name, when the spec loaded.
    pub job: Option<String>,
    /// The job's `telemetry:`, when the spec loaded (a job that opted out exports nothing).
    pub telemetry: Option<crate::spec::telemetry::TelemetrySpec>,
    /// Where the reports go; `None` when even that could not be settled.
    pub report_dir: Option<ReportDir>,
    pub events: Option<Events>,
}

/// Load the policy the job names (or the built-in one), with the verify commands allowed.
pub fn load_policy(job: &Job) -> Result<Policy, HoneError> {
    let p = match &job.policy {
        Some(path) => policy::load(path).map_err(|d| HoneError::located(Code::Policy, d))?,
        None => Policy::builtin(),
    };
    Ok(with_verify(p, job))
}

/// `p` with the job's verify commands allowed.
pub fn with_verify(mut p: Policy, job: &Job) -> Policy {
    p.allow_verify(&job.verify.iter().map(|v| (v.name.clone(), v.run.clone())).collect::<Vec<_>>());
    p
}

/// The job from the spec (or the command line alone), with the command line's overrides.
fn load_job(req: &Request) -> Result<Job, HoneError> {
    let o = &req.overrides;
    let overrides = spec::Overrides { task: o.task.clone(), name: o.name.clone(), model: o.model.clone() };
    let job = match &req.source {
        Source::Job(job) => *job.clone(),
        Source::Spec(_) if !o.verify.is_empty() => {
            return Err(HoneError::new(Code::Spec, "`--verify` is for a one-off job without a spec")
                .hint("put the check in the spec's `verify:` list instead"));
        }
        Source::Spec(path) => spec::load_with(path, &overrides)?,
        Source::OneOff => {
            let task = o.task.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                HoneError::new(
                    Code::Spec,
                    "give a job spec (`hone run JOB.yaml`), or a task and a model (`hone run --task TEXT --model NAME`)",
                )
            })?;
            let model =
                o.model.clone().filter(|m| !m.trim().is_empty()).ok_or_else(|| {
                    HoneError::new(Code::Spec, "`--task` without a job spec needs `--model NAME` too")
                })?;
            let (provider, model) = setup::provider_for(&model, &req.env);
            let a = spec::adhoc::Adhoc { provider, task, model, verify: o.verify.clone(), name: o.name.clone() };
            spec::adhoc::job(&a, &locate::cwd())?
        }
    };
    let job = with_overrides(job, req);
    let tries = job.attempts.tries.len();
    if let Some((why, help)) = spec::attempts::refusal(tries, job.repo.allow_dirty, job.change) {
        return Err(HoneError::new(Code::Spec, why).hint(help));
    }
    if tries > 1 && req.continue_from.is_some() {
        return Err(HoneError::new(Code::InvalidArgs, "`--continue` takes up one failed run's work: it makes one try")
            .hint("drop `--attempts` (or set `attempts: 1`) to continue a failed run"));
    }
    Ok(job)
}

/// The command line's (or the fleet's) PR number, base branch, change and memory switch.
fn with_overrides(mut job: Job, req: &Request) -> Job {
    if let Some(n) = req.overrides.pr {
        job.pr.number = Some(n);
    }
    if let Some(c) = req.overrides.change {
        job.change = c;
    }
    if let Some(b) = &req.overrides.base {
        job.repo.base = Some(b.clone());
    }
    if req.overrides.no_memory {
        job.memory.enabled = false;
    }
    if let Some(n) = req.overrides.attempts {
        let model = job.model.clone();
        job.attempts.resized(n as usize, &model);
    }
    job
}

/// Stage 1: the job, the repository and the report dir, which is cleared of an earlier run's
/// reports and holds `events.jsonl` from here on.
fn stage_one(req: &Request, sinks: EventSinks) -> Result<(Job, ReportDir, Events), Box<Failure>> {
    let early = |error: HoneError, job: Option<&Job>, report_dir: Option<ReportDir>| {
        let (name, telemetry) = (job.map(|j| j.name.clone()), job.map(|j| j.telemetry.clone()));
        Box::new(Failure { error, job: name, telemetry, report_dir, events: None })
    };
    let mut job = match load_job(req) {
        Ok(j) => j,
        Err(e) => return Err(early(e, None, locate::fallback_report_dir(req))),
    };
    let root = match locate::repo_root(&job, req.repo.clone()) {
        Ok(r) => r,
        Err(e) => return Err(early(e, Some(&job), locate::fallback_report_dir(req))),
    };
    // A live run in this checkout refuses this one before its report dir (perhaps the live
    // run's own) is emptied.
    if let Some(e) = crate::git::live_run_in(&root) {
        return Err(early(e, Some(&job), None));
    }
    job.repo.path = Some(root);
    let wanted = locate::report_dir_path(&job, req.report_dir.clone());
    let (report_dir, live) = match crate::output::dir::open_for_run(&wanted, job.repo.path.as_deref()) {
        Ok(opened) => opened,
        Err(e) => return Err(early(e, Some(&job), None)),
    };
    let (id, redactor) = (uuid::Uuid::new_v4().to_string(), req.redactor.clone());
    let events = Events::new(id, redactor, sinks.json, sinks.tag, sinks.progress);
    match live {
        // Nothing was emitted yet: attaching writes nothing, so it cannot fail.
        Ok(file) => drop(events.attach_file(file)),
        Err(e) => return Err(early(e, Some(&job), Some(report_dir))),
    }
    Ok((job, report_dir, events))
}

/// Intake: the scope every later stage reads, and what they start from; or why the run cannot
/// start, with as much as intake knew of where to report it.
pub async fn intake(req: &Request, sinks: EventSinks, hooks: Hooks) -> Result<(Scope, Start), Box<Failure>> {
    // `--continue REPORT_DIR` is read before the report dir is cleared (it may be the same).
    let resume = req.continue_from.as_deref().map(saved::read);
    let (mut job, report_dir, events) = stage_one(req, sinks)?;
    if let Err(error) = read_only_fits(&job, req) {
        return Err(Box::new(Failure {
            error,
            job: Some(job.name.clone()),
            telemetry: Some(job.telemetry.clone()),
            report_dir: Some(report_dir),
            events: Some(events),
        }));
    }
    let deadline = tokio::time::Instant::now() + job.limits.max_wall_time;
    let (name, telemetry) = (job.name.clone(), job.telemetry.clone());
    let (rd, ev) = (report_dir.clone(), events.clone());
    let fail = move |error: HoneError| {
        let (job, telemetry) = (Some(name.clone()), Some(telemetry.clone()));
        Box::new(Failure { error, job, telemetry, report_dir: Some(rd.clone()), events: Some(ev.clone()) })
    };
    let (redactor, env) = (req.redactor.clone(), req.env.clone());
    setup::collect_secrets(&redactor, &job, &env);
    credentials::register_named(&redactor, &env);
    let mut policy = match hooks.policy {
        Some(p) => *p,
        None => load_policy(&job).map_err(&fail)?,
    };
    setup::policy_secrets(&redactor, &policy, &env);
    // A read-only job's repository is read-only in every jail but setup's, and to every tool.
    policy.read_only_repo = job.change == spec::answer::Change::None;
    let (model, try_models) = models(&job, hooks.model, &env, events.run_id(), &redactor).map_err(&fail)?;
    let root = job.repo.path.clone().unwrap_or_default();
    let excluded = locate::exclusions(&root, report_dir.path(), &job);
    let ws = Workspace::open_for_run(&root, excluded, &env).map_err(&fail)?;
    gitconfig::register(&redactor, &ws);
    if let Err(e) = locate::hide_hone_dir(ws.root()) {
        tracing::warn!("cannot write {}/.gitignore: {e}", locate::HONE_DIR);
    }
    let (marker, claimed) = claim(&ws, &job, events.run_id()).await.map_err(&fail)?;
    protect_instructions(&mut policy, &job, &ws);
    let memory = super::remember::settle(&job, req, &ws, &policy);
    for dir in memory.dirs() {
        policy.hide_file(dir, ws.root(), "hidden: hone's memory of repositories");
    }
    for m in std::iter::once(&model).chain(&try_models) {
        hide_credentials(&mut policy, &env, m, &ws);
    }
    let resumed = resume.map(|r| r.and_then(|named| saved::find(&ws, named, &job))).transpose().map_err(&fail)?;
    let (dirty, ignored) = settle_tree(&mut policy, &ws, &redactor).await.map_err(&fail)?;
    // The map only reads the tree (what the policy lets the model read, now settled): it is
    // built while intake builds the jail.
    let map = early_map(&job, &ws, &env).then(|| crate::repomap::spawn(&ws, &job.task, job.repo_map_tokens, &policy));
    refuse_dirty(&job, &ws, &dirty).map_err(&fail)?;
    ws.keep(&ignored);
    let egress = crate::egress::Ledger::new(Some(events.clone()));
    let site = crate::sandbox::Site { ws: &ws, env: &env, report_dir: report_dir.path(), run_id: events.run_id() };
    let (jail, jail_report) = first_jail(&policy, &site, &ignored, &job, &egress).await.map_err(&fail)?;
    let bound = crate::bound::Bound::new(deadline, &req.cancel);
    // A read-only job answers about the checkout it is given; a PR changes nothing of that.
    let work = match job.change {
        spec::answer::Change::None => super::handoff::Work::Do(None),
        _ => autofix::decide(&mut job, &ws, req, &bound).await.map_err(&fail)?,
    };
    let (saved, history) = resumed.map(|r| (Some(r.saved), r.history)).unwrap_or_default();
    let start = Start { work, model, try_models, jail, jail_report, ignored, map, saved, history, claimed };
    let shared = req.shared.clone();
    let meter = Default::default();
    let scope =
        Scope { job, ws, policy, redactor, events, env, shared, bound, report_dir, egress, memory, marker, meter };
    Ok((scope, start))
}

/// The job's models, and each try's (`attempts:`; none for one try). In a replay every model
/// answers from the transcript, so that a recorded fallback happens again, and the tries use the
/// job's.
fn models(
    job: &Job,
    replay: Option<std::sync::Arc<crate::model::replay::Replay>>,
    env: &crate::env::RunEnv,
    run_id: &str,
    redactor: &crate::redact::Redactor,
) -> Result<(Models, Vec<Models>), HoneError> {
    if let Some(r) = replay {
        use crate::model::chain::Link;
        let link = |spec: &crate::spec::ModelSpec| Link {
            spec: spec.clone(),
            client: crate::model::Model::Replay(r.clone()),
            secret_files: Vec::new(),
        };
        return Ok((Models::new(link(&job.model), job.model.fallback.iter().map(link).collect()), Vec::new()));
    }
    let model = setup::models(job, env, run_id, redactor)?;
    let tries = &job.attempts.tries;
    if tries.len() <= 1 {
        return Ok((model, Vec::new()));
    }
    let own: Result<Vec<Models>, HoneError> = tries
        .iter()
        .map(|t| {
            let mut own = job.clone();
            own.model = t.model.clone();
            setup::models(&own, env, run_id, redactor)
        })
        .collect();
    Ok((model, own?))
}

/// The checkout claimed for this run (`git::claim`): what a killed run left saved and its
/// checkout put back, a live run's checkout refused, this run's marker written (durably) before
/// anything changes the checkout.
async fn claim(
    ws: &Workspace,
    job: &Job,
    run_id: &str,
) -> Result<(crate::git::Held, super::handoff::Claimed), HoneError> {
    let (id, name, branch) = (run_id.to_string(), job.name.clone(), job.git.branch.clone());
    let who = move |ws: &Workspace| {
        ws.claim_checkout(Some(crate::git::Claimant { run_id: &id, job: &name, branch: &branch }))
    };
    let c = ws.blocking(who).await?;
    let held = c.held.ok_or_else(|| HoneError::new(Code::Internal, "the run's marker was not written"))?;
    Ok((held, super::handoff::Claimed { recovered: c.recovered, warnings: c.ignored.into_iter().collect() }))
}

/// The first jail. With setup commands it is setup's: the network as `setup.network` says, and
/// nothing protected from its writes (what it installs must stay); the run's own jail is built
/// after setup, protecting what setup made.
pub async fn first_jail(
    policy: &Policy,
    site: &crate::sandbox::Site<'_>,
    ignored: &[String],
    job: &Job,
    egress: &crate::egress::Ledger,
) -> Result<(crate::sandbox::Sandbox, crate::sandbox::SandboxReport), HoneError> {
    if job.setup.is_empty() {
        return crate::sandbox::start(policy, site, ignored, "commands", egress).await;
    }
    let mut setup_policy = policy.clone();
    setup_policy.network = policy.setup_egress();
    setup_policy.read_only_repo = false;
    let id = format!("{}-setup", site.run_id);
    crate::sandbox::start(&setup_policy, &crate::sandbox::Site { run_id: &id, ..*site }, &[], "setup", egress).await
}

/// The model may not edit its own instructions: the job spec and the policy file.
fn protect_instructions(policy: &mut Policy, job: &Job, ws: &Workspace) {
    for (path, why) in
        [(Some(&job.spec_path), "protected: the job spec"), (job.policy.as_ref(), "protected: the policy file")]
    {
        if let Some(rel) = path
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| p.strip_prefix(ws.root()).ok().map(|r| r.to_string_lossy().into_owned()))
        {
            policy.protect(&rel, why);
        }
    }
}

/// The credential places the environment names (files, directories, `KUBECONFIG`'s files) and
/// the credentials files of hone's model clients (as a profile's token file) are hone's alone:
/// every jail masks them wherever they lie (a home directory, a runner's temp dir, the checkout,
/// where google-github-actions/auth writes its `gha-creds-*.json`), and no tool reads them.
fn hide_credentials(policy: &mut Policy, env: &crate::env::RunEnv, models: &Models, ws: &Workspace) {
    credentials::hide_named(policy, env, models.secret_files(), ws.root());
}

/// One walk of the work tree for what is dirty and what is ignored, and what they hold: the
/// credentials files among what git does not track are hidden like the named ones; those and
/// every other read-denied file git does not track are the user's, never removed by a restore
/// or rollback; and from here on no path the policy denies reading (the jail's hidden ones with
/// them) is staged in a checkpoint, the saved work or the commit.
async fn settle_tree(
    policy: &mut Policy,
    ws: &Workspace,
    redactor: &crate::redact::Redactor,
) -> Result<(Vec<String>, Vec<String>), HoneError> {
    let r = redactor.clone();
    let (dirty, ignored, untracked, found) = ws
        .blocking(move |ws| {
            let (dirty, ignored) = ws.intake_status()?;
            gitconfig::register_nested(&r, ws.root(), &[&dirty[..], &ignored[..]].concat());
            let untracked = crate::redact::found::untracked(ws, &dirty);
            let found = crate::redact::found::scan_paths(ws.root(), &untracked, &ignored, &r);
            Ok((dirty, ignored, untracked, found))
        })
        .await?;
    for rel in &found {
        policy.hide_file(&ws.root().join(rel), ws.root(), crate::redact::found::WHY);
    }
    let denied: Vec<String> =
        untracked.into_iter().filter(|rel| policy::read_denied_by(policy, rel).is_some()).collect();
    ws.keep(&denied);
    let rules = policy.read_deny.clone();
    ws.withhold(std::sync::Arc::new(move |rel: &str| rules.iter().any(|r| r.matcher.is_match(rel))));
    refuse_staged_hidden(policy, ws)?;
    Ok((dirty, ignored))
}

/// A path hone hides from commands (or the policy denies reading) that is staged in the index
/// before the run: the jail's git would show its blob (`git show :path`), so the run stops.
fn refuse_staged_hidden(policy: &Policy, ws: &Workspace) -> Result<(), HoneError> {
    let staged = ws.staged(100_000)?;
    let hidden: Vec<&String> = staged.iter().filter(|rel| policy::read_denied_by(policy, rel).is_some()).collect();
    let Some(first) = hidden.first() else { return Ok(()) };
    Err(HoneError::new(
        Code::Policy,
        format!("`{first}` is staged in the index, and commands may not read it (a credentials file, or a path the policy denies reading): the index would show it to them"),
    )
    .hint(format!("unstage it before running hone (`git restore --staged -- {first}`)")))
}

/// Whether the repo map can be built at intake: the run will start from the tree as it is now
/// (no PR to check out, no setup to change it, the base is HEAD).
fn early_map(job: &Job, ws: &Workspace, env: &crate::env::RunEnv) -> bool {
    let autofix = job.pr.number.is_some() || (env.actions && crate::forge::autofix::number_from_event(env).is_some());
    let at_head = match (ws.resolve_base(job.repo.base.as_deref()), ws.resolve_base(None)) {
        (Ok(base), Ok(head)) => head == base,
        _ => false,
    };
    job.repo_map_tokens > 0 && !autofix && job.setup.is_empty() && at_head
}
