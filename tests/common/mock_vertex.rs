//! A stand-in for Google Vertex AI and the identity services in front of it, checking what Google
//! checks, with code independent of hone's:
//!
//! - `identity`: the OAuth token endpoint named in a `service_account` file, which verifies the
//!   JWT assertion's RS256 signature with the service account's public key (RustCrypto's `rsa`,
//!   not the aws-lc-rs hone signs with) and its `iss`, `aud`, `scope`, `iat` and `exp` before it
//!   issues a token; the refresh-token grant of gcloud's file; STS, IAM's `generateAccessToken`
//!   and a GitHub-like OIDC token URL for workload identity federation; the metadata server,
//!   which wants `Metadata-Flavor: Google`.
//! - `model`: Claude's `rawPredict`/`streamRawPredict` (a token it issued, the project, region
//!   and model in the path, `anthropic_version: vertex-2023-10-16` and no `model` in the body,
//!   Anthropic's pairing rules) and the OpenAI-compatible endpoint for Gemini (`model:
//!   google/…`, Gemini's stream quirks, thought signatures that must come back). Either can be
//!   told to answer `RESOURCE_EXHAUSTED` a number of times first.
//!
//! A request the stand-in refuses as Google would is counted; any the test did not declare
//! (`expect_refusals`) fails the test when the stand-in is dropped.

mod identity;
mod model;

use super::mock_model::Turn;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const PROJECT: &str = "hone-test-project";
pub const REGION: &str = "us-east5";
pub const EMAIL: &str = "hone-test@hone-test-project.iam.gserviceaccount.com";
pub const CLAUDE: &str = "claude-sonnet-4-5@20250929";
pub const GEMINI: &str = "gemini-2.5-pro";
/// The workload identity pool provider the STS stand-in expects as `audience`.
pub const AUDIENCE: &str = "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/providers/gh";

/// The test key whose public half the token endpoint knows, and one it does not.
pub fn key(known: bool) -> String {
    let name = if known { "service-account-key.pem" } else { "other-key.pem" };
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vertex").join(name)).unwrap()
}

/// A random token-like string: the canaries tests look for in every output.
fn secret(prefix: &str) -> String {
    format!("{prefix}-{:032x}", rand::random::<u128>())
}

pub struct State {
    url: String,
    public_key: rsa::PublicKey,
    /// How long the tokens it issues live (`expires_in`).
    lifetime: Mutex<u64>,
    /// Access tokens the model endpoints accept, with when each expires.
    issued: Mutex<Vec<(String, Instant)>>,
    /// STS's federated tokens, which only IAM accepts.
    federated: Mutex<Vec<String>>,
    /// GitHub's OIDC request token, and the subject token it serves for it.
    pub request_token: String,
    pub subject_token: String,
    /// gcloud's refresh token and client secret.
    pub refresh_token: String,
    pub client_secret: String,
    /// Every identity request, as `endpoint: outcome`.
    identity_log: Mutex<Vec<String>>,
    /// The model's scripted turns.
    queue: Mutex<VecDeque<Turn>>,
    served: Mutex<usize>,
    /// `RESOURCE_EXHAUSTED` answers still to give before the next turn, of how many.
    exhausted: Mutex<(u32, u32)>,
    /// The thought signature given with each Gemini call, by call id.
    signatures: Mutex<HashMap<String, String>>,
    requests: Mutex<Vec<Seen>>,
    refused: Mutex<Vec<String>>,
}

/// A model request as the stand-in saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub token: String,
    pub body: Value,
}

impl State {
    fn log(&self, line: String) {
        self.identity_log.lock().unwrap().push(line);
    }

    /// A new access token for the model endpoints (tagged with who issued it).
    fn issue(&self, who: &str) -> (String, u64) {
        let life = *self.lifetime.lock().unwrap();
        let token = secret(&format!("ya29.{who}"));
        self.issued.lock().unwrap().push((token.clone(), Instant::now() + Duration::from_secs(life)));
        (token, life)
    }

    fn valid(&self, token: &str) -> bool {
        self.issued.lock().unwrap().iter().any(|(t, until)| t == token && Instant::now() < *until)
    }

    fn refuse(&self, why: String) {
        self.refused.lock().unwrap().push(why);
    }
}

pub struct MockVertex {
    /// `http://127.0.0.1:PORT`: the model's `base_url`, and the root of every identity URL.
    pub url: String,
    state: Arc<State>,
    expected_refusals: Mutex<usize>,
}

impl Drop for MockVertex {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let refused = self.state.refused.lock().unwrap().clone();
        let expected = *self.expected_refusals.lock().unwrap();
        assert_eq!(refused.len(), expected, "the Vertex stand-in refused requests as Google would: {refused:#?}");
    }
}

