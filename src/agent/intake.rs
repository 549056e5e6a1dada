//! Intake: load and check the spec and the policy, build the model client, open the repo, and
//! set up the sandbox. Everything here is an input problem (exit 2) when it fails.

use super::{Invalid, RunOptions, setup};
use crate::events::Events;
use crate::git::Workspace;
use crate::model::Model;
use crate::policy::{self, Policy};
use crate::redact::Redactor;
use crate::sandbox::{self, Sandbox, SandboxReport};
use crate::spec::{self, Job};
use std::path::{Path, PathBuf};

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
    pub report_dir: PathBuf,
    pub events: Events,
}

/// Load the policy the job names (or the built-in one), with the verify commands allowed.
pub fn load_policy(job: &Job) -> Result<Policy, Invalid> {
    let mut p = match &job.policy {
        Some(path) => policy::load(path)
            .map_err(|d| Invalid(d.iter().map(|d| d.render("E_POLICY")).collect::<Vec<_>>().join("\n")))?,
        None => Policy::builtin(),
    };
    p.allow_verify(&job.verify.iter().map(|v| (v.name.clone(), v.run.clone())).collect::<Vec<_>>());
    Ok(p)
}

pub async fn prepare(opts: &mut RunOptions) -> Result<Prepared, Invalid> {
    let mut job = spec::load(&opts.spec).map_err(|e| Invalid(e.render()))?;
    if let Some(r) = opts.repo.take() {
        job.repo.path = r;
    }
    if let Some(d) = opts.report_dir.take() {
        job.report_dir = d;
    }
    if let Some(t) = opts.task.take().filter(|t| !t.trim().is_empty()) {
        job.task = t;
    }
    if let Some(m) = opts.model.take().filter(|m| !m.trim().is_empty()) {
        job.model.name = m;
    }
    if let Some(n) = opts.pr.take() {
        job.pr.number = Some(n);
    }
    if let Some(b) = opts.base.take() {
        job.repo.base = Some(b);
    }
    let mut policy = load_policy(&job)?;
    let redactor = opts.redactor.clone();
    setup::collect_secrets(&redactor, &job);
    setup::policy_secrets(&redactor, &policy);
    let model = setup::model(&job).map_err(Invalid)?;
    if job.repo.scratch {
        let dest = job.spec_path.parent().unwrap_or(Path::new(".")).join(".hone/scratch").join(&job.name);
        crate::git::init_scratch(&job.repo.path, &dest).map_err(|e| Invalid(e.render()))?;
        job.repo.path = dest;
    }
    let ws = Workspace::open(&job.repo.path, std::slice::from_ref(&job.report_dir)).map_err(|e| Invalid(e.render()))?;
    // The model may not edit its own instructions.
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
    if !job.repo.allow_dirty {
        let dirty = ws.dirty_paths().map_err(|e| Invalid(e.render()))?;
        if !dirty.is_empty() {
            let list: Vec<_> = dirty.iter().take(10).map(|p| format!("    {p}")).collect();
            return Err(Invalid(format!(
                "error[E_GIT]: the work tree at {} has uncommitted changes:\n{}\n  = help: commit or stash them first, or set `repo.allow_dirty: true` to start anyway",
                ws.root().display(),
                list.join("\n")
            )));
        }
    }
    let (sandbox, sandbox_report) = build_sandbox(&policy, ws.root()).await?;
    std::fs::create_dir_all(&job.report_dir)
        .map_err(|e| Invalid(format!("error[E_IO]: cannot create the report dir {}: {e}", job.report_dir.display())))?;
    let report_dir = job.report_dir.canonicalize().unwrap_or_else(|_| job.report_dir.clone());
    let events = Events::new(uuid::Uuid::new_v4().to_string(), redactor.clone(), opts.json_out.take())
        .with_repo(opts.event_repo.take());
    events.open_file(&report_dir.join("events.jsonl")).map_err(|e| {
        Invalid(format!("error[E_IO]: cannot write {}: {e}", report_dir.join("events.jsonl").display()))
    })?;
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
        autofix: None,
        skip: None,
        github_repo: opts.github_repo.take(),
    };
    autofix(&mut prepared).await?;
    Ok(prepared)
}

