//! Shipping a verified commit: `pr.md` and `change.patch` in the report dir, a push of the run's
//! branch, and a pull request created or updated (never duplicated) on GitHub.

pub mod app;
pub mod autofix;
pub mod credential;
pub mod github;
pub mod local;
pub mod push;
pub mod remote;

use crate::error::{Code, HoneError, Result};
use crate::spec::{Job, raw::PrEnabled};
use github::GitHub;
use serde_json::json;

pub use crate::protocol::{PrOperation, PrReport};

/// What to publish, decided by the run: the forge renders nothing of its own.
#[derive(Debug, Clone, Default)]
pub struct PrRequest {
    pub title: String,
    pub body: String,
    /// The commit to push: a verified commit, or with `on_failure: draft` the saved work.
    pub head: Option<String>,
    /// A change to publish (a verified commit, or failed work as a draft); false: nothing changed.
    pub changed: bool,
    /// The change as a patch, for `change.patch`.
    pub patch: Option<String>,
}

pub struct Ship<'a> {
    pub job: &'a Job,
    pub env: &'a crate::env::RunEnv,
    pub shared: &'a crate::env::Shared,
    pub ws: &'a crate::git::Workspace,
    /// Git and GitHub work stays inside the run's wall-time budget and obeys cancellation.
    pub deadline: tokio::time::Instant,
    pub cancel: &'a tokio_util::sync::CancellationToken,
    pub dry_run: bool,
    /// The branch the PR targets.
    pub base_branch: String,
    /// Autofix mode: push to this PR's branch and comment, instead of opening a PR.
    pub autofix: Option<&'a autofix::Target>,
    /// `pr.on_failure: draft`: the ref holding the unverified work to push as a draft PR.
    pub partial_ref: Option<String>,
    /// `owner/repo`, when known better than `GITHUB_REPOSITORY` (fleet).
    pub github_repo: Option<String>,
    /// Where a token hone mints (a GitHub App's) is registered before it is used.
    pub redactor: &'a crate::redact::Redactor,
}

fn is_network_url(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://") || url.starts_with("git@") || url.starts_with("ssh://")
}

impl Ship<'_> {
    /// Push, open or update the PR (the run wrote `pr.md` and `change.patch` before). Errors are infrastructure failures.
    pub async fn run(&self, req: &PrRequest) -> Result<PrReport> {
        let job = self.job;
        let mut out = PrReport { operation: PrOperation::None, dry_run: self.dry_run, ..Default::default() };
        if self.dry_run {
            out.notice =
                Some("dry run: nothing was pushed and no GitHub API was called; see pr.md and change.patch".into());
            return Ok(out);
        }
        let url = self.ws.remote_url(&job.git.remote);
        let changed = req.changed;
        let repo = self.github_repo.clone().or_else(|| self.env.github_repository.clone());
        // With a GitHub App, its token for the repository (minted at intake, again near expiry).
        let wanted = (changed && job.git.push) || job.pr.enabled != PrEnabled::No;
        let token = match github::owner_repo(repo.as_deref(), url.as_deref()) {
            Some((owner, repo)) if wanted => app::github_token(&self.app_context(), job, &owner, &repo).await?,
            _ if app::configured(self.env) => None,
            _ => self.env.var(&job.git.token_env).map(str::to_string),
        };
        if changed && job.git.push {
            self.push(url.as_deref(), token.clone(), &mut out).await?;
        }
        if job.pr.enabled == PrEnabled::No {
            return Ok(out);
        }
        let Some(token) = token else {
            if job.pr.enabled == PrEnabled::Yes {
                out.warnings
                    .push(format!("`pr.enabled` is true, but `{}` is not set: no PR was opened", job.git.token_env));
            }
            return Ok(out);
        };
        let Some((owner, repo)) = github::owner_repo(
            self.github_repo.clone().or_else(|| self.env.github_repository.clone()).as_deref(),
            url.as_deref(),
        ) else {
            out.warnings
                .push("cannot tell the GitHub repository (set GITHUB_REPOSITORY=owner/repo): no PR was opened".into());
            return Ok(out);
        };
        let gh = GitHub::new(&self.env.github_api_url, &token, &owner, &repo, self.shared.github_queue.clone())?;
        if let Some(t) = self.autofix {
            let note = if out.pushed {
                format!("hone pushed a fix to {}.", crate::markdown::code(&t.head_ref))
            } else {
                "hone found nothing to change.".to_string()
            };
            let text = format!("{note}\n\n{}", req.body);
            let result = autofix::upsert_comment(&gh, t.number, &job.name, &text).await;
            out.retries = gh.retries.load(std::sync::atomic::Ordering::Relaxed);
            out.number = Some(t.number);
            out.operation = if out.pushed { PrOperation::Updated } else { PrOperation::None };
            out.url = result?;
            return Ok(out);
        }
        let result = self.pull_request(&gh, req, &mut out).await;
        out.retries = gh.retries.load(std::sync::atomic::Ordering::Relaxed);
        result.map(|()| out)
    }

    /// Push the branch (or the partial ref under `pr.on_failure: draft`) with a lease, or say
    /// in `out` why it was not pushed.
    async fn push(&self, url: Option<&str>, token: Option<String>, out: &mut PrReport) -> Result<()> {
        let job = self.job;
        match url {
            None => out.notice = Some(format!("no remote `{}`: the branch was not pushed", job.git.remote)),
            Some(u) if is_network_url(u) && token.is_none() => {
                out.notice = Some(format!(
                    "no token in `{}`: the branch was not pushed; see pr.md and change.patch",
                    job.git.token_env
                ));
            }
            Some(_) => {
                let branch = &job.git.branch;
                push::check_branch(branch, Some(&self.base_branch), &job.git.protected, true)?;
                let (ws, budget) = (self.ws, (self.deadline, self.cancel));
                // git reads the token from `token_env`: there, the one this run uses (an App's).
                let env =
                    token.as_deref().map_or_else(|| self.env.clone(), |t| self.env.with_var(&job.git.token_env, t));
                let remote = remote::Remote::open(ws, &job.git.remote, &env, &job.git.token_env, budget)?;
                // Autofix: the lease is the head hone started from, so a concurrent push wins.
                let expected = match self.autofix {
                    Some(t) => Some(t.head_sha.clone()),
                    None => remote.head(branch).await?,
                };
                let local = self.partial_ref.clone().unwrap_or_else(|| format!("refs/heads/{branch}"));
                let oid = self.ws.resolve_base(Some(&local))?.to_string();
                remote.push(&oid, branch, expected.as_deref()).await?;
                out.pushed = true;
            }
        }
        Ok(())
    }

    fn app_context(&self) -> app::Context<'_> {
        let (env, shared, redactor) = (self.env, self.shared, self.redactor);
        app::Context { env, shared, redactor, deadline: self.deadline, cancel: self.cancel }
    }

    async fn find_open(&self, gh: &GitHub) -> Result<Option<(u64, String)>> {
        let head = github::encode(&format!("{}:{}", gh.owner, self.job.git.branch));
        let path = gh.repo_path(&format!("/pulls?head={head}&state=open"));
        let resp = gh.get(&path).await?;
        if !resp.ok() {
            return Err(HoneError::new(Code::Forge, format!("listing pull requests failed: {}", resp.message())));
        }
        Ok(resp
            .body
            .as_array()
            .and_then(|a| a.first())
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
                        return Err(HoneError::new(
                            Code::Forge,
                            format!(
                                "GitHub says a PR already exists, but none is open for the branch: {}",
                                resp.message()
                            ),
                        ));
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
