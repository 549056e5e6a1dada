//! Review feedback on a pull request hone made on Forgejo, from users with write access to the
//! repository, as typed and bounded data for hone's memory: the PR's reviews (one page) and its
//! comments, newest first, never hone's own (by hone's user, or under another's with hone's
//! marker first), each author's permission looked up once (at most `MAX_LOOKUPS` authors), the
//! bounds of `forge::feedback`.

use super::{Forgejo, encode, pr::check};
use crate::error::{Code, HoneError, Result};
use crate::forge::feedback::{Feedback, MAX_ITEMS, MAX_LOGIN, bounded, newest, stamp, text_of, time_of};
use serde_json::Value;
use std::collections::HashMap;
use time::OffsetDateTime;

/// The most distinct authors whose permission is looked up; later authors' words are left out.
pub const MAX_LOOKUPS: usize = 10;
/// One page of reviews, Forgejo's default most.
const PER_PAGE: usize = 50;

/// The feedback on PR `number` from users with write access, newest first, at most
/// `MAX_ITEMS`. `own_user`: the id of the user hone writes as (looked up with `GET /user` when
/// `None`). A refusal is an error: the caller decides.
pub async fn forgejo(fj: &Forgejo, number: u64, own_user: Option<u64>) -> Result<Vec<Feedback>> {
    let own = match own_user {
        Some(id) => id,
        None => super::whoami(fj).await?.0,
    };
    let reviews = list(fj, &format!("/pulls/{number}/reviews?limit={PER_PAGE}&page=1"), number, "reviews").await?;
    let comments = list(fj, &format!("/issues/{number}/comments"), number, "comments").await?;
    let found = reviews.iter().filter_map(|r| review(r, number, own));
    let mut candidates: Vec<_> = found.chain(comments.iter().filter_map(|c| comment(c, number, own))).collect();
    candidates.sort_by_key(|(_, (at, _))| std::cmp::Reverse(*at));
    let mut writers = Writers::default();
    let mut kept = Vec::new();
    for (login, item) in candidates {
        if kept.len() >= MAX_ITEMS {
            break;
        }
        if writers.may_write(fj, &login).await? {
            kept.push(item);
        }
    }
    Ok(newest(kept))
}

async fn list(fj: &Forgejo, rest: &str, number: u64, what: &str) -> Result<Vec<Value>> {
    let a = fj.get(&fj.repo_path(rest)).await?;
    check(&a, || format!("reading the {what} of PR #{number}"))?;
    match a.body {
        Value::Array(items) => Ok(items),
        _ => Err(HoneError::new(
            Code::Forge,
            format!("reading the {what} of PR #{number}: Forgejo's answer is not a list"),
        )
        .hint("check `forge.url`: it should be the Forgejo server's address")),
    }
}

type Candidate = (String, (OffsetDateTime, Feedback));

/// The author's login when it is a person other than `own` (by id), bounded, a plain name.
fn author(v: &Value, own: u64) -> Option<String> {
    let id = v["user"]["id"].as_u64().filter(|id| *id != own)?;
    let login = v["user"]["login"].as_str().filter(|l| super::is_name(l))?;
    (id > 0).then(|| bounded(login, MAX_LOGIN))
}

/// A review that says something: changes requested, or a comment or approval with a body.
pub fn review(r: &Value, pr: u64, own: u64) -> Option<Candidate> {
    let reviewer = author(r, own)?;
    let body = text_of(r["body"].as_str())?;
    let state = match r["state"].as_str()? {
        "REQUEST_CHANGES" => "CHANGES_REQUESTED",
        "COMMENT" if !body.is_empty() => "COMMENTED",
        "APPROVED" if !body.is_empty() => "APPROVED",
        _ => return None,
    };
    if r["dismissed"] == true {
        return None;
    }
    let at = time_of(&r["submitted_at"])?;
    let f = Feedback { pr, reviewer: reviewer.clone(), state: state.into(), body, path: None, at: stamp(at) };
    Some((reviewer, (at, f)))
}

/// A comment on the PR with a body.
pub fn comment(c: &Value, pr: u64, own: u64) -> Option<Candidate> {
    let reviewer = author(c, own)?;
    let body = text_of(c["body"].as_str()).filter(|b| !b.is_empty())?;
    let at = time_of(&c["created_at"])?;
    let f = Feedback { pr, reviewer: reviewer.clone(), state: "COMMENTED".into(), body, path: None, at: stamp(at) };
    Some((reviewer, (at, f)))
}

/// Whether users may write to the repository, each looked up once.
#[derive(Default)]
struct Writers {
    known: HashMap<String, bool>,
}

impl Writers {
    /// Whether `login` has write, admin or owner permission on the repository; a user past the
    /// first `MAX_LOOKUPS` is not looked up and does not count.
    async fn may_write(&mut self, fj: &Forgejo, login: &str) -> Result<bool> {
        if let Some(known) = self.known.get(login) {
            return Ok(*known);
        }
        if self.known.len() >= MAX_LOOKUPS {
            return Ok(false);
        }
        let a = fj.get(&fj.repo_path(&format!("/collaborators/{}/permission", encode(login)))).await?;
        let writes = match a.status {
            403 | 404 => false,
            _ => {
                check(&a, || format!("looking up the permission of `{login}` on `{}`", fj.repo))?;
                matches!(a.body["permission"].as_str(), Some("write" | "admin" | "owner"))
            }
        };
        self.known.insert(login.to_string(), writes);
        Ok(writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reviews_and_comments_are_feedback_unless_hones_or_empty() {
        let r = |id: u64, state: &str, body: &str| json!({"user": {"id": id, "login": format!("u{id}")}, "state": state, "body": body, "submitted_at": "2026-01-02T03:04:05Z"});
        let (who, (_, f)) = review(&r(3, "REQUEST_CHANGES", ""), 7, 5).unwrap();
        assert_eq!((who.as_str(), f.state.as_str(), f.pr), ("u3", "CHANGES_REQUESTED", 7));
        assert!(review(&r(5, "REQUEST_CHANGES", "x"), 7, 5).is_none(), "hone's own");
        assert!(review(&r(3, "APPROVED", ""), 7, 5).is_none(), "an empty approval says nothing");
        assert!(review(&r(3, "PENDING", "draft"), 7, 5).is_none());
        assert!(review(&r(3, "COMMENT", "<!-- hone:autofix job=x -->\nmine"), 7, 5).is_none(), "hone's marker");
        let mut dismissed = r(3, "REQUEST_CHANGES", "no");
        dismissed["dismissed"] = json!(true);
        assert!(review(&dismissed, 7, 5).is_none());
        let c = json!({"user": {"id": 3, "login": "dev"}, "body": "please\nrename", "created_at": "2026-01-02T03:04:05+02:00"});
        let (_, (_, f)) = comment(&c, 7, 5).unwrap();
        assert_eq!((f.body.as_str(), f.at.as_str()), ("please rename", "2026-01-02T01:04:05Z"));
        let hostile = json!({"user": {"id": 3, "login": "../x"}, "body": "b", "created_at": "2026-01-02T03:04:05Z"});
        assert!(comment(&hostile, 7, 5).is_none(), "a login that is no name is never looked up");
    }
}
