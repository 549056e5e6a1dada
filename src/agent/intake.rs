//! Intake: load and check the spec and the policy, find the repository and the report dir, build
//! the model client, open the repo, and set up the sandbox. Everything here is an input problem
//! (exit 2) when it fails, and is reported in the report dir as far as intake got.

use super::{RunOptions, locate, setup};
use crate::error::{Code, HoneError};
use crate::events::Events;
use crate::git::Workspace;
use crate::model::Model;
use crate::output::dir::ReportDir;
use crate::policy::{self, Policy};
use crate::redact::Redactor;
use crate::sandbox::{self, Sandbox, SandboxReport};
use crate::spec::{self, Job};

/// A run ready to start.
pub struct Prepared {
    pub job: Job,
    /// Autofix mode: the PR being fixed in place.
    pub autofix: Option<crate::forge::autofix::Target>,
    /// Autofix decided to do nothing, and why.
    pub skip: Option<String>,
    /// `owner/repo` when given explicitly (else `GITHUB_REPOSITORY` or the remote URL).
    pub github_repo: Option<String>,
    pub model: Model,
    pub ws: Workspace,
    pub policy: Policy,
    pub sandbox: Sandbox,
    pub sandbox_report: SandboxReport,
    pub redactor: Redactor,
    pub report_dir: ReportDir,
    pub events: Events,
    /// Every connection through the jails' proxies (policies that list hosts).
    pub egress: crate::egress::Ledger,
    /// Ignored entries before the run: anything ignored the run adds is removed at the end.
    pub ignored: Vec<String>,
    /// The end of the run's wall-time budget: the loop, commands and git work all stop by then.
    pub deadline: tokio::time::Instant,
    pub env: std::sync::Arc<crate::env::RunEnv>,
    pub shared: crate::env::Shared,
    /// The repo map, started at intake (alongside the jail) when the tree it reads is surely the
    /// baseline's: no autofix checkout, no setup, the base at HEAD. Taken by the run.
    pub map: std::sync::Mutex<Option<tokio::task::JoinHandle<String>>>,
    /// `--continue`: the failed run's saved work (applied after the baseline) and conversation.
    pub saved: Option<super::again::Resumed>,
}

/// Intake failed: why, and as much as intake knew of where to report it.
pub struct Failure {
    pub error: HoneError,
    /// The job's name, when the spec loaded.
    pub job: Option<String>,
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
fn load_job(opts: &mut RunOptions) -> Result<Job, HoneError> {
    let overrides = spec::Overrides { task: opts.task.take(), name: opts.name.take(), model: opts.model.clone() };
    if let Some(job) = opts.job.take() {
        return Ok(with_overrides(*job, opts));
    }
    let job = match &opts.spec {
        Some(_) if !opts.verify.is_empty() => {
            return Err(HoneError::new(Code::Spec, "`--verify` is for a one-off job without a spec")
                .hint("put the check in the spec's `verify:` list instead"));
        }
        Some(path) => spec::load_with(path, &overrides)?,
        None => {
            let task = overrides.task.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                HoneError::new(
                    Code::Spec,
                    "give a job spec (`hone run JOB.yaml`), or a task and a model (`hone run --task TEXT --model NAME`)",
                )
            })?;
            let model =
                opts.model.clone().filter(|m| !m.trim().is_empty()).ok_or_else(|| {
                    HoneError::new(Code::Spec, "`--task` without a job spec needs `--model NAME` too")
                })?;
            let a = spec::adhoc::Adhoc {
                provider: setup::provider_for(&model, &opts.env),
                task,
                model,
                verify: std::mem::take(&mut opts.verify),
                name: overrides.name.clone(),
            };
            spec::adhoc::job(&a, &locate::cwd())?
        }
    };
    Ok(with_overrides(job, opts))
}

/// The command line's (or the fleet's) PR number and base branch.
fn with_overrides(mut job: Job, opts: &mut RunOptions) -> Job {
    if let Some(n) = opts.pr.take() {
        job.pr.number = Some(n);
    }
    if let Some(b) = opts.base.take() {
        job.repo.base = Some(b);
    }
    job
}

/// Stage 1: the job, the repository and the report dir, which is cleared of an earlier run's
/// reports and holds `events.jsonl` from here on.
fn stage_one(opts: &mut RunOptions) -> Result<(Job, ReportDir, Events), Box<Failure>> {
    let early = |error: HoneError, job: Option<String>, report_dir: Option<ReportDir>| {
        Box::new(Failure { error, job, report_dir, events: None })
    };
    let job = match load_job(opts) {
        Ok(j) => j,
        Err(e) => return Err(early(e, None, locate::fallback_report_dir(opts))),
    };
    let mut job = job;
    let name = Some(job.name.clone());
    let root = match locate::repo_root(&job, opts.repo.take()) {
        Ok(r) => r,
        Err(e) => return Err(early(e, name, locate::fallback_report_dir(opts))),
    };
    job.repo.path = Some(root);
    let wanted = locate::report_dir_path(&job, opts.report_dir.take());
    let report_dir = ReportDir::new(&wanted, job.repo.path.as_deref()).and_then(|d| d.prepare().map(|()| d));
    let report_dir = match report_dir {
        Ok(d) => d,
        Err(e) => {
            let msg = format!("cannot use the report dir {}: {e}", wanted.display());
            return Err(early(HoneError::new(Code::Io, msg), name, None));
        }
    };
    let events = Events::new(
        uuid::Uuid::new_v4().to_string(),
        opts.redactor.clone(),
        opts.json_out.take(),
        opts.event_repo.take(),
        opts.progress.take(),
    );
    if let Err(e) = report_dir.create("events.jsonl").map(|f| events.attach_file(f)) {
        let msg = format!("cannot write {}/events.jsonl: {e}", report_dir.path().display());
        return Err(early(HoneError::new(Code::Io, msg), name, Some(report_dir)));
    }
    Ok((job, report_dir, events))
}