impl MockVertex {
    pub async fn start() -> MockVertex {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            url: url.clone(),
            public_key: identity::public_key(&key(true)),
            lifetime: Mutex::new(3599),
            issued: Mutex::default(),
            federated: Mutex::default(),
            request_token: secret("gh-request"),
            subject_token: secret("eyJ.gh-oidc"),
            refresh_token: secret("1//refresh"),
            client_secret: secret("GOCSPX"),
            identity_log: Mutex::default(),
            queue: Mutex::default(),
            served: Mutex::default(),
            exhausted: Mutex::default(),
            signatures: Mutex::default(),
            requests: Mutex::default(),
            refused: Mutex::default(),
        });
        let app = identity::routes().merge(model::routes()).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockVertex { url, state, expected_refusals: Mutex::new(0) }
    }

    /// Declare how many requests the test expects the stand-in to refuse.
    pub fn expect_refusals(&self, n: usize) -> &Self {
        *self.expected_refusals.lock().unwrap() = n;
        self
    }

    /// Tokens issued from now on live `secs` seconds.
    pub fn token_lifetime(&self, secs: u64) -> &Self {
        *self.state.lifetime.lock().unwrap() = secs;
        self
    }

    /// Queue the model's next turn (either model family renders it in its own shape).
    pub fn turn(&self, t: Turn) -> &Self {
        self.state.queue.lock().unwrap().push_back(t);
        self
    }

    /// Answer the next `n` model requests with `RESOURCE_EXHAUSTED` (429).
    pub fn exhaust(&self, n: u32) -> &Self {
        *self.state.exhausted.lock().unwrap() = (n, n);
        self
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn identity_log(&self) -> Vec<String> {
        self.state.identity_log.lock().unwrap().clone()
    }

    pub fn refusals(&self) -> Vec<String> {
        self.state.refused.lock().unwrap().clone()
    }

    /// Every access token it issued (model and federated ones).
    pub fn tokens(&self) -> Vec<String> {
        let mut all: Vec<String> = self.state.issued.lock().unwrap().iter().map(|(t, _)| t.clone()).collect();
        all.extend(self.state.federated.lock().unwrap().iter().cloned());
        all
    }

    /// The secrets of the identity dance other than access tokens.
    pub fn other_secrets(&self) -> Vec<String> {
        let s = &self.state;
        vec![s.request_token.clone(), s.subject_token.clone(), s.refresh_token.clone(), s.client_secret.clone()]
    }

    /// The metadata server's `host:port`, for `GCE_METADATA_HOST`.
    pub fn metadata_host(&self) -> String {
        self.url.trim_start_matches("http://").to_string()
    }

    /// Write a `service_account` file at `path` with the known key (or another one).
    pub fn service_account_file(&self, path: &Path, known_key: bool) -> PathBuf {
        let v = json!({"type": "service_account", "project_id": PROJECT, "private_key_id": "0123abcd",
            "private_key": key(known_key), "client_email": EMAIL, "client_id": "1234567890",
            "token_uri": format!("{}/token", self.url), "universe_domain": "googleapis.com"});
        write(path, &v)
    }

    /// Write gcloud's `authorized_user` file at `path`.
    pub fn authorized_user_file(&self, path: &Path) -> PathBuf {
        let v = json!({"type": "authorized_user", "client_id": "764086051850-test.apps.googleusercontent.com",
            "client_secret": self.state.client_secret, "refresh_token": self.state.refresh_token,
            "quota_project_id": PROJECT, "token_uri": format!("{}/token", self.url)});
        write(path, &v)
    }

    /// Write an `external_account` file at `path` as google-github-actions/auth does: the
    /// subject token from the OIDC URL, exchanged at STS, then for the service account's token.
    pub fn external_account_file(&self, path: &Path) -> PathBuf {
        let u = &self.url;
        let v = json!({"type": "external_account", "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{u}/sts/v1/token"),
            "service_account_impersonation_url": format!("{u}/iam/v1/projects/-/serviceAccounts/{EMAIL}:generateAccessToken"),
            "credential_source": {"url": format!("{u}/oidc?api-version=2.0&audience=https://iam.googleapis.com{}", AUDIENCE.trim_start_matches("//iam.googleapis.com")),
                "headers": {"Authorization": format!("Bearer {}", self.state.request_token)},
                "format": {"type": "json", "subject_token_field_name": "value"}}});
        write(path, &v)
    }
}

fn write(path: &Path, v: &Value) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
    path.to_path_buf()
}
