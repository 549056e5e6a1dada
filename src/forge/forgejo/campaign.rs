//! What `hone fleet prs` asks Forgejo about one pull request: who the token is, the PR (state,
//! author, head, base, mergeability in one answer), what decides its merge (`checks.rs`), its
//! own branch's commit; comment, close, delete its branch, merge it at the head hone pushed. Every
//! path is made from the fleet file's repository, fleet.json's PR number and the job's branch,
//! encoded; nothing in an answer names where the next request goes.

use super::{Answer, Forgejo, encode};
use crate::error::{Code, HoneError, Result};
use crate::forge::campaign::{Identities, Me, Merged, Pr, Seen, quote};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// One repository's client, counting the requests it makes.
pub struct Api<'a> {
    pub fj: Forgejo,
    pub sent: &'a AtomicU64,
    /// Each token's identity, asked once (`key` names this client's server and token).
    pub ids: &'a Identities,
    pub key: String,
}

/// A page of PRs, and the most pages read listing a branch's.
const PER_PAGE: usize = 50;
const PR_PAGES: u32 = 20;

fn failed(what: &str, a: &Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&a.message())))
}

impl Api<'_> {
    fn count(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// PR `n` alone.
    pub async fn pull(&self, n: u64) -> Result<Pr> {
        self.count(1);
        let a = self.fj.get(&self.fj.repo_path(&format!("/pulls/{n}"))).await?;
        if !a.ok() {
            return Err(failed(&format!("reading PR #{n}"), &a));
        }
        Ok(reading(&a.body))
    }

    /// PR `n` and, when open, what decides its merge (`checks.rs`).
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        let pr = self.pull(n).await?;
        let open = pr.state == "open" && !pr.merged;
        if open {
            self.count(3);
        }
        super::checks::observe(&self.fj, n, pr).await
    }

    /// The token's user (`GET /user`): its id decides whose PR it is.
    pub async fn me(&self) -> Result<Me> {
        self.ids
            .get(&self.key, async {
                self.count(1);
                let (id, login) = super::whoami(&self.fj).await?;
                Ok(Me { login, id: Some(id) })
            })
            .await
    }

    /// Every PR (open or not) whose head is `branch`, newest (highest number) first: Forgejo
    /// lists them all, 50 a page, and hone keeps those on the branch. More than `PR_PAGES` pages
    /// is an error, never decided on from part of the list.
    pub async fn campaign_prs(&self, branch: &str) -> Result<Vec<Pr>> {
        let mut all: Vec<(u64, Pr)> = Vec::new();
        for page in 1..=PR_PAGES + 1 {
            self.count(1);
            let a = self.fj.get(&self.fj.repo_path(&format!("/pulls?state=all&limit={PER_PAGE}&page={page}"))).await?;
            if !a.ok() {
                return Err(failed("listing the repository's pull requests", &a));
            }
            let items = a.body.as_array().cloned().unwrap_or_default();
            if page > PR_PAGES && !items.is_empty() {
                let many = PR_PAGES as usize * PER_PAGE;
                return Err(HoneError::new(
                    Code::Forge,
                    format!("listing the repository's pull requests failed: more than {many}"),
                ));
            }
            let on_branch = items.iter().filter(|b| b["head"]["ref"] == branch);
            all.extend(on_branch.filter_map(|b| Some((b["number"].as_u64()?, reading(b)))));
            if items.len() < PER_PAGE {
                break;
            }
        }
        all.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        Ok(all.into_iter().map(|(_, p)| p).collect())
    }

    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        self.count(1);
        branch_sha(&self.fj, branch).await
    }

    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        self.count(1);
        comment(&self.fj, n, body).await
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        self.count(1);
        close(&self.fj, n).await
    }

    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        self.count(1);
        delete_branch(&self.fj, branch).await
    }

    /// Merge at `sha` (`head_commit_id`) by `how`, never forced.
    pub async fn merge(&self, n: u64, sha: &str, how: &str) -> Result<Merged> {
        self.count(1);
        merge(&self.fj, n, sha, how).await
    }
}

