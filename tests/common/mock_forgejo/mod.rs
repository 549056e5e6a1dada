//! A Forgejo (Gitea) instance for tests, on one HTTPS address: `/api/v1/…` is its REST API and
//! every other path is git smart-HTTP to its repositories' bare clones. It behaves like Forgejo,
//! not like hone, so hone's Forgejo client can fail against it.
//!
//! ```ignore
//! let fj = MockForgejo::start(dir.path()).await;          // fj.base: https://localhost:PORT
//! fj.add_token(TOKEN, "hone-bot");                         // `Authorization: token …` → that user
//! fj.add_repo("acme/app", &repo.path);                     // bare clone at /acme/app.git
//! fj.add_writer("acme/app", "hone-bot");                   // may push, open, merge, delete
//! fj.fork("acme/app", "mallory/app");
//! let n = fj.add_pull("acme/app", "feature", "main", "Fix", "dev", None); // Some("mallory/app"): a fork's
//! fj.add_comment("acme/app", n, "dev", "a comment");
//! fj.set_status("acme/app", &sha, "ci", "success");
//! fj.add_review("acme/app", n, "lead", "APPROVED", true);
//! // … run hone against fj.base (GIT_SSL_CAINFO / SSL_CERT_FILE = git_http::test_ca()) …
//! assert!(fj.violations().is_empty(), "{:#?}", fj.violations());
//! ```
//!
//! Every API request is checked against `tests/fixtures/forgejo-api/operations.json` (Forgejo
//! 11.0.3's swagger, the operations hone uses): a method and path that is no operation, an
//! undeclared query parameter or one of the wrong type, a body property the schema does not
//! declare, of the wrong type, or a required one missing, gets 400 and is recorded in
//! `violations()`. So is an `Authorization` that is not `token …`; an unknown token gets 401.

mod api;
mod entities;
mod git;
mod ops;
mod pulls;
mod serve;
mod state;

pub use state::Seen;

use serde_json::Value;
use state::{Comment, Repo, Review, State, Status};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct Shared {
    state: Mutex<State>,
    repos: PathBuf,
    base: String,
}

