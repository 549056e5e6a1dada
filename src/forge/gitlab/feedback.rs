//! Review feedback on a merge request hone made, from project members with at least the
//! Developer role, as typed and bounded data for hone's memory: one page of the merge request's
//! notes, newest first, without system notes, internal notes or hone's own (by hone's user, or
//! under another's with hone's marker first), each author's role
//! looked up once (at most `MAX_LOOKUPS` authors), the bounds of `forge::feedback`.

use super::{GitLab, pr::check};
use crate::error::{Code, HoneError, Result};
use crate::forge::feedback::{Feedback, MAX_ITEMS, MAX_LOGIN, MAX_PATH, bounded, newest, stamp, text_of, time_of};
use serde_json::Value;
use std::collections::HashMap;
use time::OffsetDateTime;

/// GitLab's Developer role: the least access whose notes count as feedback.
pub const DEVELOPER: u64 = 30;
/// The most distinct authors whose role is looked up; later authors' notes are left out.
pub const MAX_LOOKUPS: usize = 10;
/// One page of notes, the most the API gives.
const PER_PAGE: usize = 100;

/// The feedback on merge request `iid` from members with the Developer role or above, newest
/// first, at most `MAX_ITEMS`. `own_user`: the id of the user hone writes as (looked up with
/// `GET /user` when `None`); its notes are never feedback. A refusal is an error: the caller
/// decides.
pub async fn gitlab(gl: &GitLab, iid: u64, own_user: Option<u64>) -> Result<Vec<Feedback>> {
    let own = match own_user {
        Some(id) => id,
        None => super::whoami(gl).await?,
    };
    let a = gl.get(&gl.project_path(&format!("/merge_requests/{iid}/notes?sort=desc&per_page={PER_PAGE}"))).await?;
    check(&a, || format!("reading the notes of merge request !{iid}"))?;
    let notes = a.body.as_array().ok_or_else(|| {
        HoneError::new(Code::Forge, format!("reading the notes of merge request !{iid}: GitLab's answer is not a list"))
            .hint("check `forge.url` (or CI_SERVER_URL): it should be the GitLab server's address")
    })?;
    let mut roles = Roles::default();
    let mut kept = Vec::new();
    for n in notes {
        if kept.len() >= MAX_ITEMS {
            break;
        }
        let Some((author, item)) = candidate(n, iid, own) else { continue };
        if roles.developer(gl, author).await? {
            kept.push(item);
        }
    }
    Ok(newest(kept))
}

/// A note that could be feedback, with its author's id: a note a person wrote (not a system
/// note, not internal), not by `own`, with a body and a time.
fn candidate(n: &Value, iid: u64, own: u64) -> Option<(u64, (OffsetDateTime, Feedback))> {
    let author = n["author"]["id"].as_u64().filter(|a| *a != own)?;
    let person = n["system"].as_bool() == Some(false);
    let internal = n["internal"].as_bool() == Some(true) || n["confidential"].as_bool() == Some(true);
    let reviewer = bounded(n["author"]["username"].as_str()?, MAX_LOGIN);
    let body = text_of(Some(n["body"].as_str()?))?;
    if !person || internal || reviewer.is_empty() || body.is_empty() {
        return None;
    }
    let at = time_of(&n["created_at"])?;
    let path = n["position"]["new_path"].as_str().map(|p| bounded(p, MAX_PATH)).filter(|p| !p.is_empty());
    let f = Feedback { pr: iid, reviewer, state: "COMMENTED".into(), body, path, at: stamp(at) };
    Some((author, (at, f)))
}

/// Whether users have the Developer role or above on the project, each looked up once.
#[derive(Default)]
struct Roles {
    known: HashMap<u64, bool>,
}

impl Roles {
    /// Whether `user` is a member (direct or inherited) with the Developer role or above; a user
    /// past the first `MAX_LOOKUPS` is not looked up and does not count.
    async fn developer(&mut self, gl: &GitLab, user: u64) -> Result<bool> {
        if let Some(known) = self.known.get(&user) {
            return Ok(*known);
        }
        if self.known.len() >= MAX_LOOKUPS {
            return Ok(false);
        }
        let a = gl.get(&gl.project_path(&format!("/members/all/{user}"))).await?;
        let developer = match a.status {
            404 => false,
            _ => {
                check(&a, || format!("looking up the role of user {user} on `{}`", gl.project))?;
                a.body["access_level"].as_u64().is_some_and(|level| level >= DEVELOPER)
            }
        };
        self.known.insert(user, developer);
        Ok(developer)
    }
}

#[cfg(test)]
#[path = "feedback_tests.rs"]
mod tests;
