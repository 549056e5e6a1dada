//! Autofix mode: find the PR to fix in place, apply the fork and loop guards, and point the run at
//! the PR's head.

use super::super::handoff::Work;
use super::super::request::Request;
use crate::error::{Code, HoneError};
use crate::git::Workspace;
use crate::spec::Job;

type Bounds<'a> = (tokio::time::Instant, &'a tokio_util::sync::CancellationToken);

/// The merge request a GitLab merge request pipeline runs for (`CI_MERGE_REQUEST_IID`).
fn number_from_gitlab_ci(env: &crate::env::RunEnv) -> Option<u64> {
    crate::forge::place::in_gitlab_ci(env).then(|| env.var("CI_MERGE_REQUEST_IID")?.parse().ok()).flatten()
}

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
    if place.kind == crate::spec::forge::ForgeKind::Github && place.token.is_some() {
        place.api.as_ref().map_err(|e| e.error())?;
    }
    Ok((place, url))
}

/// Autofix mode: find the PR, apply the fork and loop guards, and point the run at its head.
pub async fn decide(
    job: &mut Job,
    ws: &Workspace,
    req: &Request,
    (deadline, cancel): Bounds<'_>,
) -> Result<Work, HoneError> {
    use crate::forge::{app, autofix, remote};
    use crate::spec::forge::ForgeKind;
    let (mut place, url) = place_of(job, ws, req)?;
    // A GitHub App's token is minted here, at intake, and its bot made the author (`forge::app`).
    let (env, shared, redactor) = (req.env.as_ref(), &req.shared, &req.redactor);
    let cx = app::Context { env, shared, redactor, deadline, cancel };
    if !req.dry_run && place.kind == ForgeKind::Github {
        // An App's JWT and token go only to the server the repository is on.
        if app::configured(env) {
            place.api()?;
        }
        // Only a repository hone trusts gets an App token (`Place::repo_trusted`).
        let trusted = place.repo.as_deref().filter(|_| place.repo_trusted);
        let named = trusted.and_then(|r| r.split_once('/')).map(|(o, r)| (o.to_string(), r.to_string()));
        app::prepare(&cx, job, named, url.as_deref()).await?;
    }
    // The event's (or pipeline's) PR is this repository's only when the environment describes
    // it: never for a fleet's targets.
    let from_env = || match place.kind {
        _ if !req.env_repo => None,
        ForgeKind::Github if req.env.actions => autofix::number_from_event(&req.env),
        ForgeKind::Gitlab => number_from_gitlab_ci(&req.env),
        ForgeKind::Github => None,
    };
    let review = job.change == crate::spec::answer::Change::Review;
    let Some(number) = job.pr.number.or_else(from_env) else {
        if review {
            return Err(HoneError::new(Code::Spec, "review mode (`change: review`, `--review`) needs a pull request")
                .hint("pass `--pr N`, set `pr.number`, or run it for a pull request event"));
        }
        return Ok(Work::Do(None));
    };
    let what =
        if place.kind == ForgeKind::Gitlab { format!("merge request !{number}") } else { format!("PR #{number}") };
    let fail = |m: String| HoneError::new(Code::Forge, format!("autofix of {what}: {m}"));
    app::into_place(&cx, job, &mut place).await.map_err(|mut e| {
        e.message = format!("autofix of {what}: {}", e.message);
        e
    })?;
    let queue = req.shared.forge_queue.clone();
    let decision = inspect(&place, number, (job, review), queue, (deadline, cancel)).await;
    let mut target = match decision.map_err(|e| fail(e.message))? {
        autofix::Decision::Skip(reason) => return Ok(Work::Skip(reason)),
        autofix::Decision::Fix(t) => t,
    };
    let remote =
        remote::Remote::open(ws, &job.git.remote, &req.env, &place, (deadline, cancel)).map_err(|e| fail(e.message))?;
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
    base: Result<String, String>,
) -> Result<String, String> {
    let sha = base?;
    let present = git2::Oid::from_str(&sha).is_ok_and(|oid| ws.repository().find_commit(oid).is_ok());
    if present {
        return Ok(sha);
    }
    match remote.fetch(ws, &sha, "refs/hone/autofix/base").await {
        Ok(got) if got == sha => Ok(sha),
        Ok(got) => Err(format!("fetching the pull request's base commit {sha} gave {got}")),
        Err(e) => Err(format!("the pull request's base commit {sha} could not be fetched: {}", e.message)),
    }
}

