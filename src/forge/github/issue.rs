//! One issue of the repository, as GitHub's REST API gives it (`GET /repos/{owner}/{repo}/issues/{n}`:
//! its `title` and `body`).

use crate::error::{Code, HoneError, Result};
use crate::forge::issue::{Issue, from_answer};
use crate::forge::place::Place;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio::time::Instant;

pub async fn read(place: &Place, number: u64, queue: Arc<Mutex<Option<Instant>>>) -> Result<Option<Issue>> {
    let token = place.token.as_ref().ok_or_else(|| {
        let var = place.token_source(None);
        HoneError::new(Code::Forge, format!("{var} is not set: no token to read the repository's issues"))
            .hint(format!("set {var} to a token that may read the repository's issues"))
    })?;
    let (owner, repo) = place.repo.as_deref().and_then(|r| r.split_once('/')).unwrap_or(("", ""));
    let gh = super::GitHub::new(place.api()?, token.secret(), owner, repo, queue)?;
    let r = gh.get(&gh.repo_path(&format!("/issues/{number}"))).await?;
    from_answer(place.forge_name(), number, r.status, &r.body, "body")
}
