//! The forge layer: everything hone asks of a forge, behind one interface, with one folder per
//! forge (`github/`, `gitlab/`, `forgejo/`, each with the same files for the same concepts) and
//! the forges registered in `kind.rs`. Here: shipping a verified commit (a push of the run's
//! branch, and a pull or merge request created or updated, never duplicated, on the forge the
//! run's place names, `place.rs`), dispatched to `<forge>/pr.rs`; reading one issue (`issue.rs`),
//! dispatched to `<forge>/issue.rs`. See docs/architecture.md.

pub mod autofix;
pub mod campaign;
pub mod ci;
pub mod credential;
pub mod feedback;
pub mod forgejo;
pub mod github;
pub mod gitlab;
pub mod init;
pub mod issue;
pub mod kind;
pub mod listing;
pub mod local;
pub mod pace;
pub mod pace_campaign;
pub mod place;
pub mod pull;
pub mod push;
pub mod query;
pub mod remote;
pub mod review;
mod shared;
pub mod tokens;

use crate::error::Result;
use crate::spec::{Job, PrEnabled};
use place::Place;

pub use crate::protocol::{PrOperation, PrReport};
pub use kind::Kind;
pub use shared::Shared;

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
    pub shared: &'a crate::forge::Shared,
    pub ws: &'a crate::git::Workspace,
    /// Git and forge API work stays inside the run's wall-time budget and obeys cancellation.
    pub bound: &'a crate::bound::Bound,
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
            Kind::Github => github::pr::ship(self, req, &mut out).await,
            Kind::Gitlab => gitlab::pr::ship(self, req, &mut out).await,
            Kind::Forgejo => forgejo::pr::ship(self, req, &mut out).await,
        }
        .map(|()| out)
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
                let remote = remote::Remote::open(self.ws, &job.git.remote, self.env, self.place, self.bound)?;
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

/// Autofix: PR `t` was fixed in place (`out` gets its number, and `updated` when hone pushed);
/// returns the text of hone's one comment on it: what was pushed, then the PR text.
pub(crate) fn fixed_in_place(t: &autofix::Target, req: &PrRequest, out: &mut PrReport) -> String {
    (out.number, out.operation) = (Some(t.number), pushed_op(out.pushed));
    format!("{}\n\n{}", autofix_note(out.pushed, &t.head_ref), req.body)
}

/// The first line of the autofix comment.
fn autofix_note(pushed: bool, head_ref: &str) -> String {
    if pushed {
        format!("hone pushed a fix to {}.", crate::markdown::code(head_ref))
    } else {
        "hone found nothing to change.".to_string()
    }
}

pub(crate) fn pushed_op(pushed: bool) -> PrOperation {
    if pushed { PrOperation::Updated } else { PrOperation::None }
}

/// Issue `number` of the place's repository, read by its forge's `issue.rs`; `None` when the
/// forge has no such issue.
pub async fn read_issue(
    place: &place::Place,
    number: u64,
    queue: std::sync::Arc<tokio::sync::Mutex<Option<tokio::time::Instant>>>,
    bound: &crate::bound::Bound,
) -> crate::error::Result<Option<issue::Issue>> {
    match place.kind {
        Kind::Github => github::issue::read(place, number, queue).await,
        Kind::Gitlab => gitlab::issue::read(place, number, queue, bound).await,
        Kind::Forgejo => forgejo::issue::read(place, number, queue, bound).await,
    }
}
