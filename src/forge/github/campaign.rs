//! The GitHub requests `hone fleet prs` makes for one pull request: who the token is, the PR,
//! its checks, its reviews (REST, and GraphQL's `reviewDecision`), its base branch's rules and
//! its branch's commit; comment, close, delete its branch, merge or enqueue it. Every path is
//! made from the fleet file's repository, fleet.json's PR number and the job's branch, encoded;
//! nothing in an answer names where the next request goes.

use super::{GitHub, Resp, encode};
use crate::error::{Code, HoneError, Result};
use crate::forge::campaign::{Identities, Me, Merged, Pr, Queued, Reviewed, Rules, quote};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most pages of check runs, statuses or reviews read for one PR (100 a page).
const MAX_PAGES: u32 = 10;

/// One repository's client, counting the requests it makes.
pub struct Api<'a> {
    pub gh: GitHub,
    pub sent: &'a AtomicU64,
    /// The identity a GitHub App's token acts as (`slug[bot]`), known without asking.
    pub login: Option<String>,
    /// Each token's identity, asked once (`key` names this client's API and token).
    pub ids: &'a Identities,
    pub key: String,
}

fn failed(what: &str, r: &Resp) -> HoneError {
    HoneError::new(Code::Forge, format!("{what} failed: {}", quote(&r.message())))
}

