//! Git over HTTPS to the stand-in's projects: GitLab's credential and permission checks
//! (`lib/gitlab/auth.rb`, `lib/gitlab/git_access.rb`), then `git http-backend` on the bare
//! repository.

use super::Shared;
use super::auth::{git_abilities, git_token};
use super::state::{Kind, State};
use crate::common::git_http::{basic_credentials, cgi};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;

const ACCESS_DENIED: &str = "HTTP Basic: Access denied. If a password was provided for Git authentication, the \
password was incorrect or you're required to use a token instead of a password. If a token was provided, it was \
either incorrect, expired, or improperly scoped. See \
https://docs.gitlab.com/topics/git/troubleshooting_git/#error-on-git-fetch-http-basic-access-denied";

const NOT_FOUND: &str = "The project you were looking for could not be found or you don't have permission to view it.";

fn text(status: StatusCode, body: &str) -> Response {
    Response::builder().status(status).header("content-type", "text/plain").body(Body::from(body.to_string())).unwrap()
}

/// 401 with GitLab's Basic challenge, which makes git ask its credential helpers.
fn challenge(body: &str) -> Response {
    let mut r = text(StatusCode::UNAUTHORIZED, body);
    r.headers_mut().insert("www-authenticate", "Basic realm=\"GitLab\"".parse().unwrap());
    r
}

/// `acme/app.git/info/refs` → (`acme/app`, `info/refs`); the `.git` suffix is optional.
fn split_repo_path(path: &str) -> Option<(String, String)> {
    let path = path.trim_start_matches('/');
    if let Some((repo, rest)) = path.split_once(".git/") {
        return Some((repo.to_string(), rest.to_string()));
    }
    ["info/refs", "git-upload-pack", "git-receive-pack"]
        .iter()
        .find_map(|tail| path.strip_suffix(tail)?.strip_suffix('/').map(|repo| (repo.to_string(), tail.to_string())))
}

pub async fn handle(s: &Shared, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let Some((repo, rest)) = split_repo_path(uri.path()) else {
        return text(StatusCode::NOT_FOUND, "Not Found");
    };
    let service = match rest.as_str() {
        "info/refs" => super::params::pairs(uri.query().unwrap_or_default())
            .into_iter()
            .find(|(k, _)| k == "service")
            .map(|(_, v)| v)
            .unwrap_or_default(),
        other => other.to_string(),
    };
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    let decided = decide(&mut s.state.lock().unwrap(), &repo, service == "git-receive-pack", authorization);
    let project_path = match decided {
        Ok(p) => p,
        Err((StatusCode::UNAUTHORIZED, body)) => return challenge(&body),
        Err((status, body)) => return text(status, &body),
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let rewritten: Uri = format!("/{project_path}.git/{rest}{query}").parse().expect("a repository path is a URI");
    cgi(&s.repos, method, &rewritten, headers, body).await
}

/// A refusal: its status and text (a 401 goes with GitLab's challenge).
type Refusal = (StatusCode, String);

/// GitLab's checks, in its order: the credentials (401), the token's abilities (403), the project
/// (404, or 403 for a job token from another project), the job token push setting (403).
fn decide(st: &mut State, repo: &str, push: bool, authorization: Option<&str>) -> Result<String, Refusal> {
    let refuse = |status: StatusCode, body: &str| Err((status, body.to_string()));
    let Some((user, password)) = authorization.and_then(basic_credentials) else {
        return refuse(StatusCode::UNAUTHORIZED, "HTTP Basic: Access denied\n");
    };
    st.git_credentials.push((user.clone(), password.clone()));
    let project = st.project(repo);
    let Some(t) = git_token(st, &user, &password) else { return refuse(StatusCode::UNAUTHORIZED, ACCESS_DENIED) };
    // A project or group bot's token authenticates only where its bot can read the project.
    let bot = matches!(t.kind, Kind::Project | Kind::Group);
    if bot && !project.is_some_and(|p| st.token_sees(t, p)) {
        return refuse(StatusCode::UNAUTHORIZED, ACCESS_DENIED);
    }
    let abilities = git_abilities(t);
    if !push && !abilities.download {
        return refuse(StatusCode::FORBIDDEN, "You are not allowed to download code.");
    }
    if push && !abilities.push {
        return refuse(StatusCode::FORBIDDEN, "You are not allowed to upload code.");
    }
    let Some(p) = project else { return refuse(StatusCode::NOT_FOUND, NOT_FOUND) };
    if t.kind == Kind::Job && !st.token_sees(t, p) {
        let from = t.scope_path.as_deref().unwrap_or_default().rsplit('/').next().unwrap_or_default();
        let to = p.path.rsplit('/').next().unwrap_or_default();
        let msg = format!("Authentication by CI/CD job token not allowed from {from} to {to}.");
        return refuse(StatusCode::FORBIDDEN, &msg);
    }
    if push && t.kind == Kind::Job && !p.job_token_push {
        return refuse(StatusCode::FORBIDDEN, "You are not allowed to push code to this project.");
    }
    // GitLab keeps each merge request's head in its target project as it is pushed.
    super::mr_diff::sync_all(st, p.id);
    Ok(p.path.clone())
}