pub async fn prepare(opts: &mut RunOptions) -> Result<Prepared, Box<Failure>> {
    // `--continue REPORT_DIR` is read before the report dir is cleared (it may be the same).
    let resume = opts.continue_from.take().map(|arg| super::again::read(&arg));
    let (job, report_dir, events) = stage_one(opts)?;
    let deadline = tokio::time::Instant::now() + job.limits.max_wall_time;
    let name = job.name.clone();
    let (rd, ev) = (report_dir.clone(), events.clone());
    let fail = move |error: HoneError| {
        Box::new(Failure { error, job: Some(name.clone()), report_dir: Some(rd.clone()), events: Some(ev.clone()) })
    };
    let redactor = opts.redactor.clone();
    let env = opts.env.clone();
    setup::collect_secrets(&redactor, &job, &env);
    let mut policy = match opts.policy.take() {
        Some(p) => *p,
        None => load_policy(&job).map_err(&fail)?,
    };
    setup::policy_secrets(&redactor, &policy, &env);
    let model = match opts.replay.take() {
        Some(r) => crate::model::Model::Replay(r),
        None => setup::model(&job, &env, events.run_id()).map_err(&fail)?,
    };
    let root = job.repo.path.clone().unwrap_or_default();
    let excluded = locate::exclusions(&root, report_dir.path(), &job);
    let ws = Workspace::open(&root, excluded).map_err(&fail)?;
    if let Err(e) = locate::hide_hone_dir(ws.root()) {
        tracing::warn!("cannot write {}/.gitignore: {e}", locate::HONE_DIR);
    }
    protect_instructions(&mut policy, &job, &ws);
    let saved = resume.map(|r| r.and_then(|named| super::again::find(&ws, named, &job))).transpose().map_err(&fail)?;
    // The map only reads the tree: it is built while intake looks at the tree and builds the jail.
    let map = early_map(&job, &ws, &env).then(|| super::repomap::spawn(&ws, &job.task, job.repo_map_tokens, &policy));
    // One walk of the work tree for both what is dirty and what is ignored.
    let (dirty, ignored) = ws.blocking(|ws| ws.intake_status()).await.map_err(&fail)?;
    refuse_dirty(&job, &ws, &dirty).map_err(&fail)?;
    ws.keep(&ignored);
    // With setup commands, this first jail is setup's: the network as `setup.network` says, and
    // nothing protected from its writes (what it installs must stay). The run's own jail is built
    // after setup (`deps::run`), protecting what setup made.
    let egress = crate::egress::Ledger::new(Some(events.clone()));
    let (sandbox, sandbox_report) = if job.setup.is_empty() {
        build_sandbox(&policy, &ws, (&report_dir, &env), events.run_id(), &ignored, ("commands", &egress)).await
    } else {
        let mut setup_policy = policy.clone();
        setup_policy.network = policy.setup_egress();
        let id = format!("{}-setup", events.run_id());
        build_sandbox(&setup_policy, &ws, (&report_dir, &env), &id, &[], ("setup", &egress)).await
    }
    .map_err(&fail)?;
    let mut prepared = Prepared {
        job,
        model,
        ws,
        policy,
        sandbox,
        sandbox_report,
        redactor,
        report_dir,
        events,
        egress,
        ignored,
        deadline,
        env,
        shared: opts.shared.clone(),
        autofix: None,
        skip: None,
        github_repo: opts.github_repo.take(),
        map: std::sync::Mutex::new(map),
        saved,
    };
    autofix(&mut prepared, &opts.cancel).await.map_err(&fail)?;
    Ok(prepared)
}

