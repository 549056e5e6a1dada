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
    pub duration_ms: u64,
    /// Why it is an error.
    pub error: Option<String>,
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
        duration_ms: 0,
        error: None,
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

async fn run_and_grade(c: &Ctx, task: &Task, config: &Path, out: &mut Outcome) -> Result<(), HoneError> {
    let (mut job, check) = job_for(c, task, config)?;
    let policy = crate::run::intake::load_policy(&job)?;
    let stem = config.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let place = c.out.join("tasks").join(&task.instance_id).join(&stem);
    let base = git2::Oid::from_str(&task.base_commit)?;
    let setup = job.setup.clone();
    let src = c.sources.local(&task.repo, &c.env, &c.cancel).await?;
    let root = super::isolate::task_repo(&src, base, &place.join("repo"))?;
    (job.task, job.repo.path, job.repo.scratch, job.git.push) =
        (task.problem_statement.clone(), Some(root.clone()), false, false);
    let mut req = Request::new(Source::Job(Box::new(job)), c.env.clone(), c.cancel.child_token(), c.redactor.clone());
    (req.report_dir, req.dry_run, req.env_repo) = (Some(place.join("reports")), true, false);
    let ran = run::run(req, Sinks { events: EventSinks::default(), commands: None }, Default::default()).await;
    let r = &ran.record;
    (out.status, out.tokens, out.turns) = (Some(r.status.as_str().to_string()), r.usage.total_tokens, r.turns);
    out.cost_usd = r.cost.map(|k| k.usd);
    let after = match (&r.commit, &r.saved_ref) {
        (Some(commit), _) => git2::Oid::from_str(&commit.sha)?,
        (None, Some(saved)) => git2::Repository::open(&root)?.refname_to_id(saved)?,
        (None, None) => base,
    };
    let graded = Graded { fail_to_pass: task.fail_to_pass.clone(), pass_to_pass: task.pass_to_pass.clone() };
    let tester = super::jailed::Jailed {
        check,
        policy,
        env: c.env.clone(),
        cancel: c.cancel.clone(),
        report_dir: place.join("grading"),
        setup,
        spent_ms: Default::default(),
    };
    // Graded in a tree hone makes from the agent's commit's objects alone: nothing the agent's
    // commands left in its own tree (a link, a planted file, a process's output) is read.
    let graded_at = super::isolate::task_repo(&root, after, &place.join("graded"))?;
    let outcomes = {
        use super::validate::Tester;
        let tests = held_out_tests(&graded_at, base, &task.test_patch)?;
        tester.outcomes(&tester.open(&graded_at, &tests).await?).await?
    };
    out.verdict = if resolved(&graded, &outcomes) { Verdict::Resolved } else { Verdict::Unresolved };
    Ok(())
}

/// The held-out test change put in the tree at `root`, over the tests as they were at the start:
/// whatever the agent did to the files the change touches is undone first (as SWE-bench's
/// harness does), so the agent is graded by the tests it was set, not by its edits of them. The
/// paths the change touches.
fn held_out_tests(root: &Path, base: git2::Oid, test_patch: &str) -> Result<Vec<String>, HoneError> {
    let repo = git2::Repository::open(root)?;
    let patch = git2::Diff::from_buffer(test_patch.as_bytes())?;
    let paths = super::select::touched(&patch);
    let start = repo.find_commit(base)?.tree()?;
    super::validate::put(&repo, &start, root, &paths)?;
    repo.apply(&patch, git2::ApplyLocation::WorkDir, None).map_err(|e| {
        HoneError::new(Code::Conflict, format!("the task's test change does not apply at its start: {}", e.message()))
    })?;
    Ok(paths)
}
