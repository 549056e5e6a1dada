//! Git over HTTPS to the stand-in's repositories: Basic credentials whose password is a token
//! of the stand-in (any user name, as Forgejo takes a token), pushes only by a writer; then `git
//! http-backend` on the bare repository.

use super::Shared;
use crate::common::git_http::{basic_credentials, cgi};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;

fn text(status: StatusCode, body: &str) -> Response {
    let mut r = Response::builder().status(status).body(Body::from(body.to_string())).unwrap();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert("www-authenticate", "Basic realm=\"Gitea\"".parse().unwrap());
    }
    r
}

pub async fn handle(s: &Shared, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let path = uri.path().trim_start_matches('/');
    let Some((repo, rest)) = path.split_once(".git/") else { return text(StatusCode::NOT_FOUND, "Not found.\n") };
    let push = rest == "git-receive-pack" || uri.query().is_some_and(|q| q.contains("service=git-receive-pack"));
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    let Some((user, password)) = authorization.and_then(basic_credentials) else {
        return text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
    };
    let full = {
        let mut st = s.state.lock().unwrap();
        st.git_credentials.push((user, password.clone()));
        let Some(me) = st.tokens.iter().find(|(t, _)| *t == password).map(|(_, u)| *u) else {
            return text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
        };
        let Some(r) = st.repo(repo) else { return text(StatusCode::NOT_FOUND, "Repository not found\n") };
        if push && !st.may_write(r, me) {
            return text(StatusCode::FORBIDDEN, "User permission denied for writing.\n");
        }
        r.full_name.clone()
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let rewritten: Uri = format!("/{full}.git/{rest}{query}").parse().expect("a repository path is a URI");
    cgi(&s.repos, method, &rewritten, headers, body).await
}
