//! What a process keeps of its GitHub App between requests and between runs (a fleet's runs
//! share it through `env::Shared`): the App (its key read once), the HTTP client, each owner's
//! installation, each repository's token until five minutes before it expires, and the bot's
//! identity. Every token is registered with the redactor before anything can use it.

use super::Context;
use super::api::{Api, Minted};
use super::config::App;
use super::identity::Identity;
use super::permissions::Permissions;
use crate::error::{Code, HoneError, Result};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

/// The App's state, shared by clones: one lock, so that concurrent runs wait for one request
/// rather than each making their own.
#[derive(Clone, Default)]
pub struct Cache(Arc<tokio::sync::Mutex<State>>);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("github_app::Cache")
    }
}

#[derive(Default)]
struct State {
    app: Option<Arc<App>>,
    http: Option<reqwest::Client>,
    /// Installation ids by owner (lower case): one installation per owner.
    installations: HashMap<String, u64>,
    /// Tokens by owner, repository (lower case) and permissions.
    tokens: HashMap<(String, String, String), Minted>,
    identity: Option<Identity>,
    /// The JWT last signed, and when (Unix seconds): reused for five minutes of its ten, so
    /// that a fleet registers a dozen with the redactor an hour, not one per repository.
    jwt: Option<(String, u64)>,
}

/// How long a signed JWT is used again.
const JWT_REUSE_SECS: u64 = 5 * 60;

/// Whether a token expiring at `expires_at` may still be used at `now`: it has more than
/// `model::auth::REFRESH_BEFORE` (five minutes) to live, so it cannot expire during a push.
pub fn reusable(expires_at: SystemTime, now: SystemTime) -> bool {
    crate::model::auth::fresh(Some(expires_at), now)
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl State {
    /// The App, read from the environment the first time; `None` when none is configured.
    fn app(&mut self, cx: &Context<'_>) -> Result<Option<Arc<App>>> {
        if self.app.is_none() {
            self.app = App::from_env(cx.env, cx.redactor)?.map(Arc::new);
        }
        Ok(self.app.clone())
    }

    /// The client for `GITHUB_API_URL`, which must be HTTPS (or this machine): the JWT and the
    /// tokens go nowhere else.
    fn http(&mut self, base: &str) -> Result<reqwest::Client> {
        if !crate::model::http::https_or_loopback(base) {
            return Err(HoneError::new(
                Code::Spec,
                format!(
                    "GITHUB_API_URL `{base}` is not an HTTPS URL: the GitHub App's JWT and tokens go only over HTTPS"
                ),
            )
            .hint(
                "set GITHUB_API_URL to https://api.github.com or your GitHub Enterprise Server's https://HOST/api/v3",
            ));
        }
        if let Some(c) = &self.http {
            return Ok(c.clone());
        }
        let client = crate::model::http::client(base).map_err(|e| HoneError::new(Code::Forge, e.message))?;
        self.http = Some(client.clone());
        Ok(client)
    }

    /// A JWT for `app`: the last one while it is younger than five minutes, else a new one,
    /// registered with the redactor before it is sent.
    fn jwt(&mut self, app: &App, redactor: &crate::redact::Redactor) -> Result<String> {
        let now = unix_now();
        if let Some((jwt, at)) = &self.jwt
            && now.saturating_sub(*at) < JWT_REUSE_SECS
        {
            return Ok(jwt.clone());
        }
        let jwt = app.jwt(now)?;
        redactor.add(&jwt);
        self.jwt = Some((jwt.clone(), now));
        Ok(jwt)
    }
}

impl Cache {
    /// A token for `owner/repo` with `p`: the one kept while it has more than five minutes to
    /// live, else a new one from the owner's installation (looked up once per owner). `None`
    /// when the environment configures no App.
    pub async fn token(&self, cx: &Context<'_>, p: &Permissions, owner: &str, repo: &str) -> Result<Option<String>> {
        let mut st = self.0.lock().await;
        let Some(app) = st.app(cx)? else { return Ok(None) };
        let key = (owner.to_ascii_lowercase(), repo.to_ascii_lowercase(), p.to_string());
        if let Some(m) = st.tokens.get(&key)
            && reusable(m.expires_at, SystemTime::now())
        {
            return Ok(Some(m.token.clone()));
        }
        let base = crate::forge::github::api::of(cx.env).map_err(|e| e.error())?;
        let http = st.http(&base)?;
        let api = Api { http: &http, base: &base, app_id: &app.id, bound: cx.bound };
        let jwt = st.jwt(&app, cx.redactor)?;
        let installation = match st.installations.get(&key.0) {
            Some(id) => *id,
            None => {
                let id = api.installation(&jwt, owner, repo).await?;
                st.installations.insert(key.0.clone(), id);
                id
            }
        };
        let minted = match api.mint(&jwt, installation, owner, repo, p).await {
            Ok(m) => m,
            Err(e) => {
                // The installation may be gone (uninstalled, moved): look it up again next time.
                st.installations.remove(&key.0);
                return Err(e);
            }
        };
        cx.redactor.add(&minted.token);
        tracing::debug!(owner, repo, installation, permissions = %p, "minted a GitHub App installation token");
        let token = minted.token.clone();
        st.tokens.insert(key, minted);
        Ok(Some(token))
    }

    /// The App's bot user (`GET /app` for its slug, with the JWT; `GET /users/{slug}[bot]` for
    /// its id, with `token`), asked once per process.
    pub async fn identity(&self, cx: &Context<'_>, token: &str) -> Result<Option<Identity>> {
        let mut st = self.0.lock().await;
        if let Some(who) = &st.identity {
            return Ok(Some(who.clone()));
        }
        let Some(app) = st.app(cx)? else { return Ok(None) };
        let base = crate::forge::github::api::of(cx.env).map_err(|e| e.error())?;
        let http = st.http(&base)?;
        let api = Api { http: &http, base: &base, app_id: &app.id, bound: cx.bound };
        let jwt = st.jwt(&app, cx.redactor)?;
        let slug = api.slug(&jwt).await?;
        let id = api.user_id(token, &Identity::login(&slug)).await?;
        let who = Identity::bot(&slug, id);
        st.identity = Some(who.clone());
        Ok(Some(who))
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
