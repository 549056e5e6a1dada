//! The two OAuth grants at a token endpoint that hone makes from a credentials file: a service
//! account's signed JWT (`urn:ietf:params:oauth:grant-type:jwt-bearer`, RFC 7523) and an
//! authorized user's refresh token (gcloud's `application_default_credentials.json`).

use super::credfile::{AuthorizedUser, CredFileError, ServiceAccount};
use super::jwt;
use super::token::{self, Context, SCOPE};
use crate::jwt::Signer;
use crate::model::ModelError;
use crate::model::auth::{Expiring, Source};
use futures_util::future::BoxFuture;
use std::time::{SystemTime, UNIX_EPOCH};

/// A service account: each token is bought with a fresh assertion signed by its key.
pub struct ServiceAccountGrant {
    http: reqwest::Client,
    signer: Signer,
    email: String,
    token_uri: String,
    ctx: Context,
}

impl ServiceAccountGrant {
    /// The grant for `sa`; a key that cannot be read is an error naming what is wrong with it.
    pub fn new(http: reqwest::Client, sa: &ServiceAccount, origin: String) -> Result<Self, CredFileError> {
        let signer = Signer::from_pem(&sa.private_key, sa.private_key_id.clone())?;
        let ctx = Context {
            kind: "service_account",
            origin,
            check: "that the key in the file is current (not deleted or disabled in IAM) and that its `client_email` and `token_uri` are the service account's",
        };
        Ok(ServiceAccountGrant { http, signer, email: sa.client_email.clone(), token_uri: sa.token_uri.clone(), ctx })
    }

    async fn exchange(&self) -> Result<Expiring<String>, ModelError> {
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let claims = jwt::claims(&self.email, &self.token_uri, SCOPE, secs);
        let assertion = self.signer.assertion(&claims).map_err(|e| self.ctx.refused("the key", e))?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion.as_str())];
        let rb = token::post_form(&self.http, &self.token_uri, &form);
        let v = token::send(&self.ctx, &self.token_uri, rb).await?;
        token::access_token(&self.ctx, &self.token_uri, &v, "access_token", now)
    }
}

impl Source<String> for ServiceAccountGrant {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
        Box::pin(self.exchange())
    }
}

/// An authorized user (`gcloud auth application-default login`): its refresh token, exchanged.
pub struct RefreshGrant {
    http: reqwest::Client,
    client_id: String,
    client_secret: String,
    refresh_token: String,
    token_uri: String,
    ctx: Context,
}

impl RefreshGrant {
    pub fn new(http: reqwest::Client, u: &AuthorizedUser, origin: String) -> Self {
        let ctx = Context {
            kind: "authorized_user",
            origin,
            check: "that the login is still valid: run `gcloud auth application-default login` again",
        };
        RefreshGrant {
            http,
            client_id: u.client_id.clone(),
            client_secret: u.client_secret.clone(),
            refresh_token: u.refresh_token.clone(),
            token_uri: u.token_uri.clone(),
            ctx,
        }
    }

    async fn exchange(&self) -> Result<Expiring<String>, ModelError> {
        let now = SystemTime::now();
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
            ("refresh_token", self.refresh_token.as_str()),
        ];
        let rb = token::post_form(&self.http, &self.token_uri, &form);
        let v = token::send(&self.ctx, &self.token_uri, rb).await?;
        token::access_token(&self.ctx, &self.token_uri, &v, "access_token", now)
    }
}

impl Source<String> for RefreshGrant {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
        Box::pin(self.exchange())
    }
}