/// Autofix mode: find the PR, apply the fork and loop guards, and point the run at its head.
async fn autofix(p: &mut Prepared) -> Result<(), Invalid> {
    use crate::forge::{autofix, github, push};
    let in_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    let Some(number) = p.job.pr.number.or_else(|| if in_actions { autofix::number_from_event() } else { None }) else {
        return Ok(());
    };
    let fail = |m: String| Invalid(format!("error[E_FORGE]: autofix of PR #{number}: {m}"));
    let token = std::env::var(&p.job.git.token_env)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| fail(format!("`{}` is not set; autofix needs a token", p.job.git.token_env)))?;
    let url = push::remote_url(p.ws.root(), &p.job.git.remote);
    let env_repo = p.github_repo.clone().or_else(|| std::env::var("GITHUB_REPOSITORY").ok());
    let (owner, repo) = github::owner_repo(env_repo.as_deref(), url.as_deref())
        .ok_or_else(|| fail("cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo".into()))?;
    let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
    let gh = github::GitHub::new(&api, &token, &owner, &repo).map_err(|e| fail(e.message))?;
    let target = match autofix::inspect(&gh, number, p.job.pr.allow_forks).await.map_err(|e| fail(e.message))? {
        autofix::Decision::Skip(reason) => {
            p.skip = Some(reason);
            return Ok(());
        }
        autofix::Decision::Fix(t) => t,
    };
    let fetched = push::fetch(p.ws.root(), &p.job.git.remote, &target.head_ref, "refs/hone/autofix/head", Some(&token))
        .map_err(|e| fail(e.message))?;
    if fetched != target.head_sha {
        return Err(fail(format!("the remote branch is at {fetched}, but the PR says {}; try again", target.head_sha)));
    }
    let message = p.ws.commit_message(&fetched).map_err(|e| fail(e.message))?;
    if autofix::made_by_hone(&message, &p.job.name) {
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

/// Decide the confinement: no network unless the policy allows it (failing when the machine
/// cannot isolate), and Landlock write limits where the kernel has them.
async fn build_sandbox(policy: &Policy, root: &Path) -> Result<(Sandbox, SandboxReport), Invalid> {
    if !policy.sandbox {
        tracing::warn!("the policy turns the sandbox off: commands run with the host's network and file access");
        return Ok((Sandbox::default(), SandboxReport::default()));
    }
    let isolate = !policy.network;
    if isolate && let Err(e) = sandbox::probe_netns().await {
        return Err(Invalid(format!(
            "error[E_POLICY]: the policy says `network: false`, but this machine cannot run commands without network: {e}\n  = help: allow unprivileged user namespaces (or run as root), set `network: true`, or set `sandbox: off` in the policy to run unconfined on purpose"
        )));
    }
    let abi = sandbox::landlock_abi();
    let mut writable: Vec<PathBuf> = vec![root.to_path_buf(), "/tmp".into(), "/var/tmp".into(), "/dev".into()];
    if let Some(t) = std::env::var_os("TMPDIR") {
        writable.push(PathBuf::from(t));
    }
    writable.extend(policy.sandbox_writable.iter().cloned());
    let report = SandboxReport {
        enabled: true,
        network_isolated: isolate,
        landlock_abi: (abi > 0).then_some(abi),
        writable: if abi > 0 { writable.iter().map(|p| p.display().to_string()).collect() } else { vec![] },
    };
    if abi == 0 {
        tracing::warn!("Landlock is not available on this kernel: command writes are not confined to the repo");
    }
    // One namespace for the whole run; per-command namespaces if it cannot be made.
    let netns = if isolate { sandbox::shared_netns().await.ok().map(std::sync::Arc::new) } else { None };
    Ok((Sandbox { isolate_network: isolate, writable: (abi > 0).then_some(writable), netns }, report))
}
