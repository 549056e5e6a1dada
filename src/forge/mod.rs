//! Shipping a verified commit: `pr.md` and `change.patch` in the report dir, a push of the run's
//! branch, and a pull request (GitHub) or merge request (GitLab) created or updated, never
//! duplicated, on the forge the run's place names (`place.rs`).

pub mod app;
pub mod autofix;
pub mod credential;
pub mod feedback;
pub mod forgejo;
pub mod github;
pub mod github_api;
mod github_pr;
pub mod gitlab;
pub mod listing;
pub mod local;
pub mod pace;
pub mod place;
pub mod push;
pub mod remote;
pub mod review;

use crate::error::Result;
use crate::spec::{Job, forge::ForgeKind, raw::PrEnabled};
use github::GitHub;
use place::Place;

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
    /// Git and forge API work stays inside the run's wall-time budget and obeys cancellation.
    pub deadline: tokio::time::Instant,
    pub cancel: &'a tokio_util::sync::CancellationToken,
    pub dry_run: bool,
    /// The branch the PR targets.
    pub base_branch: String,
    /// Autofix mode: push to this PR's branch and comment, instead of opening a PR.
    pub autofix: Option<&'a autofix::Target>,
    /// `pr.on_failure: draft`: the ref holding the unverified work to push as a draft PR.
    pub partial_ref: Option<String>,
    /// The forge, the repository on it and the token.
    pub place: &'a Place,
}

fn is_network_url(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://") || url.starts_with("git@") || url.starts_with("ssh://")
}

