//! Which token goes where, for every forge alike: the token the place was decided with, or,
//! where the forge has one configured, an App's token minted for the one repository (GitHub's
//! App, `github/app/`). The run and the fleet call these, never a forge's own.

use super::place::Place;
use super::{Kind, github};
use crate::error::Result;
use crate::spec::Job;

pub use github::app::Context;

/// Put the token the run uses on this place into it: an App's, minted for the repository, when
/// one is configured for the place's forge; else the place keeps its own.
pub async fn into_place(cx: &Context<'_>, job: &Job, place: &mut Place) -> Result<()> {
    match place.kind {
        Kind::Github => github::app::into_place(cx, job, place).await,
        Kind::Gitlab | Kind::Forgejo => Ok(()),
    }
}

/// Intake: with an App configured for the place's forge, mint the repository's token now (a
/// wrong key or a missing installation stops the run before the model spends anything) and make
/// the App's bot the author unless the job names one. Only a repository hone trusts (the
/// environment's, a fleet file's) gets an App token, and the App's requests go only to the
/// server the repository is on.
pub async fn prepare(cx: &Context<'_>, job: &mut Job, place: &Place, remote_url: Option<&str>) -> Result<()> {
    if place.kind != Kind::Github {
        return Ok(());
    }
    if github::app::configured(cx.env) {
        place.api()?;
    }
    let trusted = place.repo.as_deref().filter(|_| place.repo_trusted);
    let named = trusted.and_then(|r| r.split_once('/')).map(|(o, r)| (o.to_string(), r.to_string()));
    github::app::prepare(cx, job, named, remote_url).await
}

/// Whether an App, not a personal token, acts for the place's forge (listing, for one, needs a
/// user's token).
pub fn app_configured(kind: Kind, env: &crate::env::RunEnv) -> bool {
    kind == Kind::Github && github::app::configured(env)
}
