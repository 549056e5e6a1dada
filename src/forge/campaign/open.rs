//! Opening a campaign's client for one target: its place (forge, repository, token) decided as
//! `hone fleet` decides it, from the fleet file's URL and never the environment's repository,
//! a GitHub App's token minted for it, and one client per API and token reused across targets.

use super::{Api, Identities};
use crate::error::{Code, HoneError, Result};
use crate::forge::github::{self, GitHub};
use crate::forge::gitlab::{self, GitLab};
use crate::forge::place::{Input, Place};
use crate::forge::{Kind, Shared};
use crate::redact::Redactor;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long one target's requests may take in all.
const TARGET_LIMIT: Duration = Duration::from_secs(600);

/// The clients of one campaign command, shared by its targets.
pub struct Clients<'c> {
    pub env: &'c crate::env::RunEnv,
    pub job: &'c crate::spec::Job,
    pub shared: Shared,
    pub redactor: &'c Redactor,
    pub cancel: &'c CancellationToken,
    /// The requests sent, retries included.
    pub sent: AtomicU64,
    /// One GitHub client per API and token: connections reused across repositories.
    hubs: Mutex<HashMap<(String, String), GitHub>>,
    /// Each token's identity on its forge, asked once.
    ids: Identities,
}

/// A target's client, and its repository as the forge names it.
pub struct Opened<'a> {
    pub api: Api<'a>,
    pub repo: String,
}

impl<'c> Clients<'c> {
    pub fn new(
        env: &'c crate::env::RunEnv,
        job: &'c crate::spec::Job,
        shared: Shared,
        redactor: &'c Redactor,
        cancel: &'c CancellationToken,
    ) -> Self {
        let (hubs, ids) = (Mutex::default(), Identities::default());
        Clients { env, job, shared, redactor, cancel, sent: AtomicU64::new(0), hubs, ids }
    }

    /// The place of a target at `url`: the forge by the URL's host, the repository from the URL,
    /// a GitHub App's token minted for it (and its bot, the campaign's identity).
    pub async fn place(&self, url: &str) -> Result<Place> {
        let (env, spec, token_env) = (self.env, &self.job.forge, self.job.git.token_env.as_deref());
        let input = Input { env, spec, token_env, remote_url: Some(url), env_repo: false, remote_trusted: true };
        let mut place = Place::decide(&input);
        if let Some(e) = &place.elsewhere {
            return Err(e.error());
        }
        let (redactor, bound) = (self.redactor, &self.target_bound());
        let cx = github::app::Context { env, shared: &self.shared, redactor, bound };
        github::app::into_place(&cx, self.job, &mut place).await?;
        // With hone's App, the campaign's identity is its bot (`slug[bot]`), known once per run:
        // its installation tokens may not read `GET /user`.
        let app = place.kind == Kind::Github && github::app::configured(env);
        if let (Some(t), None, true) = (&place.token, &place.login, app) {
            place.login = self.shared.app.identity(&cx, t.secret()).await?.map(|who| who.name);
        }
        Ok(place)
    }

    /// The forge's client for the place; the place's token stays with the client only.
    pub fn open(&self, mut place: Place) -> Result<Opened<'_>> {
        let Some(token) = place.token.as_ref() else {
            let var = place.token_source(self.job.git.token_env.as_deref());
            let what = place.forge_name();
            let scope = match place.kind {
                Kind::Gitlab => "a token with the `api` scope (role Developer or above)",
                Kind::Forgejo => "a token with the scopes `write:repository`, `write:issue` and `read:user`",
                _ => "a token that may read (and for close/merge, write) pull requests",
            };
            return Err(HoneError::new(Code::Forge, format!("{var} is not set: no token for the {what} API"))
                .hint(format!("set {var} to {scope}")));
        };
        self.redactor.add(token.secret());
        // Whose token: the API and the token itself (a key in memory only).
        let key = format!("{}\n{}", place.api()?, token.secret());
        let (sent, ids) = (&self.sent, &self.ids);
        let opened = match place.kind {
            Kind::Gitlab => {
                let gl = GitLab::new(&place, self.shared.queue.clone(), &self.target_bound())?;
                let repo = gl.project.clone();
                Opened { api: Api::Lab(gitlab::campaign::Api { gl, sent, ids, key }), repo }
            }
            Kind::Github => {
                let gh = self.hub(&place, token.secret())?;
                let repo = format!("{}/{}", gh.owner, gh.repo);
                let login = place.login.clone();
                Opened { api: Api::Hub(github::campaign::Api { gh, sent, login, ids, key }), repo }
            }
            Kind::Forgejo => {
                let fj = crate::forge::forgejo::Forgejo::new(&place, self.shared.queue.clone(), &self.target_bound())?;
                let repo = fj.repo.clone();
                Opened { api: Api::Fj(crate::forge::forgejo::campaign::Api { fj, sent, ids, key }), repo }
            }
        };
        place.token = None;
        Ok(opened)
    }

    /// One target's bound: `TARGET_LIMIT` from now, and the campaign's cancellation.
    fn target_bound(&self) -> crate::bound::Bound {
        crate::bound::Bound::new(tokio::time::Instant::now() + TARGET_LIMIT, self.cancel)
    }

    /// The GitHub client for `owner/repo` at the place's API with its token.
    fn hub(&self, place: &Place, token: &str) -> Result<GitHub> {
        let Some((owner, repo)) = place.repo.as_deref().and_then(|r| r.split_once('/')) else {
            return Err(HoneError::new(Code::Forge, "cannot tell the GitHub repository from the target's URL"));
        };
        let key = (place.api()?.to_string(), token.to_string());
        let mut hubs = self.hubs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = hubs.get(&key) {
            return c.with_repo(owner, repo);
        }
        let c = GitHub::new(place.api()?, token, owner, repo, self.shared.queue.clone())?;
        let mine = c.with_repo(owner, repo)?;
        hubs.insert(key, c);
        Ok(mine)
    }
}
