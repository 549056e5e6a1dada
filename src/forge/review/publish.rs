//! Publishing a planned review on the place's forge, dispatched to `<forge>/review.rs` (kept
//! apart from the plan's types, which the forges' files import).

/// Publish the review on the place's forge (`<forge>/review.rs`), bounded by the run.
pub async fn publish(
    place: &crate::forge::place::Place,
    token: &crate::forge::credential::Token,
    ws: &crate::git::Workspace,
    input: &super::Input<'_>,
    shared: &crate::forge::Shared,
    bound: &crate::bound::Bound,
) -> crate::error::Result<super::ReviewReport> {
    use crate::error::{Code, HoneError};
    match place.kind {
        crate::forge::Kind::Github => {
            let (owner, repo) = place.repo.as_deref().and_then(|r| r.split_once('/')).ok_or_else(|| {
                HoneError::new(Code::Forge, "cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo")
            })?;
            let gh =
                crate::forge::github::GitHub::new(place.api()?, token.secret(), owner, repo, shared.queue.clone())?;
            crate::forge::github::review::publish(&gh, ws, input).await
        }
        crate::forge::Kind::Gitlab => {
            let gl = crate::forge::gitlab::GitLab::new(place, shared.queue.clone(), bound)?;
            crate::forge::gitlab::review::publish(&gl, ws, input).await
        }
        crate::forge::Kind::Forgejo => Err(HoneError::new(Code::Forge, "review mode does not publish on Forgejo yet")),
    }
}