impl Api<'_> {
    async fn get(&self, path: &str) -> Result<Resp> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.gh.get(path).await
    }

    fn count(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    pub async fn pull(&self, n: u64) -> Result<Pr> {
        let r = self.get(&self.gh.repo_path(&format!("/pulls/{n}"))).await?;
        if !r.ok() {
            return Err(failed(&format!("reading PR #{n}"), &r));
        }
        Ok(pr_of(&r.body))
    }

    /// Every PR (open or not) whose head is `branch` in this repository, newest first: what the
    /// fleet's pace counts, once each is proved the campaign's (`own::pr_check`).
    pub async fn campaign_prs(&self, branch: &str) -> Result<Vec<Pr>> {
        let head = encode(&format!("{}:{branch}", self.gh.owner));
        let path = self.gh.repo_path(&format!("/pulls?head={head}&state=all&sort=created&direction=desc"));
        Ok(self.pages(&path, None, "listing the branch's pull requests").await?.iter().map(pr_of).collect())
    }

    /// Every item of a paged list under `key` (or the answer itself when it is the list). A list
    /// longer than `MAX_PAGES` pages is an error, never decided on from its first part: what
    /// comes later (the latest review, a failing check) may be what decides.
    async fn pages(&self, path: &str, key: Option<&str>, what: &str) -> Result<Vec<Value>> {
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES + 1 {
            let sep = if path.contains('?') { '&' } else { '?' };
            let r = self.get(&format!("{path}{sep}per_page=100&page={page}")).await?;
            if !r.ok() {
                return Err(failed(what, &r));
            }
            let items = match key {
                Some(k) => r.body[k].as_array().cloned().unwrap_or_default(),
                None => r.body.as_array().cloned().unwrap_or_default(),
            };
            let n = items.len();
            if page > MAX_PAGES && n > 0 {
                let (max, items) = (MAX_PAGES * 100, what.strip_prefix("reading the ").unwrap_or(what));
                return Err(HoneError::new(Code::Forge, format!("{what} failed: more than {max} {items}"))
                    .hint("decide on this PR by hand: hone does not judge it from part of the list"));
            }
            all.extend(items);
            if n < 100 {
                break;
            }
        }
        Ok(all)
    }

    /// The head commit's check runs (`status`, `conclusion`) and commit statuses (`state`, the
    /// latest per context).
    pub async fn checks(&self, sha: &str) -> Result<(Vec<Value>, Vec<Value>)> {
        let sha = encode(sha);
        let runs = self.gh.repo_path(&format!("/commits/{sha}/check-runs"));
        let runs = self.pages(&runs, Some("check_runs"), "reading the check runs").await?;
        let statuses = self.gh.repo_path(&format!("/commits/{sha}/status"));
        let statuses = self.pages(&statuses, Some("statuses"), "reading the commit statuses").await?;
        Ok((runs, statuses))
    }

    /// Each review, oldest first.
    pub async fn reviews(&self, n: u64) -> Result<Vec<Reviewed>> {
        let path = self.gh.repo_path(&format!("/pulls/{n}/reviews"));
        let all = self.pages(&path, None, "reading the reviews").await?;
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        Ok(all
            .iter()
            .map(|r| Reviewed {
                login: s(&r["user"]["login"]),
                state: s(&r["state"]),
                association: s(&r["author_association"]),
            })
            .collect())
    }

    /// GitHub's own review decision (GraphQL `reviewDecision`: the approvals and change requests
    /// of users with write access, against what the rules require): `APPROVED`,
    /// `CHANGES_REQUESTED`, `REVIEW_REQUIRED`, or `None` when the rules require no review or
    /// GitHub does not answer it.
    pub async fn review_decision(&self, n: u64) -> Result<Option<String>> {
        self.count();
        const Q: &str = "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewDecision } } }";
        let vars = json!({"owner": self.gh.owner, "name": self.gh.repo, "number": n});
        let r = self.gh.graphql_query(Q, &vars).await?;
        let decision = r.body["data"]["repository"]["pullRequest"]["reviewDecision"].as_str();
        let known = matches!(decision, Some("APPROVED" | "CHANGES_REQUESTED" | "REVIEW_REQUIRED"));
        Ok(decision.filter(|_| r.ok() && known).map(str::to_string))
    }

    /// The commit `refs/heads/{branch}` is at, `None` when there is no such branch.
    pub async fn branch_sha(&self, branch: &str) -> Result<Option<String>> {
        let name: Vec<String> = branch.split('/').map(encode).collect();
        let r = self.get(&self.gh.repo_path(&format!("/git/ref/heads/{}", name.join("/")))).await?;
        match r.status {
            404 => Ok(None),
            _ if r.ok() => Ok(r.body["object"]["sha"].as_str().map(str::to_ascii_lowercase)),
            _ => Err(failed(&format!("reading the branch {branch}"), &r)),
        }
    }

    /// The identity the token acts as: a GitHub App's bot, else `GET /user`'s login, or for an
    /// installation token GraphQL `viewer`'s (once).
    pub async fn me(&self) -> Result<Me> {
        if let Some(login) = &self.login {
            return Ok(Me { login: login.clone(), id: None });
        }
        self.ids
            .get(&self.key, async {
                let asked = super::autofix::own_login_asked(&self.gh).await;
                self.sent.fetch_add(asked.as_ref().map_or(1, |(_, n)| *n), Ordering::Relaxed);
                Ok(Me { login: asked?.0, id: None })
            })
            .await
    }

    /// The active rules on `branch`; none known when GitHub does not say (an old GitHub
    /// Enterprise Server without rulesets answers 404).
    pub async fn rules(&self, branch: &str) -> Result<Rules> {
        let path = self.gh.repo_path(&format!("/rules/branches/{}", encode(branch)));
        let r = self.get(&path).await?;
        if r.status == 404 {
            return Ok(Rules::default());
        }
        if !r.ok() {
            return Err(failed("reading the base branch's rules", &r));
        }
        let rules = r.body.as_array().cloned().unwrap_or_default();
        let mut out = Rules::default();
        for rule in &rules {
            match rule["type"].as_str() {
                Some("merge_queue") => out.merge_queue = true,
                Some("required_status_checks") => {
                    let checks = rule["parameters"]["required_status_checks"].as_array().cloned().unwrap_or_default();
                    let names = checks.iter().filter_map(|c| c["context"].as_str()).map(quote);
                    out.required_checks.extend(names);
                }
                Some("pull_request") => {
                    let n = rule["parameters"]["required_approving_review_count"].as_u64().unwrap_or(0);
                    out.required_reviews = out.required_reviews.max(n);
                }
                _ => {}
            }
        }
        out.required_checks.sort();
        out.required_checks.dedup();
        Ok(out)
    }

    pub async fn comment(&self, n: u64, body: &str) -> Result<()> {
        self.count();
        let r = self.gh.post(&self.gh.repo_path(&format!("/issues/{n}/comments")), &json!({"body": body})).await?;
        if !r.ok() {
            return Err(failed(&format!("commenting on PR #{n}"), &r));
        }
        Ok(())
    }

    pub async fn close(&self, n: u64) -> Result<()> {
        self.count();
        let r = self.gh.patch(&self.gh.repo_path(&format!("/pulls/{n}")), &json!({"state": "closed"})).await?;
        if !r.ok() {
            return Err(failed(&format!("closing PR #{n}"), &r));
        }
        Ok(())
    }

    /// Delete `refs/heads/{branch}` (each segment encoded). A branch already gone (422) is fine.
    pub async fn delete_branch(&self, branch: &str) -> Result<bool> {
        self.count();
        let name: Vec<String> = branch.split('/').map(encode).collect();
        let r = self.gh.delete(&self.gh.repo_path(&format!("/git/refs/heads/{}", name.join("/")))).await?;
        match r.status {
            204 | 200 => Ok(true),
            422 => Ok(false),
            _ => Err(failed(&format!("deleting the branch {branch}"), &r)),
        }
    }

    /// Merge PR `n` if its head is still `sha`, never forced: GitHub checks protection itself.
    pub async fn merge(&self, n: u64, sha: &str, method: &str) -> Result<Merged> {
        self.count();
        let path = self.gh.repo_path(&format!("/pulls/{n}/merge"));
        let r = self.gh.put(&path, &json!({"sha": sha, "merge_method": method})).await?;
        match r.status {
            200 if r.body["merged"].as_bool() != Some(false) => Ok(Merged::Merged),
            405 | 409 | 422 | 200 => Ok(Merged::Refused(r.status, gh_message(&r))),
            _ => Err(failed(&format!("merging PR #{n}"), &r)),
        }
    }

    /// Add the PR to its base branch's merge queue, expecting its head at `sha`.
    pub async fn enqueue(&self, node_id: &str, sha: &str) -> Result<Queued> {
        self.count();
        const Q: &str = "mutation($id: ID!, $sha: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $sha}) { mergeQueueEntry { state position } } }";
        let r = self.gh.graphql(Q, &json!({"id": node_id, "sha": sha})).await?;
        if !r.ok() {
            return Err(failed("adding the PR to the merge queue", &r));
        }
        let errors = r.body["errors"].as_array().cloned().unwrap_or_default();
        if let Some(e) = errors.first() {
            return Ok(Queued::Refused(quote(e["message"].as_str().unwrap_or("GraphQL error"))));
        }
        Ok(Queued::Queued)
    }
}

/// A pull request as GitHub's answer describes it.
fn pr_of(b: &Value) -> Pr {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    Pr {
        url: s(&b["html_url"]),
        author: s(&b["user"]["login"]),
        author_id: None,
        node_id: s(&b["node_id"]),
        state: s(&b["state"]),
        merged: b["merged"].as_bool().unwrap_or(false) || !b["merged_at"].is_null(),
        draft: b["draft"].as_bool().unwrap_or(false),
        head_sha: s(&b["head"]["sha"]),
        head_ref: s(&b["head"]["ref"]),
        head_repo: b["head"]["repo"]["full_name"].as_str().map(str::to_string),
        base_ref: s(&b["base"]["ref"]),
        base_repo: b["base"]["repo"]["full_name"].as_str().map(str::to_string),
        mergeable: b["mergeable"].as_bool(),
        mergeable_state: s(&b["mergeable_state"]),
        created_at: s(&b["created_at"]),
    }
}

/// GitHub's message in an answer, quoted safely.
fn gh_message(r: &Resp) -> String {
    quote(r.body["message"].as_str().unwrap_or(""))
}
