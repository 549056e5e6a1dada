//! The GitLab requests `hone fleet prs` makes for one merge request: who the token is, the
//! merge request (state, author, head, pipeline and merge status in one answer) and its
//! approvals, its branch's commit; add a note, close it, delete its source branch, merge it at
//! the head hone pushed. Every path is made from the fleet file's project, fleet.json's merge
//! request number and the job's branch, encoded; nothing in an answer names where the next
//! request goes.

use crate::error::{Code, HoneError, Result};
use crate::forge::campaign::{Identities, Me, Merged, Pr, Seen, quote};
use crate::forge::github::encode;
use crate::forge::gitlab::{Answer, GitLab};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};

/// One project's client, counting the requests it makes.
pub struct Api<'a> {
    pub gl: GitLab,
    pub sent: &'a AtomicU64,
    /// Each token's identity, asked once (`key` names this client's server and token).
    pub ids: &'a Identities,
    pub key: String,
}

fn failed(what: &str, a: &Answer) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&a.message())))
}

impl Api<'_> {
    fn count(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    fn mr_path(&self, n: u64, rest: &str) -> String {
        self.gl.project_path(&format!("/merge_requests/{n}{rest}"))
    }

    /// Merge request `n` alone: its state, author, head, head pipeline and merge status.
    pub async fn pull(&self, n: u64) -> Result<Seen> {
        self.count();
        let a = self.gl.get(&self.mr_path(n, "")).await?;
        if !a.ok() {
            return Err(failed(&format!("reading merge request !{n}"), &a));
        }
        Ok(super::checks::seen(&a.body, &self.gl.project, None))
    }

    /// Merge request `n` and, when it is open, its approvals (GitLab's approvals API: only
    /// users GitLab lets approve can, and with approval rules it says whether they are met).
    pub async fn observe(&self, n: u64) -> Result<Seen> {
        self.count();
        let a = self.gl.get(&self.mr_path(n, "")).await?;
        if !a.ok() {
            return Err(failed(&format!("reading merge request !{n}"), &a));
        }
        if !matches!(a.body["state"].as_str(), Some("opened" | "locked")) {
            return Ok(super::checks::seen(&a.body, &self.gl.project, None));
        }
        self.count();
        let approvals = self.gl.get(&self.mr_path(n, "/approvals")).await?;
        if !approvals.ok() {
            return Err(failed(&format!("reading the approvals of merge request !{n}"), &approvals));
        }
        Ok(super::checks::seen(&a.body, &self.gl.project, Some(&approvals.body)))
    }

    /// The token's user (`GET /user`): its id decides whose merge request it is.
    pub async fn me(&self) -> Result<Me> {
        self.ids
            .get(&self.key, async {
                self.count();
                let me = self.gl.get("/user").await?;
                match (me.body["id"].as_u64(), me.body["username"].as_str()) {
                    (Some(id), Some(name)) if me.ok() => Ok(Me { login: name.to_string(), id: Some(id) }),
                    _ => Err(HoneError::new(
                        Code::Forge,
                        format!("GitLab would not say who the token's user is: {}", quote(&me.message())),
                    )
                    .hint("give the token a scope that reads its user (`api` or `read_user`)")),
                }
            })
            .await
    }

    /// Every merge request (open or not) whose source branch is `branch` in this project, newest
    /// first: what the fleet's pace counts, once each is proved the campaign's (`own::pr_check`).
    pub async fn campaign_prs(&self, branch: &str) -> Result<Vec<Pr>> {
        let mut all = Vec::new();
        for page in 1..=11u32 {
            self.count();
            let q = format!("/merge_requests?source_branch={}&state=all&per_page=100&page={page}", encode(branch));
            let a = self.gl.get(&self.gl.project_path(&q)).await?;
            if !a.ok() {
                return Err(failed("listing the branch's merge requests", &a));
            }
            let items = a.body.as_array().cloned().unwrap_or_default();
            if page > 10 && !items.is_empty() {
                return Err(HoneError::new(Code::Forge, "listing the branch's merge requests failed: more than 1000"));
            }
            all.extend(items.iter().map(|b| super::checks::seen(b, &self.gl.project, None).pr));
            if items.len() < 100 {
                break;
            }
        }
        Ok(all)
    }

    /// The commit the project's branch `branch` is at, `None` when there is no such branch.
    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        self.count();
        let a = self.gl.get(&self.gl.project_path(&format!("/repository/branches/{}", encode(branch)))).await?;
        match a.status {
            404 => Ok(None),
            _ if a.ok() => Ok(a.body["commit"]["id"].as_str().map(str::to_ascii_lowercase)),
            _ => Err(failed(&format!("reading the branch {branch}"), &a)),
        }
    }

    /// A note on merge request `n`.
    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        self.count();
        let a = self.gl.post(&self.mr_path(n, "/notes"), &json!({"body": body})).await?;
        if !a.ok() {
            return Err(failed(&format!("adding a note to merge request !{n}"), &a));
        }
        Ok(())
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        self.count();
        let a = self.gl.put(&self.mr_path(n, ""), &json!({"state_event": "close"})).await?;
        if !a.ok() {
            return Err(failed(&format!("closing merge request !{n}"), &a));
        }
        Ok(())
    }

    /// Delete the project's branch `branch` (encoded as one segment). A branch already gone
    /// (404) is fine.
    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        self.count();
        let a = self.gl.delete(&self.gl.project_path(&format!("/repository/branches/{}", encode(branch)))).await?;
        match a.status {
            200 | 204 => Ok(true),
            404 => Ok(false),
            _ => Err(failed(&format!("deleting the branch {branch}"), &a)),
        }
    }

    /// Merge request `n` merged if its head is still `sha`, never forced: GitLab checks its own
    /// rules again (405 not mergeable, 409 the head moved, 422 cannot be merged).
    pub async fn merge(&self, n: u64, sha: &str, squash: bool) -> Result<Merged> {
        self.count();
        let mut body = json!({"sha": sha});
        if squash {
            body["squash"] = json!(true);
        }
        let a = self.gl.put(&self.mr_path(n, "/merge"), &body).await?;
        match a.status {
            200 if a.body["state"] == "merged" => Ok(Merged::Merged),
            200 | 405 | 406 | 409 | 422 => Ok(Merged::Refused(a.status, lab_message(&a))),
            _ => Err(failed(&format!("merging merge request !{n}"), &a)),
        }
    }
}

/// GitLab's message in an answer, quoted safely.
fn lab_message(a: &Answer) -> String {
    let m = a.message();
    let prefix = format!("HTTP {}: ", a.status);
    quote(m.strip_prefix(&prefix).unwrap_or(&m))
}