impl Ship<'_> {
    /// Push, open or update the PR (the run wrote `pr.md` and `change.patch` before). Errors are infrastructure failures.
    pub async fn run(&self, req: &PrRequest) -> Result<PrReport> {
        let (job, place) = (self.job, self.place);
        let forge = Some(place.forge_name().to_lowercase());
        let mut out = PrReport { operation: PrOperation::None, dry_run: self.dry_run, forge, ..Default::default() };
        if self.dry_run {
            out.notice = Some(format!(
                "dry run: nothing was pushed and no {} API was called; see pr.md and change.patch",
                place.forge_name()
            ));
            return Ok(out);
        }
        let url = self.ws.remote_url(&job.git.remote);
        if req.changed && job.git.push {
            self.push(url.as_deref(), &mut out).await?;
        }
        if job.pr.enabled == PrEnabled::No {
            return Ok(out);
        }
        if place.token.is_none() {
            if job.pr.enabled == PrEnabled::Yes {
                let var = place.token_source(job.git.token_env.as_deref());
                out.warnings.push(format!("`pr.enabled` is true, but {var} is not set: no PR was opened"));
            }
            return Ok(out);
        }
        match place.kind {
            ForgeKind::Github => self.github(req, &mut out).await,
            ForgeKind::Gitlab => self.gitlab(req, &mut out).await,
        }
        .map(|()| out)
    }

    /// The pull request (or, in autofix, the comment) on GitHub.
    async fn github(&self, req: &PrRequest, out: &mut PrReport) -> Result<()> {
        let Some((owner, repo)) = self.place.repo.as_deref().and_then(|r| r.split_once('/')) else {
            out.warnings
                .push("cannot tell the GitHub repository (set GITHUB_REPOSITORY=owner/repo): no PR was opened".into());
            return Ok(());
        };
        let token = self.place.token.as_ref().map(|t| t.secret()).unwrap_or_default();
        let gh = GitHub::new(self.place.api()?, token, owner, repo, self.shared.forge_queue.clone())?;
        let result = match self.autofix {
            Some(t) => {
                let text = format!("{}\n\n{}", autofix_note(out.pushed, &t.head_ref), req.body);
                let who = (self.job.name.as_str(), self.place.login.as_deref());
                let url = autofix::upsert_comment(&gh, t.number, who, &text).await;
                (out.number, out.operation) = (Some(t.number), pushed_op(out.pushed));
                url.map(|u| out.url = u)
            }
            None => self.pull_request(&gh, req, out).await,
        };
        out.retries = gh.retries.load(std::sync::atomic::Ordering::Relaxed);
        result
    }

    /// The merge request (or, in autofix, the note) on GitLab.
    async fn gitlab(&self, req: &PrRequest, out: &mut PrReport) -> Result<()> {
        let gl = gitlab::GitLab::new(self.place, self.shared.forge_queue.clone(), (self.deadline, self.cancel))?;
        // The job token cannot write merge requests or notes: where the job did not insist on a
        // merge request (`pr.enabled: auto`, autofix), the push is the result and hone says why
        // nothing more was done; with `pr.enabled: true` GitLab's refusal is the error.
        if gl.job_token() && (self.autofix.is_some() || self.job.pr.enabled == PrEnabled::Auto) {
            let what = if self.autofix.is_some() { "note on the merge request" } else { "merge request" };
            out.warnings.push(format!(
                "{} cannot write a {what}: put a project access token with the `api` scope in GITLAB_TOKEN for it",
                place::CI_JOB_TOKEN
            ));
            if let Some(t) = self.autofix {
                (out.number, out.operation) = (Some(t.number), pushed_op(out.pushed));
            }
            return Ok(());
        }
        let result = match self.autofix {
            Some(t) => {
                let text = format!("{}\n\n{}", autofix_note(out.pushed, &t.head_ref), req.body);
                let url = gitlab::autofix::upsert_note(&gl, t.number, &self.job.name, &text).await;
                (out.number, out.operation) = (Some(t.number), pushed_op(out.pushed));
                url.map(|u| out.url = u)
            }
            None => gitlab::mr::publish(&gl, self.job, &self.base_branch, req, self.partial_ref.is_some(), out).await,
        };
        out.retries = gl.retries.load(std::sync::atomic::Ordering::Relaxed);
        result
    }

    /// Push the branch (or the partial ref under `pr.on_failure: draft`) with a lease, or say
    /// in `out` why it was not pushed.
    async fn push(&self, url: Option<&str>, out: &mut PrReport) -> Result<()> {
        let job = self.job;
        match url {
            None => out.notice = Some(format!("no remote `{}`: the branch was not pushed", job.git.remote)),
            Some(u) if is_network_url(u) && self.place.token.is_none() => {
                out.notice = Some(format!(
                    "no token in {}: the branch was not pushed; see pr.md and change.patch",
                    self.place.token_source(job.git.token_env.as_deref())
                ));
            }
            Some(_) => {
                let branch = &job.git.branch;
                push::check_branch(branch, Some(&self.base_branch), &job.git.protected, true)?;
                let (ws, env, budget) = (self.ws, self.env, (self.deadline, self.cancel));
                let remote = remote::Remote::open(ws, &job.git.remote, env, self.place, budget)?;
                // Autofix: the lease is the head hone started from, so a concurrent push wins.
                let expected = match self.autofix {
                    Some(t) => Some(t.head_sha.clone()),
                    None => remote.head(branch).await?,
                };
                let local = self.partial_ref.clone().unwrap_or_else(|| format!("refs/heads/{branch}"));
                let oid = self.ws.resolve_base(Some(&local))?.to_string();
                remote.push(&oid, branch, expected.as_deref()).await?;
                (out.pushed, out.pushed_sha) = (true, Some(oid));
            }
        }
        Ok(())
    }
}

/// The first line of the autofix comment.
fn autofix_note(pushed: bool, head_ref: &str) -> String {
    if pushed {
        format!("hone pushed a fix to {}.", crate::markdown::code(head_ref))
    } else {
        "hone found nothing to change.".to_string()
    }
}

fn pushed_op(pushed: bool) -> PrOperation {
    if pushed { PrOperation::Updated } else { PrOperation::None }
}
