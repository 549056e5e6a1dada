//! One issue of the repository, as Forgejo's (Gitea's) REST API gives it
//! (`GET /repos/{owner}/{repo}/issues/{index}`: its `title` and `body`; a pull request is an issue
//! there too).

use crate::bound::Bound;
use crate::error::Result;
use crate::forge::issue::{Issue, from_answer};
use crate::forge::place::Place;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio::time::Instant;

pub async fn read(
    place: &Place,
    number: u64,
    queue: Arc<Mutex<Option<Instant>>>,
    bound: &Bound,
) -> Result<Option<Issue>> {
    let fj = super::Forgejo::new(place, queue, bound)?;
    let r = fj.get(&fj.repo_path(&format!("/issues/{number}"))).await?;
    from_answer(place.forge_name(), number, r.status, &r.body, "body")
}
