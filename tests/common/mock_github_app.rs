//! A stand-in for GitHub's API as a GitHub App sees it, checking what GitHub checks with code
//! independent of hone's:
//!
//! - the App's endpoints (`GET /app`, `GET /repos/{owner}/{repo}/installation`,
//!   `POST /app/installations/{id}/access_tokens`) want a JWT whose RS256 signature verifies
//!   with the App's public key (RustCrypto's `rsa`, not the aws-lc-rs hone signs with), whose
//!   `iss` is the App and whose lifetime is at most ten minutes and has begun;
//! - each owner has its own installation (an owner it was not installed on answers 404);
//! - a token is minted only for exactly one repository and permissions the App was granted
//!   (else 422, as GitHub does), and expires when the test says;
//! - the pull request endpoints (and `GET /users/{login}`) take only a token it minted, unexpired,
//!   for that very repository (`Authorization: Bearer` or `token`), and answer as GitHub does.
//!
//! Every request is recorded. A request it refuses is counted; any the test did not declare
//! (`expect_refusals`) fails the test when the stand-in is dropped.

mod routes;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rsa::pkcs1::DecodeRsaPrivateKey;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub const APP_ID: u64 = 424242;
pub const SLUG: &str = "hone-test-app";
pub const BOT_ID: u64 = 98765432;

/// The App's key file (`known`), or a key GitHub does not know for it.
pub fn key_path(known: bool) -> PathBuf {
    let name = if known { "app-key.pem" } else { "other-key.pem" };
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github_app").join(name)
}

/// The text of `key_path(known)`.
pub fn key(known: bool) -> String {
    std::fs::read_to_string(key_path(known)).unwrap()
}

/// The public half of the App's PKCS#1 PEM key, read without hone's code.
fn public_key() -> rsa::PublicKey {
    let b64: String = key(true).lines().filter(|l| !l.starts_with("-----")).collect();
    rsa::PrivateKey::from_pkcs1_der(&STANDARD.decode(b64).unwrap()).unwrap().to_public_key()
}

/// A token the stand-in minted.
#[derive(Clone, Debug)]
pub struct Minted {
    pub token: String,
    pub owner: String,
    pub repo: String,
    pub permissions: BTreeMap<String, String>,
    pub expires: SystemTime,
}

/// A request as the stand-in saw it: method, path, and the credential it carried (`jwt`, the
/// token itself, or `none`).
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub credential: String,
    pub body: serde_json::Value,
}

pub struct State {
    public_key: rsa::PublicKey,
    /// The owners the App is installed on, with their installation ids.
    installations: BTreeMap<String, u64>,
    /// The repository permissions the App was granted.
    granted: Mutex<BTreeMap<String, String>>,
    /// How long the tokens it mints live.
    lifetime: Mutex<Duration>,
    minted: Mutex<Vec<Minted>>,
    seen: Mutex<Vec<Seen>>,
    refused: Mutex<Vec<String>>,
    next_pr: Mutex<u64>,
    /// Open PRs for autofix: number → (head branch, head sha).
    prs: Mutex<BTreeMap<u64, (String, String)>>,
    /// Comments on PRs: (id, author's login, body).
    comments: Mutex<Vec<(u64, String, String)>>,
}

impl State {
    fn refuse(&self, why: String) {
        self.refused.lock().unwrap().push(why);
    }

    fn installation_owner(&self, id: u64) -> Option<String> {
        self.installations.iter().find(|(_, i)| **i == id).map(|(o, _)| o.clone())
    }
}

pub struct MockGithubApp {
    /// `http://127.0.0.1:PORT`: `GITHUB_API_URL`.
    pub url: String,
    state: Arc<State>,
    expected_refusals: Mutex<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockGithubApp {
    fn drop(&mut self) {
        self.task.abort();
        if std::thread::panicking() {
            return;
        }
        let refused = self.state.refused.lock().unwrap().clone();
        let expected = *self.expected_refusals.lock().unwrap();
        assert_eq!(refused.len(), expected, "the GitHub stand-in refused requests as GitHub would: {refused:#?}");
    }
}

impl MockGithubApp {
    /// The App installed on `owners` (installation ids 1001, 1002, … in that order), granted
    /// `contents`, `pull_requests` and `issues` write, minting tokens that live an hour.
    pub async fn start(owners: &[&str]) -> MockGithubApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let granted = [("contents", "write"), ("pull_requests", "write"), ("issues", "write")];
        let state = Arc::new(State {
            public_key: public_key(),
            installations: owners.iter().enumerate().map(|(i, o)| (o.to_lowercase(), 1001 + i as u64)).collect(),
            granted: Mutex::new(granted.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            lifetime: Mutex::new(Duration::from_secs(3600)),
            minted: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            next_pr: Mutex::new(1),
            prs: Mutex::new(BTreeMap::new()),
            comments: Mutex::new(Vec::new()),
        });
        let app = routes::routes().with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockGithubApp { url, state, expected_refusals: Mutex::new(0), task }
    }

    /// Tokens minted from now on live `life` (GitHub's live an hour).
    pub fn token_lifetime(&self, life: Duration) {
        *self.state.lifetime.lock().unwrap() = life;
    }

    /// The App is granted only `permissions` (as `(name, level)`).
    pub fn grant_only(&self, permissions: &[(&str, &str)]) {
        *self.state.granted.lock().unwrap() = permissions.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    }

    /// This many refusals are part of the test.
    pub fn expect_refusals(&self, n: usize) {
        *self.expected_refusals.lock().unwrap() = n;
    }

    pub fn refusals(&self) -> Vec<String> {
        self.state.refused.lock().unwrap().clone()
    }

    pub fn minted(&self) -> Vec<Minted> {
        self.state.minted.lock().unwrap().clone()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The requests to `path` (exactly) or, with a trailing `*`, under it.
    pub fn seen_at(&self, path: &str) -> Vec<Seen> {
        let under = path.strip_suffix('*');
        self.seen().into_iter().filter(|s| under.map_or(s.path == path, |p| s.path.starts_with(p))).collect()
    }

    /// PR `n` of every repository is open, from `head_ref` at `sha` onto `main`, in the same repository.
    pub fn open_pr(&self, n: u64, head_ref: &str, sha: &str) {
        self.state.prs.lock().unwrap().insert(n, (head_ref.to_string(), sha.to_string()));
    }

    /// The comments on PRs, as (author's login, body).
    pub fn comments(&self) -> Vec<(String, String)> {
        self.state.comments.lock().unwrap().iter().map(|(_, l, b)| (l.clone(), b.clone())).collect()
    }

    /// The environment that makes hone this App: its id, its key file, and this API.
    pub fn env(&self, key_file: &Path) -> Vec<(String, String)> {
        vec![
            ("GITHUB_APP_ID".into(), APP_ID.to_string()),
            ("GITHUB_APP_PRIVATE_KEY_FILE".into(), key_file.display().to_string()),
            ("GITHUB_API_URL".into(), self.url.clone()),
        ]
    }
}
