//! A GitHub App as hone's identity on GitHub: `GITHUB_APP_ID` and the App's private key are
//! enough. hone signs the App's JWT, finds the installation for each repository (one per owner,
//! so a fleet across organisations works), mints a token for that one repository with the least
//! permissions the job needs, uses it for the API and for git (as `x-access-token`), mints a new
//! one five minutes before it expires, and registers every token with the redactor. Commits are
//! authored by the App's bot unless the job names an author. An App, configured explicitly,
//! wins over the token in `git.token_env`.
//!
//! The calls: [`prepare`] at intake (the token is minted there, so that a wrong key or a missing
//! installation stops the run before the model spends anything), [`github_token`] wherever a
//! GitHub token is used, [`into_place`] for a place (a fleet's clone, a push).

mod api;
mod cache;
mod config;
mod errors;
mod identity;
mod permissions;

pub use cache::Cache;
pub use config::{ID_VAR, configured};
pub use permissions::Permissions;

use crate::env::RunEnv;
use crate::error::{Code, HoneError, Result};
use crate::forge::Shared;
use crate::forge::{credential, github};
use crate::redact::Redactor;
use crate::spec::{Job, PrEnabled};

/// Where a token is asked for from: the run's environment, what the process's runs share (the
/// App's cache), the redactor every token goes to, and the caller's deadline and cancellation.
pub struct Context<'a> {
    pub env: &'a RunEnv,
    pub shared: &'a Shared,
    pub redactor: &'a Redactor,
    pub bound: &'a crate::bound::Bound,
}

/// The GitHub token for `owner/repo`: with an App configured (`GITHUB_APP_ID`), its
/// installation token for that repository, minted (or kept, while it has more than five minutes
/// to live) with the permissions `job` needs; else the token in `git.token_env`, if set.
pub async fn github_token(cx: &Context<'_>, job: &Job, owner: &str, repo: &str) -> Result<Option<String>> {
    if !configured(cx.env) {
        return Ok(cx.env.var(job.git.token_env.as_deref().unwrap_or("GITHUB_TOKEN")).map(str::to_string));
    }
    if !github::is_name(owner) || !github::is_name(repo) {
        return Err(HoneError::new(Code::Forge, format!("`{owner}/{repo}` is not a valid GitHub repository"))
            .hint("set GITHUB_REPOSITORY=owner/repo, or point the remote at the repository's GitHub URL"));
    }
    let p = Permissions::for_job(job, autofix(job, cx.env));
    cx.shared.app.token(cx, &p, owner, repo).await
}

/// With an App configured, give a GitHub `place` the App's token for its repository (a place
/// whose repository is unknown, or on GitLab, is left as it is: no token is minted for it).
pub async fn into_place(cx: &Context<'_>, job: &Job, place: &mut crate::forge::place::Place) -> Result<()> {
    if !configured(cx.env) || place.kind != crate::forge::Kind::Github {
        return Ok(());
    }
    // The checkout's remote URL is the repository side's to write: an App installed on many
    // owners mints only for a repository the environment or a fleet file names.
    if !place.repo_trusted {
        return Err(HoneError::new(
            Code::Spec,
            format!("a GitHub App is configured ({ID_VAR}), and hone takes the repository it mints a token for from GITHUB_REPOSITORY or a fleet file, never from the checkout's remote URL"),
        )
        .hint("set GITHUB_REPOSITORY=owner/repo"));
    }
    let Some((owner, repo)) =
        place.repo.clone().and_then(|r| r.split_once('/').map(|(o, r)| (o.to_string(), r.to_string())))
    else {
        return Ok(());
    };
    let token = github_token(cx, job, &owner, &repo).await?;
    // Autofix edits the comment its own login wrote: the App's bot, which an installation token
    // cannot read from `GET /user`.
    if let (Some(t), true) = (&token, autofix(job, cx.env)) {
        place.login = cx.shared.app.identity(cx, t).await?.map(|who| who.name);
    }
    let user = crate::forge::place::GITHUB_USER;
    place.token = token.map(|t| credential::Token::new(t, format!("the GitHub App's token ({ID_VAR})"), user));
    Ok(())
}

/// Intake, with an App configured and a run that will use GitHub (a PR, autofix, or a push to a
/// network remote): mint the repository's token now, so that a missing or wrong key, an App not
/// installed there, or a permission it lacks stops the run before the model spends anything;
/// and, unless the job names its own author, make the App's bot the author and committer.
/// `repo` is `owner/repo` as the run knows it; `remote_url` the URL of `git.remote`.
pub async fn prepare(
    cx: &Context<'_>,
    job: &mut Job,
    repo: Option<(String, String)>,
    remote_url: Option<&str>,
) -> Result<()> {
    if !configured(cx.env) {
        return Ok(());
    }
    let network =
        remote_url.is_some_and(|u| ["https://", "http://", "ssh://", "git@"].iter().any(|p| u.starts_with(p)));
    let used = autofix(job, cx.env) || job.pr.enabled != PrEnabled::No || (job.git.push && network);
    if !used {
        return Ok(());
    }
    let Some((owner, repo)) = repo else {
        return Err(HoneError::new(
            Code::Spec,
            format!("a GitHub App is configured ({ID_VAR}), but hone cannot tell which GitHub repository to get its token for"),
        )
        .hint("set GITHUB_REPOSITORY=owner/repo, or point the remote at the repository's GitHub URL"));
    };
    let token = github_token(cx, job, &owner, &repo).await?.unwrap_or_default();
    if identity::unnamed(job)
        && let Some(who) = cx.shared.app.identity(cx, &token).await?
    {
        identity::adopt(job, &who);
    }
    Ok(())
}

/// Whether the run fixes a PR in place (`--pr N`, `pr.number`, or the PR of the Actions event).
fn autofix(job: &Job, env: &RunEnv) -> bool {
    job.pr.number.is_some() || (env.actions && crate::forge::autofix::number_from_event(env).is_some())
}

/// A job from the spec lines `yaml` (after a minimal head), for the unit tests.
#[cfg(test)]
fn test_job(yaml: &str) -> Job {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("version: 1\nname: j\ntask: t\nmodel: {{ provider: openai, name: m }}\n{yaml}");
    std::fs::write(dir.path().join("j.yaml"), spec).unwrap();
    crate::spec::load(&dir.path().join("j.yaml")).unwrap()
}
