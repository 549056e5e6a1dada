//! `hone eval run`, its core: each task run with a job spec in its own task repository (its
//! start and nothing later), as `hone run` runs a job (dry: nothing pushed); then graded in a
//! tree made from the agent's final commit (its commit, or its saved work) alone: the held-out
//! test change applied, the job's check run in the jail, and every `FAIL_TO_PASS` and
//! `PASS_TO_PASS` test must pass.
//! A task that could not be set up or graded is an error, never "unresolved".

use super::grade::{Graded, resolved};
use super::task::Task;
use crate::error::{Code, HoneError};
use crate::run::{self, EventSinks, Request, Sinks, Source};
use crate::spec::VerifySpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How a task went for one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Resolved,
    Unresolved,
    /// The task could not be set up or graded (not the agent's failure).
    Error,
}

/// One task with one configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub instance_id: String,
    /// The job spec (the configuration).
    pub config: String,
    /// SHA-256 of the job spec's bytes: `--resume` keeps an outcome only for the same job.
    pub job_sha256: String,
    pub verdict: Verdict,
    /// The run's status (`success`, `failed`, …); null when it never ran.
    pub status: Option<String>,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub turns: u32,
    /// How many tries the run made (`attempts:`; 1 without).
    #[serde(default)]
    pub tries: u32,
    pub duration_ms: u64,
    /// Why it is an error.
    pub error: Option<String>,
    /// Where its repository and the run's reports are, in the out dir.
    #[serde(default)]
    pub dir: String,
    /// Why an unresolved task's tests could not say more (they ran past their timeout, the
    /// setup failed in the agent's tree, no report was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What every task of a run shares.
pub struct Ctx {
    pub env: std::sync::Arc<crate::env::RunEnv>,
    pub cancel: tokio_util::sync::CancellationToken,
    pub redactor: crate::redact::Redactor,
    /// Where the task repositories and each run's reports go.
    pub out: PathBuf,
    /// The tasks' repositories, and their settings.
    pub sources: super::source::Sources,
    /// Each outcome as a JSON line on stdout as it finishes (`--json`).
    pub json: bool,
}

/// `task` run with the job spec at `config`, and graded.
pub async fn one(c: &Ctx, task: &Task, config: &Path) -> Outcome {
    let started = std::time::Instant::now();
    let mut out = Outcome {
        instance_id: task.instance_id.clone(),
        config: config.display().to_string(),
        job_sha256: digest(config, task, c.sources.settings(&task.repo)),
        verdict: Verdict::Error,
        status: None,
        tokens: 0,
        cost_usd: None,
        turns: 0,
        tries: 0,
        duration_ms: 0,
        error: None,
        note: None,
        dir: place(Path::new(""), &task.instance_id, config).display().to_string(),
    };
    if let Err(e) = run_and_grade(c, task, config, &mut out).await {
        (out.verdict, out.error) = (Verdict::Error, Some(e.message));
    }
    out.duration_ms = started.elapsed().as_millis() as u64;
    out
}

/// The digest of the job spec at `config` (empty when it cannot be read: then nothing resumes),
/// and of what else decides how `task` runs: its test command, its repository's settings.
pub fn digest(config: &Path, task: &Task, settings: Option<&super::repos::Repo>) -> String {
    let Ok(mut bytes) = crate::safe_fs::read_small(config, 1 << 20) else {
        return String::new();
    };
    if task.test_cmd.is_some() || settings.is_some() {
        bytes.extend(serde_json::to_vec(&(&task.test_cmd, settings)).unwrap_or_default());
    }
    crate::spec::sha256_hex(&bytes)
}

/// The job at `config` as a task runs it: its setup and test command those the repositories
/// file or the task give, if they do; and the check that grades, with its test command whole.
fn job_for(c: &Ctx, task: &Task, config: &Path) -> Result<(crate::spec::Job, VerifySpec), HoneError> {
    let mut job = crate::spec::load(config)?;
    let at = job.verify.iter().position(|v| v.junit.is_some()).ok_or_else(|| {
        HoneError::new(Code::Spec, format!("{}: `hone eval` needs a check with `junit:`", config.display()))
    })?;
    let given = c.sources.settings(&task.repo);
    if let Some(setup) = given.and_then(|r| r.setup_commands()) {
        job.setup = setup;
    }
    let check = &mut job.verify[at];
    if let Some(run) = task.test_cmd.clone().or_else(|| given.and_then(|r| r.test.clone())) {
        check.run = run;
    }
    if let Some(junit) = given.and_then(|r| r.junit.clone()) {
        check.junit = Some(junit);
    }
    let grading = check.clone();
    // The agent's own run never learns which tests grade it.
    check.run = super::select::whole_suite(&check.run);
    Ok((job, grading))
}

