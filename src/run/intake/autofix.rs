//! Autofix mode: find the PR to fix in place, apply the fork and loop guards, and point the run at
//! the PR's head.

use super::super::handoff::Work;
use super::super::request::Request;
use crate::error::{Code, HoneError};
use crate::git::Workspace;
use crate::spec::Job;

type Bounds<'a> = (tokio::time::Instant, &'a tokio_util::sync::CancellationToken);

/// Autofix mode: find the PR, apply the fork and loop guards, and point the run at its head.
pub async fn decide(
    job: &mut Job,
    ws: &Workspace,
    req: &Request,
    (deadline, cancel): Bounds<'_>,
) -> Result<Work, HoneError> {
    use crate::forge::{app, autofix, github, remote};
    let url = ws.remote_url(&job.git.remote);
    let env_repo = req.github_repo.clone().or_else(|| req.env.github_repository.clone());
    let named = github::owner_repo(env_repo.as_deref(), url.as_deref());
    let (env, shared, redactor) = (req.env.as_ref(), &req.shared, &req.redactor);
    let cx = app::Context { env, shared, redactor, deadline, cancel };
    // A GitHub App's token is minted here, at intake, and its bot made the author (`forge::app`).
    if !req.dry_run {
        app::prepare(&cx, job, named.clone(), url.as_deref()).await?;
    }
    let from_event = || if req.env.actions { autofix::number_from_event(&req.env) } else { None };
    let Some(number) = job.pr.number.or_else(from_event) else {
        return Ok(Work::Do(None));
    };
    let fail = |m: String| HoneError::new(Code::Forge, format!("autofix of PR #{number}: {m}"));
    let (owner, repo) =
        named.ok_or_else(|| fail("cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo".into()))?;
    let token = app::github_token(&cx, job, &owner, &repo)
        .await
        .map_err(|mut e| {
            e.message = format!("autofix of PR #{number}: {}", e.message);
            e
        })?
        .ok_or_else(|| fail(format!("`{}` is not set; autofix needs a token", job.git.token_env)))?;
    let gh = github::GitHub::new(&req.env.github_api_url, &token, &owner, &repo, req.shared.github_queue.clone())
        .map_err(|e| fail(e.message))?;
    let target = match autofix::inspect(&gh, number, job.pr.allow_forks).await.map_err(|e| fail(e.message))? {
        autofix::Decision::Skip(reason) => return Ok(Work::Skip(reason)),
        autofix::Decision::Fix(t) => t,
    };
    // git reads the token from `token_env`: there, the one this run uses (an App's).
    let env = req.env.with_var(&job.git.token_env, &token);
    let remote = remote::Remote::open(ws, &job.git.remote, &env, &job.git.token_env, (deadline, cancel))
        .map_err(|e| fail(e.message))?;
    let fetched = remote.fetch(ws, &target.head_ref, "refs/hone/autofix/head").await.map_err(|e| fail(e.message))?;
    if fetched != target.head_sha {
        return Err(fail(format!("the remote branch is at {fetched}, but the PR says {}; try again", target.head_sha)));
    }
    let message = ws.commit_message(&fetched).map_err(|e| fail(e.message))?;
    let by = autofix::made_by(&remote, &fetched).map_err(|e| fail(e.message))?;
    if autofix::made_by_hone(&message, &by, job) {
        return Ok(Work::Skip(format!(
            "the head commit of PR #{number} was made by hone (trailer `Hone-Job: {}`): nothing to do until someone else pushes",
            job.name
        )));
    }
    job.repo.base = Some(fetched);
    job.git.branch = target.head_ref.clone();
    Ok(Work::Do(Some(target)))
}
