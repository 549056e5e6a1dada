//! The run's pull request on GitHub: found by its head branch, created or updated (labels,
//! assignees, reviewers), or closed when the run changed nothing.

use super::{self as github, GitHub};
use crate::error::{Code, HoneError, Result};
use crate::forge::{PrOperation, PrReport, PrRequest, Ship};
use serde_json::json;

/// The pull request (or, in autofix, the comment) on GitHub.
pub async fn ship(s: &Ship<'_>, req: &PrRequest, out: &mut PrReport) -> Result<()> {
    let Some((owner, repo)) = s.place.repo.as_deref().and_then(|r| r.split_once('/')) else {
        out.warnings
            .push("cannot tell the GitHub repository (set GITHUB_REPOSITORY=owner/repo): no PR was opened".into());
        return Ok(());
    };
    let token = s.place.token.as_ref().map(|t| t.secret()).unwrap_or_default();
    let gh = GitHub::new(s.place.api()?, token, owner, repo, s.shared.queue.clone())?;
    let result = match s.autofix {
        Some(t) => {
            let text = crate::forge::fixed_in_place(t, req, out);
            let (job, login) = (s.job.name.as_str(), s.place.login.as_deref());
            super::autofix::upsert_comment(&gh, t.number, job, login, &text).await.map(|u| out.url = u)
        }
        None => s.pull_request(&gh, req, out).await,
    };
    out.retries = gh.retries.load(std::sync::atomic::Ordering::Relaxed);
    result
}

impl Ship<'_> {
    /// hone's open PR from the job's branch: one the token's identity opened (`place.login`, a
    /// GitHub App's bot, else `GET /user` or GraphQL `viewer`, asked only when a PR is open). A
    /// PR someone else opened from hone's branch (anyone may, on a public repository) is never
    /// edited or closed.
    async fn find_open(&self, gh: &GitHub) -> Result<Option<(u64, String)>> {
        let head = github::encode(&format!("{}:{}", gh.owner, self.job.git.branch));
        let path = gh.repo_path(&format!("/pulls?head={head}&state=open"));
        let resp = gh.get(&path).await?;
        if !resp.ok() {
            return Err(HoneError::new(Code::Forge, format!("listing pull requests failed: {}", resp.message())));
        }
        let Some(open) = resp.body.as_array().filter(|a| !a.is_empty()) else { return Ok(None) };
        let own = match self.place.login.as_deref() {
            Some(l) => l.to_string(),
            None => super::autofix::own_login(gh).await?,
        };
        let by_me = |p: &&serde_json::Value| p["user"]["login"].as_str().is_some_and(|l| l.eq_ignore_ascii_case(&own));
        Ok(open
            .iter()
            .find(by_me)
            .and_then(|p| Some((p["number"].as_u64()?, p["html_url"].as_str().unwrap_or("").to_string()))))
    }

    async fn pull_request(&self, gh: &GitHub, req: &PrRequest, out: &mut PrReport) -> Result<()> {
        let changed = req.changed;
        let pr = &self.job.pr;
        let existing = self.find_open(gh).await?;
        if !changed {
            if let (Some((n, url)), true) = (&existing, pr.close_if_empty) {
                let resp = gh.patch(&gh.repo_path(&format!("/pulls/{n}")), &json!({"state": "closed"})).await?;
                if !resp.ok() {
                    return Err(HoneError::new(Code::Forge, format!("closing PR #{n} failed: {}", resp.message())));
                }
                (out.operation, out.number, out.url) = (PrOperation::Closed, Some(*n), Some(url.clone()));
            }
            return Ok(());
        }
        let (title, text) = (req.title.clone(), req.body.clone());
        let number = match existing {
            Some((n, url)) => {
                self.update(gh, n, &title, &text, out).await?;
                out.url = Some(url);
                n
            }
            None => {
                let create = json!({"title": title, "head": self.job.git.branch, "base": self.base_branch, "body": text, "draft": pr.draft || self.partial_ref.is_some()});
                let resp = gh.post(&gh.repo_path("/pulls"), &create).await?;
                if resp.status == 422 && resp.message().to_lowercase().contains("already exists") {
                    let Some((n, url)) = self.find_open(gh).await? else {
                        let (branch, base) = (&self.job.git.branch, &self.base_branch);
                        return Err(HoneError::new(
                            Code::Forge,
                            format!(
                                "a PR from `{branch}` onto `{base}` is open, but hone's identity did not open it: hone does not edit someone else's PR ({})",
                                resp.message()
                            ),
                        )
                        .hint("close that PR, or give the job another branch (`git.branch`)"));
                    };
                    self.update(gh, n, &title, &text, out).await?;
                    out.url = Some(url);
                    n
                } else if resp.ok() {
                    out.operation = PrOperation::Created;
                    out.url = resp.body["html_url"].as_str().map(str::to_string);
                    resp.body["number"]
                        .as_u64()
                        .ok_or_else(|| HoneError::new(Code::Forge, "GitHub answered without a PR number"))?
                } else {
                    return Err(HoneError::new(Code::Forge, format!("creating the PR failed: {}", resp.message())));
                }
            }
        };
        out.number = Some(number);
        if !pr.labels.is_empty() {
            let resp =
                gh.post(&gh.repo_path(&format!("/issues/{number}/labels")), &json!({"labels": pr.labels})).await?;
            if !resp.ok() {
                out.warnings.push(format!("labels were not added: {}", resp.message()));
            }
        }
        if !pr.assignees.is_empty() {
            let body = json!({"assignees": pr.assignees});
            let resp = gh.post(&gh.repo_path(&format!("/issues/{number}/assignees")), &body).await?;
            if !resp.ok() {
                out.warnings.push(format!("assignees were not added: {}", resp.message()));
            }
        }
        if !pr.reviewers.is_empty() || !pr.team_reviewers.is_empty() {
            let body = json!({"reviewers": pr.reviewers, "team_reviewers": pr.team_reviewers});
            let resp = gh.post(&gh.repo_path(&format!("/pulls/{number}/requested_reviewers")), &body).await?;
            if !resp.ok() {
                out.warnings.push(format!("reviewers were not requested: {}", resp.message()));
            }
        }
        Ok(())
    }

    async fn update(&self, gh: &GitHub, n: u64, title: &str, text: &str, out: &mut PrReport) -> Result<()> {
        out.operation = PrOperation::Updated;
        if !self.job.pr.update_existing {
            return Ok(());
        }
        let resp = gh.patch(&gh.repo_path(&format!("/pulls/{n}")), &json!({"title": title, "body": text})).await?;
        if !resp.ok() {
            return Err(HoneError::new(Code::Forge, format!("updating PR #{n} failed: {}", resp.message())));
        }
        Ok(())
    }
}
