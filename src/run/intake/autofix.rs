//! Autofix mode: find the PR to fix in place, apply the fork and loop guards, and point the run at
//! the PR's head.

use super::super::handoff::Work;
use super::super::request::Request;
use crate::error::{Code, HoneError};
use crate::git::Workspace;
use crate::spec::Job;

/// Where the run's change goes, and the remote's URL it was decided from. A GitHub token whose
/// API is unknown (a server's token and github.com's API) stops the run here, before any work,
/// naming the variable to set; a repository on another host than that server is refused when
/// hone first asks the API (`Place::api`), so a push-only job there still runs.
fn place_of(
    job: &Job,
    ws: &Workspace,
    req: &Request,
) -> Result<(crate::forge::place::Place, Option<String>), HoneError> {
    use crate::forge::place;
    let url = ws.remote_url(&job.git.remote);
    let place = place::Place::decide(&place::Input {
        env: &req.env,
        spec: &job.forge,
        token_env: job.git.token_env.as_deref(),
        remote_url: url.as_deref(),
        env_repo: req.env_repo,
        remote_trusted: req.remote_trusted,
    });
    place.refuse_unknown_api()?;
    Ok((place, url))
}

/// Autofix mode: find the PR, apply the fork and loop guards, and point the run at its head.
pub async fn decide(
    job: &mut Job,
    ws: &Workspace,
    req: &Request,
    bound: &crate::bound::Bound,
) -> Result<Work, HoneError> {
    use crate::forge::{autofix, remote, tokens};
    let (mut place, url) = place_of(job, ws, req)?;
    // An App's token is minted here, at intake, and its bot made the author (`forge::tokens`).
    let (env, shared, redactor) = (req.env.as_ref(), &req.shared.forge, &req.redactor);
    let cx = tokens::Context { env, shared, redactor, bound };
    if !req.dry_run {
        tokens::prepare(&cx, job, &place, url.as_deref()).await?;
    }
    // The event's (or pipeline's) PR is this repository's only when the environment describes
    // it: never for a fleet's targets.
    let from_env = || crate::forge::pull::number_from_env(place.kind, &req.env).filter(|_| req.env_repo);
    let review = job.change == crate::spec::answer::Change::Review;
    let Some(number) = job.pr.number.or_else(from_env) else {
        if review {
            return Err(HoneError::new(Code::Spec, "review mode (`change: review`, `--review`) needs a pull request")
                .hint("pass `--pr N`, set `pr.number`, or run it for a pull request event"));
        }
        return Ok(Work::Do(None));
    };
    let what = place.kind.pr_name(number);
    let fail = |m: String| HoneError::new(Code::Forge, format!("autofix of {what}: {m}"));
    tokens::into_place(&cx, job, &mut place).await.map_err(|mut e| {
        e.message = format!("autofix of {what}: {}", e.message);
        e
    })?;
    let ask = autofix::Ask { job, review, shared, bound };
    let decision = crate::forge::pull::inspect(&place, number, &ask).await;
    let mut target = match decision.map_err(|e| fail(e.message))? {
        autofix::Decision::Skip(reason) => return Ok(Work::Skip(reason)),
        autofix::Decision::Fix(t) => t,
    };
    let remote = remote::Remote::open(ws, &job.git.remote, &req.env, &place, bound).map_err(|e| fail(e.message))?;
    let source = source_ref(review, place.kind, &target);
    let fetched = remote.fetch(ws, &source, "refs/hone/autofix/head").await.map_err(|e| fail(e.message))?;
    if fetched != target.head_sha {
        return Err(fail(format!("the remote branch is at {fetched}, but the PR says {}; try again", target.head_sha)));
    }
    let message = ws.commit_message(&fetched).map_err(|e| fail(e.message))?;
    let by = autofix::made_by(&remote, &fetched).map_err(|e| fail(e.message))?;
    if autofix::made_by_hone(&message, &by, job) {
        return Ok(Work::Skip(format!(
            "the head commit of {what} was made by hone (trailer `Hone-Job: {}`): nothing to do until someone else pushes",
            job.name
        )));
    }
    target.base_sha = fetch_base(ws, &remote, target.base_sha.clone()).await;
    job.repo.base = Some(fetched);
    if !review {
        // Review mode commits on the job's own local branch and pushes nothing.
        job.git.branch = target.head_ref.clone();
    }
    Ok(Work::Do(Some(target)))
}

/// The PR's base commit (`base`, as the forge named it) in the repository: the checkout's own
/// when it has it, else fetched from the remote by its id, as the head is. Where the instruction
/// files are read, so the PR's head is never a stand-in for it: `Err` says why there is none.
async fn fetch_base(
    ws: &Workspace,
    remote: &crate::forge::remote::Remote,
    base: Result<String, HoneError>,
) -> Result<String, HoneError> {
    let sha = base?;
    let present = git2::Oid::from_str(&sha).is_ok_and(|oid| ws.repository().find_commit(oid).is_ok());
    if present {
        return Ok(sha);
    }
    match remote.fetch(ws, &sha, "refs/hone/autofix/base").await {
        Ok(got) if got == sha => Ok(sha),
        Ok(got) => Err(HoneError::new(Code::Git, format!("fetching the pull request's base commit {sha} gave {got}"))),
        Err(e) => Err(HoneError::new(
            e.code,
            format!("the pull request's base commit {sha} could not be fetched: {}", e.message),
        )),
    }
}

/// The ref the PR's head is fetched from. Review mode reads the base repository's own ref for
/// the PR, which a fork's PR has too; autofix pushes back, so it reads the branch it pushes to.
fn source_ref(review: bool, kind: crate::forge::Kind, t: &crate::forge::autofix::Target) -> String {
    if review { kind.pr_head_ref(t.number) } else { format!("refs/heads/{}", t.head_ref) }
}