/// What Forgejo's answer for a PR says. The draft is Forgejo's `draft`, or a `WIP:` title.
pub fn reading(b: &Value) -> Pr {
    let s = |v: &Value| v.as_str().unwrap_or("").chars().filter(|c| !c.is_control()).take(500).collect::<String>();
    let repo = |k: &str| b[k]["repo"]["full_name"].as_str().filter(|r| super::is_repo_path(r)).map(str::to_string);
    let title = s(&b["title"]).to_ascii_uppercase();
    let wip = ["WIP:", "[WIP]"].iter().any(|p| title.starts_with(p));
    Pr {
        url: s(&b["html_url"]),
        author: s(&b["user"]["login"]),
        author_id: b["user"]["id"].as_u64(),
        node_id: String::new(),
        state: if b["state"] == "open" { "open".into() } else { "closed".into() },
        merged: b["merged"].as_bool().unwrap_or(false),
        draft: b["draft"].as_bool().unwrap_or(false) || wip,
        head_sha: crate::forge::autofix::commit_id(&b["head"]["sha"]).unwrap_or_default(),
        head_ref: s(&b["head"]["ref"]),
        head_repo: repo("head"),
        base_ref: s(&b["base"]["ref"]),
        base_repo: repo("base"),
        mergeable: b["mergeable"].as_bool(),
        mergeable_state: String::new(),
        created_at: s(&b["created_at"]),
    }
}

/// The commit the repository's branch `branch` is at, `None` when there is no such branch.
pub async fn branch_sha(fj: &Forgejo, branch: &str) -> Result<Option<String>> {
    let a = fj.get(&fj.repo_path(&format!("/branches/{}", encode(branch)))).await?;
    match a.status {
        404 => Ok(None),
        _ if a.ok() => Ok(crate::forge::autofix::commit_id(&a.body["commit"]["id"])),
        _ => Err(failed(&format!("reading the branch {branch}"), &a)),
    }
}

/// A comment on PR `n`.
pub async fn comment(fj: &Forgejo, n: u64, body: &str) -> Result<()> {
    let a = fj.post(&fj.repo_path(&format!("/issues/{n}/comments")), &json!({"body": body})).await?;
    if !a.ok() {
        return Err(failed(&format!("commenting on PR #{n}"), &a));
    }
    Ok(())
}

pub async fn close(fj: &Forgejo, n: u64) -> Result<()> {
    let a = fj.patch(&fj.repo_path(&format!("/pulls/{n}")), &json!({"state": "closed"})).await?;
    if !a.ok() {
        return Err(failed(&format!("closing PR #{n}"), &a));
    }
    Ok(())
}

/// Delete the repository's branch `branch` (encoded as one segment). A branch already gone (404)
/// is fine.
pub async fn delete_branch(fj: &Forgejo, branch: &str) -> Result<bool> {
    let a = fj.delete(&fj.repo_path(&format!("/branches/{}", encode(branch)))).await?;
    match a.status {
        200 | 204 => Ok(true),
        404 => Ok(false),
        _ => Err(failed(&format!("deleting the branch {branch}"), &a)),
    }
}

/// PR `n` merged by `how` (`merge`, `squash`, `rebase`) if its head is still `sha`, never
/// forced: Forgejo checks its own rules again (405 not mergeable or not allowed, 409 the head
/// moved or conflicts).
pub async fn merge(fj: &Forgejo, n: u64, sha: &str, how: &str) -> Result<Merged> {
    let body = json!({"Do": how, "head_commit_id": sha});
    let a = fj.post(&fj.repo_path(&format!("/pulls/{n}/merge")), &body).await?;
    match a.status {
        200 | 204 => Ok(Merged::Merged),
        405 | 409 | 422 => {
            let m = a.message();
            let m = m.strip_prefix(&format!("HTTP {}: ", a.status)).unwrap_or(&m);
            Ok(Merged::Refused(a.status, quote(m)))
        }
        _ => Err(failed(&format!("merging PR #{n}"), &a)),
    }
}

#[cfg(test)]
#[path = "campaign_tests.rs"]
mod tests;
