//! Who a request is, as GitLab decides it: the API's token headers and scopes (`lib/api/api_guard.rb`,
//! `lib/gitlab/auth/auth_finders.rb`), and git's Basic credentials (`lib/gitlab/auth.rb`).

use super::entities::Reply;
use super::params::pairs;
use super::state::{Auth, Kind, State, TokenRecord};
use axum::http::HeaderMap;
use serde_json::json;

/// The credentials a request carries, in the order GitLab looks for them.
pub fn auth_of(headers: &HeaderMap, query: &str) -> Auth {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Some(t) = header("private-token") {
        return Auth::PrivateToken(t);
    }
    if let Some(a) = header("authorization") {
        if let Some(t) = a.strip_prefix("Bearer ") {
            return Auth::Bearer(t.trim().to_string());
        }
        if let Some((user, password)) = crate::common::git_http::basic_credentials(&a) {
            return Auth::Basic(user, password);
        }
    }
    if let Some(t) = header("job-token") {
        return Auth::JobToken(t);
    }
    for (k, v) in pairs(query) {
        match k.as_str() {
            "private_token" => return Auth::PrivateToken(v),
            "access_token" => return Auth::Bearer(v),
            "job_token" => return Auth::JobToken(v),
            _ => {}
        }
    }
    Auth::None
}

/// What an endpoint lets in.
#[derive(Clone, Copy)]
pub struct Policy {
    /// A job token is read on this endpoint (elsewhere GitLab ignores it: the request is anonymous).
    pub job_token: bool,
    /// An anonymous request gets 401 (GitLab's `authenticate!`); otherwise it goes on as anonymous.
    pub authenticate: bool,
    /// Scopes accepted besides `api` (and `read_api` for reads): `read_user` on the users API.
    pub read_user: bool,
    /// Any scope will do (`/personal_access_tokens/self`: a token may always read itself).
    pub any_scope: bool,
}

/// The token a request authenticates with (its value), `None` for an anonymous request, or the
/// answer GitLab gives: 401 `{"message":"401 Unauthorized"}` for a token it does not know.
pub fn api_caller(st: &State, auth: &Auth, policy: Policy) -> Result<Option<String>, Reply> {
    let (token, job) = match auth {
        Auth::PrivateToken(t) | Auth::Bearer(t) => (t, false),
        Auth::JobToken(t) if policy.job_token => (t, true),
        Auth::JobToken(_) | Auth::Basic(..) | Auth::None => {
            return if policy.authenticate { Err(Reply::unauthorized()) } else { Ok(None) };
        }
    };
    match st.tokens.get(token) {
        Some(t) if (t.kind == Kind::Job) == job => Ok(Some(token.clone())),
        _ => Err(Reply::unauthorized()),
    }
}

/// GitLab's 403 for a token without the scope an endpoint needs. Note that GitLab sends no
/// `WWW-Authenticate` header with it (see tests/data/gitlab/README.md).
pub fn scope_refusal(t: &TokenRecord, method: &str, policy: Policy) -> Option<Reply> {
    if t.kind == Kind::Job || policy.any_scope {
        return None;
    }
    let mut accepted = vec!["api"];
    if method == "GET" {
        accepted.push("read_api");
        if policy.read_user {
            accepted.push("read_user");
        }
    }
    if t.scopes.iter().any(|s| accepted.contains(&s.as_str())) {
        return None;
    }
    Some(Reply::json(
        403,
        json!({
            "error": "insufficient_scope",
            "error_description": "The request requires higher privileges than provided by the access token.",
            "scope": accepted.join(" "),
        }),
    ))
}

/// What git credentials may do (`lib/gitlab/auth.rb`'s abilities).
pub struct GitAbilities {
    pub download: bool,
    pub push: bool,
}

/// The token git's Basic credentials name, as GitLab finds it: a job token only with the user
/// name `gitlab-ci-token`; any other token with any user name. `None`: GitLab answers 401.
pub fn git_token<'a>(st: &'a State, user: &str, password: &str) -> Option<&'a TokenRecord> {
    let t = st.tokens.get(password)?;
    match t.kind {
        Kind::Job => (user == "gitlab-ci-token").then_some(t),
        _ => Some(t),
    }
}

pub fn git_abilities(t: &TokenRecord) -> GitAbilities {
    if t.kind == Kind::Job {
        return GitAbilities { download: true, push: true };
    }
    let has = |names: &[&str]| t.scopes.iter().any(|s| names.contains(&s.as_str()));
    GitAbilities {
        download: has(&["api", "read_api", "read_repository", "write_repository"]),
        push: has(&["api", "write_repository"]),
    }
}