pub struct MockForgejo {
    /// `https://localhost:PORT`, the server's URL; the API is `{base}/api/v1`.
    pub base: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockForgejo {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockForgejo {
    /// An instance over HTTPS (certificate for `localhost`, signed by `git_http::test_ca()`),
    /// keeping its repositories under `root`.
    pub async fn start(root: &Path) -> MockForgejo {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://localhost:{}", tcp.local_addr().unwrap().port());
        let repos = root.join(format!("forgejo-repos-{}", tcp.local_addr().unwrap().port()));
        std::fs::create_dir_all(&repos).unwrap();
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), repos, base: base.clone() });
        let app = axum::Router::new().fallback(serve::handle).with_state(shared.clone());
        let listener = super::tls::TlsListener::new(tcp);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockForgejo { base, shared, task }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap()
    }

    /// The API's base URL.
    pub fn api(&self) -> String {
        format!("{}/api/v1", self.base)
    }

    /// The git URL of a repository: `{base}/{owner/name}.git`.
    pub fn git_url(&self, full_name: &str) -> String {
        format!("{}/{full_name}.git", self.base)
    }

    /// The bare repository behind `full_name`.
    pub fn bare(&self, full_name: &str) -> PathBuf {
        self.state().repo(full_name).expect("no such repository").bare.clone()
    }

    /// A token acting as `login` (created when missing); the user's id.
    pub fn add_token(&self, token: &str, login: &str) -> u64 {
        let mut st = self.state();
        let id = st.user_id(login);
        st.tokens.push((token.to_string(), id));
        id
    }

    /// A user; its id.
    pub fn add_user(&self, login: &str) -> u64 {
        self.state().user_id(login)
    }

    fn add_bare(&self, full_name: &str, from: &Path, fork_of: Option<u64>) -> u64 {
        let bare = self.shared.repos.join(format!("{full_name}.git"));
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        super::repo::git(
            &self.shared.repos,
            &["clone", "-q", "--bare", from.to_str().unwrap(), bare.to_str().unwrap()],
        );
        super::repo::git(&bare, &["config", "http.receivepack", "true"]);
        let mut st = self.state();
        st.user_id(full_name.split('/').next().unwrap());
        let id = st.next_id();
        st.repos.push(Repo {
            id,
            full_name: full_name.to_string(),
            bare,
            fork_of,
            archived: false,
            private: false,
            topics: vec![],
            labels: vec![],
            writers: vec![],
            protections: vec![],
        });
        id
    }

    /// A repository `owner/name` whose git is a bare clone of `from_repo`.
    pub fn add_repo(&self, full_name: &str, from_repo: &Path) -> u64 {
        self.add_bare(full_name, from_repo, None)
    }

    /// A fork of `of` at `full_name`, with a copy of its repository.
    pub fn fork(&self, of: &str, full_name: &str) -> u64 {
        let (upstream, bare) = {
            let st = self.state();
            let r = st.repo(of).expect("no such repository to fork");
            (r.id, r.bare.clone())
        };
        self.add_bare(full_name, &bare, Some(upstream))
    }

    fn repo_mut(&self, full_name: &str, f: impl FnOnce(&mut Repo)) {
        let mut st = self.state();
        f(st.repos.iter_mut().find(|r| r.full_name == full_name).expect("no such repository"));
    }

    /// Give `login` write access to `full_name`.
    pub fn add_writer(&self, full_name: &str, login: &str) {
        let id = self.add_user(login);
        self.repo_mut(full_name, |r| r.writers.push(id));
    }

    /// Mark `full_name` archived (or not), private (or not), with `topics`.
    pub fn describe(&self, full_name: &str, archived: bool, private: bool, topics: &[&str]) {
        self.repo_mut(full_name, |r| {
            (r.archived, r.private, r.topics) = (archived, private, topics.iter().map(|t| t.to_string()).collect())
        });
    }

    /// A label of the repository; its id.
    pub fn add_label(&self, full_name: &str, name: &str) -> u64 {
        let id = self.state().next_id();
        self.repo_mut(full_name, |r| r.labels.push((id, name.to_string())));
        id
    }

    /// Protect `branch`: `approvals` official approvals and the status `contexts` to merge.
    pub fn protect(&self, full_name: &str, branch: &str, approvals: u64, contexts: &[&str]) {
        let contexts = contexts.iter().map(|c| c.to_string()).collect();
        self.repo_mut(full_name, |r| r.protections.push((branch.to_string(), approvals, contexts)));
    }

    /// An issue of `full_name` (not a PR); its number.
    pub fn add_issue(&self, full_name: &str, title: &str, body: &str) -> u64 {
        let mut st = self.state();
        let repo = st.repo(full_name).expect("no such repository").id;
        let n = st.next_number(repo);
        st.issues.push((repo, n, title.to_string(), body.to_string()));
        n
    }

    /// An open PR into `full_name` by `author` from `head` in `head_repo` (a fork) or the
    /// repository itself; its number.
    pub fn add_pull(
        &self,
        full_name: &str,
        head: &str,
        base: &str,
        title: &str,
        author: &str,
        head_repo: Option<&str>,
    ) -> u64 {
        let mut st = self.state();
        let repo = st.repo(full_name).expect("no such repository").id;
        let from = head_repo.map_or(repo, |h| st.repo(h).expect("no such head repository").id);
        let author = st.user_id(author);
        let p = api::new_pull(&mut st, (repo, from, author), head, base, title);
        let n = p.number;
        st.pulls.push(p);
        n
    }

    /// Change PR `n`: closed (`merged`: merged) at its head now, or not mergeable.
    pub fn end_pull(&self, full_name: &str, n: u64, merged: bool) {
        let mut st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        let sha = entities::head_sha(&st, st.pull(repo, n).unwrap());
        let p = st.pull_mut(repo, n).unwrap();
        (p.open, p.merged, p.head_sha_then) = (false, merged, Some(sha));
    }

    /// A comment on PR `n` by `author`; its id.
    pub fn add_comment(&self, full_name: &str, n: u64, author: &str, body: &str) -> u64 {
        let mut st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        let (author, id, created_at) = (st.user_id(author), st.next_id(), st.now());
        st.comments.push(Comment { id, repo, number: n, author, body: body.to_string(), created_at });
        id
    }

    /// A review of PR `n` by `user`; `official`: by someone whose approval counts.
    pub fn add_review(&self, full_name: &str, n: u64, user: &str, state: &str, official: bool) {
        let mut st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        let (user, id, submitted_at) = (st.user_id(user), st.next_id(), st.now());
        let (state, body) = (state.to_string(), String::new());
        st.reviews.push(Review { id, repo, number: n, user, state, body, official, submitted_at });
    }

    /// A commit status on `sha` (`success`, `failure`, `error`, `pending`, `warning`).
    pub fn set_status(&self, full_name: &str, sha: &str, context: &str, state: &str) {
        let mut st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        st.statuses.retain(|s| !(s.repo == repo && s.sha == sha && s.context == context));
        st.statuses.push(Status { repo, sha: sha.to_string(), context: context.to_string(), state: state.to_string() });
    }

    /// The PRs into `full_name`, oldest first, as `GET …/pulls/{n}` answers them.
    pub fn pulls(&self, full_name: &str) -> Vec<Value> {
        let st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        st.pulls.iter().filter(|p| p.repo == repo).map(|p| entities::pull(&st, p, &self.base)).collect()
    }

    /// The comments on PR `n`, oldest first.
    pub fn comments(&self, full_name: &str, n: u64) -> Vec<Value> {
        let st = self.state();
        let repo = st.repo(full_name).unwrap().id;
        st.comments
            .iter()
            .filter(|c| c.repo == repo && c.number == n)
            .map(|c| entities::comment(&st, c, &self.base))
            .collect()
    }

    /// Every request so far (API and git), with the status it got.
    pub fn requests(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    /// What was sent that Forgejo's description does not allow; a test of hone asserts this is
    /// empty.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// The Basic credentials (user, password) git requests carried, in order.
    pub fn git_credentials(&self) -> Vec<(String, String)> {
        self.state().git_credentials.clone()
    }

    /// Answer the next `n` API requests with 429 (`Retry-After: 1`).
    pub fn rate_limit_next(&self, n: usize) {
        self.state().throttle_next += n;
    }
}