/// Where a task's run with the job at `config` goes: `tasks/<id>/<job>`, each one directory
/// whatever the names hold (a `/` in an id never nests one task inside another's tree), told
/// apart by a digest of the whole id and of the job's path (two `job.yaml` in two dirs).
pub fn place(out: &Path, instance_id: &str, config: &Path) -> PathBuf {
    let flat = |s: &str, whole: &str| {
        let mut name: String =
            s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).take(80).collect();
        name.push('-');
        name.push_str(&crate::spec::sha256_hex(whole.as_bytes())[..8]);
        name
    };
    let stem = config.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    out.join("tasks").join(flat(instance_id, instance_id)).join(flat(&stem, &config.display().to_string()))
}

/// The agent's run of `task`, dry, in a new task repository at `place`: its record, and the
/// commit its work ended at (its commit, or its saved work, else the start).
async fn agent_run(
    c: &Ctx,
    task: &Task,
    mut job: crate::spec::Job,
    place: &Path,
) -> Result<(Box<crate::record::RunRecord>, PathBuf, git2::Oid), HoneError> {
    let base = git2::Oid::from_str(&task.base_commit)?;
    let src = c.sources.local(&task.repo, &c.env, &c.cancel).await?;
    // What an earlier run left here (an error retried, a run without --resume) goes first.
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("{}: {e}", place.display()));
    if let (Some(parent), Some(name)) = (place.parent(), place.file_name()) {
        std::fs::create_dir_all(parent).map_err(io)?;
        crate::safe_fs::remove_beneath(parent, name).map_err(io)?;
    }
    let root = super::isolate::task_repo(&src, base, &place.join("repo"))?;
    // Graded is what the agent committed: a job that would not commit still does here.
    (job.task, job.repo.path, job.repo.scratch, job.git.push, job.git.commit) =
        (task.problem_statement.clone(), Some(root.clone()), false, false, true);
    let mut req = Request::new(Source::Job(Box::new(job)), c.env.clone(), c.cancel.child_token(), c.redactor.clone());
    // An evaluation's runs are not the team's runs: none of them goes to its dashboards.
    req.telemetry = crate::telemetry::Link::Off;
    (req.report_dir, req.dry_run, req.env_repo) = (Some(place.join("reports")), true, false);
    let ran = run::run(req, Sinks { events: EventSinks::default(), commands: None }, Default::default()).await;
    let after = match (&ran.record.commit, &ran.record.saved_ref) {
        (Some(commit), _) => git2::Oid::from_str(&commit.sha)?,
        (None, Some(saved)) => git2::Repository::open(&root)?.refname_to_id(saved)?,
        (None, None) => base,
    };
    Ok((ran.record, root, after))
}

async fn run_and_grade(c: &Ctx, task: &Task, config: &Path, out: &mut Outcome) -> Result<(), HoneError> {
    let (job, check) = job_for(c, task, config)?;
    let policy = crate::run::intake::load_policy(&job)?;
    let place = place(&c.out, &task.instance_id, config);
    let setup = job.setup.clone();
    let (r, root, after) = agent_run(c, task, job, &place).await?;
    (out.status, out.tokens, out.turns) = (Some(r.status.as_str().to_string()), r.usage.total_tokens, r.turns);
    out.cost_usd = r.cost.map(|k| k.usd);
    out.tries = r.tries.len().max(1) as u32;
    // A run that never got to work (the model unreachable, the job refused, a cancel) is an
    // error of the evaluation, never the configuration's "unresolved".
    use crate::record::Status;
    if matches!(r.status, Status::Error | Status::InvalidInput | Status::Cancelled) {
        let why =
            r.errors.first().map_or_else(|| format!("the run ended `{}`", r.status.as_str()), |e| e.message.clone());
        return Err(HoneError::new(Code::Model, why));
    }
    let tester = super::jailed::Jailed {
        check,
        policy,
        env: c.env.clone(),
        cancel: c.cancel.clone(),
        report_dir: place.join("grading"),
        setup,
        spent_ms: Default::default(),
    };
    let base = git2::Oid::from_str(&task.base_commit)?;
    let graded = Graded { fail_to_pass: task.fail_to_pass.clone(), pass_to_pass: task.pass_to_pass.clone() };
    let (graded_at, tests) =
        super::graded::tree(&root, base, after, &task.test_patch, &tester.check.run, &place.join("graded"))?;
    // From here the tree is the agent's: its tests that hang, a setup it broke, a report its
    // code kept from being written are its failure (unresolved, with why), not the evaluation's.
    use super::validate::Tester;
    let outcomes = match tester.open(&graded_at, &tests).await {
        Ok(tree) => tester.outcomes(&tree).await,
        Err(e) => Err(e),
    };
    match outcomes {
        Ok(o) => out.verdict = if resolved(&graded, &o) { Verdict::Resolved } else { Verdict::Unresolved },
        Err(e) if matches!(e.code, Code::Cancelled | Code::Io | Code::Internal | Code::Policy) => return Err(e),
        Err(e) => (out.verdict, out.note) = (Verdict::Unresolved, Some(e.message)),
    }
    Ok(())
}
