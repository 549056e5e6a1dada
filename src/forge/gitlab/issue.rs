//! One issue of the project, as GitLab's REST API gives it (`GET /projects/:id/issues/:issue_iid`:
//! its `title` and `description`).

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
    let gl = super::GitLab::new(place, queue, bound)?;
    let r = gl.get(&gl.project_path(&format!("/issues/{number}"))).await?;
    from_answer(place.forge_name(), number, r.status, &r.body, "description")
}
