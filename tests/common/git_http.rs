//! A git server over HTTP or HTTPS for tests: `git http-backend` (git's own smart-HTTP server,
//! run as a CGI program) behind a small local server that records every request and its
//! `Authorization` header. It can ask for credentials first (401), demand the ones GitHub would,
//! or redirect every request elsewhere, the way a hostile server would. `cgi` is shared with the
//! GitLab stand-in (`mock_gitlab`).

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How the server answers.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Serves every repository under its root, and takes pushes, without credentials.
    Open,
    /// Answers 401 (Basic) to a request without credentials; serves one with any credentials.
    Auth,
    /// Answers every request with a 302 to this base URL plus the request's path and query.
    Redirect(String),
    /// Demands what GitHub does for git over HTTPS with an installation or `GITHUB_TOKEN` token:
    /// Basic with username `x-access-token` and this token. No credentials, or another username,
    /// get 401 with GitHub's challenge; the right username with another token gets 403.
    GitHub(String),
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
}

struct Server {
    root: PathBuf,
    mode: Mode,
    seen: Mutex<Vec<Seen>>,
}

pub struct GitHttp {
    /// `http://127.0.0.1:PORT` or `https://localhost:PORT`.
    pub base: String,
    server: Arc<Server>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GitHttp {
    /// A server over plain HTTP on 127.0.0.1, serving the bare repositories under `root`.
    pub async fn start(root: &Path, mode: Mode) -> GitHttp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = Arc::new(Server { root: root.to_path_buf(), mode, seen: Mutex::new(Vec::new()) });
        let app = axum::Router::new().fallback(handle).with_state(server.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        GitHttp { base, server, task }
    }

    /// A server over HTTPS at `https://localhost:PORT`, with the test certificate (trusted by
    /// git through `GIT_SSL_CAINFO=`[`test_ca`]).
    pub async fn start_tls(root: &Path, mode: Mode) -> GitHttp {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://localhost:{}", tcp.local_addr().unwrap().port());
        let server = Arc::new(Server { root: root.to_path_buf(), mode, seen: Mutex::new(Vec::new()) });
        let app = axum::Router::new().fallback(handle).with_state(server.clone());
        let listener = super::tls::TlsListener::new(tcp);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        GitHttp { base, server, task }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.server.seen.lock().unwrap().clone()
    }

    /// The `Authorization` headers received, decoded where they are Basic.
    pub fn credentials(&self) -> Vec<String> {
        use base64::Engine;
        self.seen()
            .into_iter()
            .filter_map(|s| s.authorization)
            .map(|a| match a.strip_prefix("Basic ") {
                Some(b) => base64::engine::general_purpose::STANDARD
                    .decode(b.trim())
                    .map(|d| String::from_utf8_lossy(&d).into_owned())
                    .unwrap_or(a),
                None => a,
            })
            .collect()
    }
}

/// The CA that signed the HTTPS server's certificate (for `GIT_SSL_CAINFO`).
pub fn test_ca() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls/ca.pem")
}

/// A bare repository `name` under `root` that `git http-backend` serves, made from `from`'s `main`.
pub fn serve_copy_of(root: &Path, name: &str, from: &Path) -> PathBuf {
    let bare = root.join(name);
    std::fs::create_dir_all(root).unwrap();
    super::repo::git(root, &["clone", "-q", "--bare", from.to_str().unwrap(), bare.to_str().unwrap()]);
    super::repo::git(&bare, &["config", "http.receivepack", "true"]);
    bare
}

async fn handle(State(s): State<Arc<Server>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let authorization = header("authorization");
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    s.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        authorization: authorization.clone(),
    });
    match &s.mode {
        Mode::Redirect(to) => {
            return Response::builder()
                .status(StatusCode::FOUND)
                .header("location", format!("{to}{path}"))
                .body(Body::empty())
                .unwrap();
        }
        Mode::Auth if authorization.is_none() => {
            return Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header("www-authenticate", "Basic realm=\"test\"")
                .body(Body::empty())
                .unwrap();
        }
        Mode::GitHub(token) => {
            if let Some(refused) = github_refusal(token, authorization.as_deref(), uri.path()) {
                return refused;
            }
        }
        _ => {}
    }
    cgi(&s.root, &method, &uri, &headers, body).await
}

/// GitHub's answer to a git request without the credentials `Mode::GitHub` demands, or `None`.
fn github_refusal(token: &str, authorization: Option<&str>, path: &str) -> Option<Response> {
    let (user, password) = match authorization.and_then(basic_credentials) {
        Some(pair) => pair,
        None => return Some(unauthorized("Basic realm=\"GitHub\"", "")),
    };
    if user != "x-access-token" {
        let msg = "remote: Invalid username or token. Password authentication is not supported for Git operations.\n";
        return Some(unauthorized("Basic realm=\"GitHub\"", msg));
    }
    if password != token {
        let repo = path.trim_start_matches('/').split("/info/").next().unwrap_or_default();
        let msg = format!("remote: Permission to {repo} denied to {user}.\n");
        return Some(Response::builder().status(StatusCode::FORBIDDEN).body(Body::from(msg)).unwrap());
    }
    None
}

fn unauthorized(challenge: &str, body: &str) -> Response {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header("www-authenticate", challenge)
        .header("content-type", "text/plain")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// The user name and password of a `Basic` `Authorization` header.
pub(crate) fn basic_credentials(authorization: &str) -> Option<(String, String)> {
    use base64::Engine;
    let encoded = authorization.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Run `git http-backend` for one request, serving the bare repositories under `root`, and turn
/// its CGI answer into a response.
pub(crate) async fn cgi(root: &Path, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    use tokio::io::AsyncWriteExt;
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut c = tokio::process::Command::new("git");
    c.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "test")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or(""))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding").unwrap_or_default())
        .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = c.spawn().expect("git http-backend starts");
    let mut stdin = child.stdin.take().unwrap();
    let feed = async move {
        let _ = stdin.write_all(&body).await;
    };
    let (out, ()) = tokio::join!(child.wait_with_output(), feed);
    let out = out.expect("git http-backend runs").stdout;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    let split = split.or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (at, sep) = split.unwrap_or((0, 0));
    let mut resp = Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(&out[..at]).lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim();
        if k.eq_ignore_ascii_case("status") {
            let code = v.split_whitespace().next().and_then(|c| c.parse().ok()).unwrap_or(500);
            resp = resp.status(code);
        } else {
            resp = resp.header(k.trim(), v);
        }
    }
    resp.body(Body::from(out[at + sep..].to_vec())).unwrap()
}
