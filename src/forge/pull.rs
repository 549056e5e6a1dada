//! The pull request a run works on in place (autofix, review): which one the environment's CI
//! names, and reading it on the place's forge, dispatched to `<forge>/autofix.rs`. The shared
//! shape (`Target`, `Decision`, the loop guard) is `autofix.rs`, which no forge's file reaches
//! back from.

use crate::error::{Code, HoneError, Result};
use crate::forge::autofix::{Ask, Decision};
use crate::forge::{Kind, forgejo, github, gitlab};

/// The PR the environment's CI runs for, when it describes one: the Actions event's pull
/// request (GitHub Actions, Forgejo Actions) or GitLab's merge request pipeline.
pub fn number_from_env(kind: Kind, env: &crate::env::RunEnv) -> Option<u64> {
    match kind {
        Kind::Github | Kind::Forgejo if env.actions => crate::forge::autofix::number_from_event(env),
        Kind::Gitlab => gitlab::autofix::number_from_ci(env),
        Kind::Github | Kind::Forgejo => None,
    }
}

/// Read PR `number` on the place's forge and decide whether hone may fix it; with the job's
/// memory on, read the trusted reviewers' feedback on it too (what cannot be read is said in
/// the target, and the run goes on without it).
pub async fn inspect(place: &crate::forge::place::Place, number: u64, ask: &Ask<'_>) -> Result<Decision> {
    let (job, review) = (ask.job, ask.review);
    let Some(token) = place.token.clone() else {
        let var = place.token_source(job.git.token_env.as_deref());
        return Err(HoneError::new(Code::Forge, format!("{var} is not set; autofix needs a token")));
    };
    // Reviewers' feedback is for hone's memory, which a review of someone else's PR never writes.
    let remember = !review && job.memory.enabled;
    let (mut decision, feedback) = match place.kind {
        Kind::Github => github::autofix::read(place, &token, number, ask, remember).await?,
        Kind::Gitlab => gitlab::autofix::read(place, number, ask, remember).await?,
        Kind::Forgejo => forgejo::autofix::read(place, number, ask, remember).await?,
    };
    if let (Decision::Fix(t), Some(read)) = (&mut decision, feedback) {
        match read {
            Ok(items) => t.feedback = items,
            Err(e) => {
                t.feedback_unread = Some(format!("reviewers' feedback on the PR was not read: {}", e.headline(200)))
            }
        }
    }
    Ok(decision)
}