/// The ref the PR's head is fetched from. Review mode reads the base repository's own ref for
/// the PR, which a fork's PR has too; autofix pushes back, so it reads the branch it pushes to.
fn source_ref(review: bool, kind: crate::spec::forge::ForgeKind, t: &crate::forge::autofix::Target) -> String {
    use crate::spec::forge::ForgeKind;
    match (review, kind) {
        (true, ForgeKind::Github) => format!("refs/pull/{}/head", t.number),
        (true, ForgeKind::Gitlab) => format!("refs/merge-requests/{}/head", t.number),
        (false, _) => format!("refs/heads/{}", t.head_ref),
    }
}

/// Read the PR (merge request) on the place's forge and decide whether hone may fix it.
async fn inspect(
    place: &crate::forge::place::Place,
    number: u64,
    (job, review): (&Job, bool),
    queue: std::sync::Arc<tokio::sync::Mutex<Option<tokio::time::Instant>>>,
    bounds: Bounds<'_>,
) -> Result<crate::forge::autofix::Decision, HoneError> {
    use crate::forge::{autofix, github, gitlab};
    let Some(token) = place.token.clone() else {
        let var = place.token_source(job.git.token_env.as_deref());
        return Err(HoneError::new(Code::Forge, format!("{var} is not set; autofix needs a token")));
    };
    // Reviewers' feedback is for hone's memory, which a review of someone else's PR never writes.
    let remember = !review && job.memory.enabled;
    let (deadline, cancel) = bounds;
    let within = |f| async move {
        tokio::select! {
            r = tokio::time::timeout_at(deadline, f) => r.unwrap_or_else(|_| Err(HoneError::new(Code::Budget, "the wall-time budget ran out"))),
            () = cancel.cancelled() => Err(HoneError::new(Code::Cancelled, "cancelled")),
        }
    };
    let (mut decision, feedback) = match place.kind {
        crate::spec::forge::ForgeKind::Github => {
            let (owner, repo) = place.repo.as_deref().and_then(|r| r.split_once('/')).ok_or_else(|| {
                HoneError::new(Code::Forge, "cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo")
            })?;
            let gh = github::GitHub::new(place.api()?, token.secret(), owner, repo, queue)?;
            // Review mode pushes nothing, so a fork's PR is as good as any.
            let decision = autofix::inspect(&gh, number, job.pr.allow_forks || review).await?;
            let fixing = matches!(decision, autofix::Decision::Fix(_)) && remember;
            // A GitHub App's bot login is known without asking `/user`.
            let own = place.login.as_deref();
            let feedback =
                if fixing { Some(within(crate::forge::feedback::github(&gh, number, own)).await) } else { None };
            (decision, feedback)
        }
        crate::spec::forge::ForgeKind::Gitlab => {
            let gl = gitlab::GitLab::new(place, queue, bounds)?;
            let decision = gitlab::autofix::inspect(&gl, number, review).await?;
            let fixing = matches!(decision, autofix::Decision::Fix(_)) && remember;
            let feedback = if fixing { Some(gitlab::feedback::gitlab(&gl, number, None).await) } else { None };
            (decision, feedback)
        }
    };
    if let (autofix::Decision::Fix(t), Some(read)) = (&mut decision, feedback) {
        match read {
            Ok(items) => t.feedback = items,
            Err(e) => {
                t.feedback_unread = Some(format!("reviewers' feedback on the PR was not read: {}", e.headline(200)))
            }
        }
    }
    Ok(decision)
}