/// A run that requires a clean work tree refuses a dirty one, naming what is uncommitted.
fn refuse_dirty(job: &Job, ws: &Workspace, dirty: &[String]) -> Result<(), HoneError> {
    if !job.repo.allow_dirty && !dirty.is_empty() {
        let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
        let more = if dirty.len() > 5 { format!(" and {} more", dirty.len() - 5) } else { String::new() };
        return Err(HoneError::new(
            Code::Git,
            format!("the work tree at {} has uncommitted changes: {}{more}", ws.root().display(), shown.join(", ")),
        )
        .hint("commit or stash them first, or set `repo.allow_dirty: true` to start anyway"));
    }
    Ok(())
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

/// Autofix mode: find the PR, apply the fork and loop guards, and point the run at its head.
async fn autofix(p: &mut Prepared, cancel: &tokio_util::sync::CancellationToken) -> Result<(), HoneError> {
    use crate::forge::{autofix, github, remote};
    let from_event = || if p.env.actions { autofix::number_from_event(&p.env) } else { None };
    let Some(number) = p.job.pr.number.or_else(from_event) else {
        return Ok(());
    };
    let fail = |m: String| HoneError::new(Code::Forge, format!("autofix of PR #{number}: {m}"));
    let token = p
        .env
        .var(&p.job.git.token_env)
        .map(str::to_string)
        .ok_or_else(|| fail(format!("`{}` is not set; autofix needs a token", p.job.git.token_env)))?;
    let url = p.ws.remote_url(&p.job.git.remote);
    let env_repo = p.github_repo.clone().or_else(|| p.env.github_repository.clone());
    let (owner, repo) = github::owner_repo(env_repo.as_deref(), url.as_deref())
        .ok_or_else(|| fail("cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo".into()))?;
    let gh = github::GitHub::new(&p.env.github_api_url, &token, &owner, &repo, p.shared.github_queue.clone())
        .map_err(|e| fail(e.message))?;
    let target = match autofix::inspect(&gh, number, p.job.pr.allow_forks).await.map_err(|e| fail(e.message))? {
        autofix::Decision::Skip(reason) => {
            p.skip = Some(reason);
            return Ok(());
        }
        autofix::Decision::Fix(t) => t,
    };
    let remote = remote::Remote::open(&p.ws, &p.job.git.remote, &p.env, &p.job.git.token_env, (p.deadline, cancel))
        .map_err(|e| fail(e.message))?;
    let fetched = remote.fetch(&p.ws, &target.head_ref, "refs/hone/autofix/head").await.map_err(|e| fail(e.message))?;
    if fetched != target.head_sha {
        return Err(fail(format!("the remote branch is at {fetched}, but the PR says {}; try again", target.head_sha)));
    }
    let message = p.ws.commit_message(&fetched).map_err(|e| fail(e.message))?;
    let by = autofix::made_by(&remote, &fetched).map_err(|e| fail(e.message))?;
    if autofix::made_by_hone(&message, &by, &p.job) {
        p.skip = Some(format!(
            "the head commit of PR #{number} was made by hone (trailer `Hone-Job: {}`): nothing to do until someone else pushes",
            p.job.name
        ));
        return Ok(());
    }
    p.job.repo.base = Some(fetched);
    p.job.git.branch = target.head_ref.clone();
    p.autofix = Some(target);
    Ok(())
}

/// Build the jail (which is also the probe: a machine that cannot jail stops the run here), or
/// run commands unconfined when the policy says `sandbox: off`.
pub(super) async fn build_sandbox(
    policy: &Policy,
    ws: &Workspace,
    (report_dir, env): (&ReportDir, &crate::env::RunEnv),
    run_id: &str,
    ignored: &[String],
    (purpose, ledger): (&str, &crate::egress::Ledger),
) -> Result<(Sandbox, SandboxReport), HoneError> {
    if !policy.sandbox {
        tracing::warn!("the policy turns the sandbox off: commands run with the host's network and file access");
        return Ok((Sandbox::default(), SandboxReport::default()));
    }
    let command_env = setup::command_env(policy, env);
    let inputs = sandbox::Inputs {
        policy,
        root: ws.root(),
        git_paths: ws.git_paths(),
        ignored,
        hone_paths: vec![ws.root().join(locate::HONE_DIR), report_dir.path().to_path_buf()],
        path_var: command_env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default(),
        home: env.home(),
        run_id,
    };
    let fail = |e: crate::jail::StartError| {
        let help = match e {
            crate::jail::StartError::Refused(_) => sandbox::remedy(),
            crate::jail::StartError::Fault(_) => {
                "this is a fault in hone's jail; please report it with this message".into()
            }
        };
        HoneError::new(Code::Policy, format!("this machine cannot jail commands: {e}"))
            .hint(format!("{help}; or set `sandbox: off` in the policy to run commands unconfined on purpose"))
    };
    let fault = |e: &dyn std::fmt::Display| fail(crate::jail::StartError::Fault(e.to_string()));
    let (plan, writable) = sandbox::plan(&inputs).map_err(|e| fault(&e))?;
    let report = SandboxReport {
        enabled: true,
        network_isolated: plan.isolate_network,
        landlock_abi: crate::jail::landlock_abi(),
        writable: writable.iter().map(|p| p.display().to_string()).collect(),
        masked: plan.masks.len(),
        protected_ignored: plan.ignored_dirs.len() + plan.ignored_files.len(),
    };
    let (egress, purpose, ledger) = (policy.network.clone(), purpose.to_string(), ledger.clone());
    let started = tokio::task::spawn_blocking(move || {
        crate::jail::Jail::start(&plan, writable).map(|j| Sandbox::jailed(j, &egress, &purpose, &ledger))
    })
    .await
    .map_err(|e| fault(&e))?;
    let sandbox = started.map_err(fail)?.map_err(|e| fault(&e))?;
    Ok((sandbox, report))
}
