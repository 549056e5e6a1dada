//! A GitLab instance for tests, on one HTTPS address: `/api/v4/…` is its REST API and every other
//! path is git smart-HTTP to its projects' bare repositories. It behaves like GitLab, not like
//! hone: the tests of hone's GitLab client must be able to fail against it.
//!
//! ```ignore
//! let gl = MockGitLab::start(dir.path()).await;            // gl.base: https://localhost:PORT
//! let app = gl.add_project("acme/app", &repo.path);        // bare clone at /acme/app.git, push on
//! let fork = gl.fork("acme/app", "someone/app");            // its own bare repo, forked_from app
//! let dev = gl.add_user("dev");                             // user id (for assignee_ids)
//! let bot = gl.add_token("glpat-x", Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
//! gl.add_token("job-x", Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });
//! gl.allow_job_token_push("acme/app", true);                // ci_push_repository_for_job_token_allowed
//! let iid = gl.add_mr("acme/app", "feature", "main", "Fix", "dev", None);  // Some("someone/app"): from the fork
//! gl.add_note("acme/app", iid, "dev", "a comment");
//! gl.rate_limit_next(2);                                    // the next 2 API requests get 429
//! // … run hone against gl.base (GIT_SSL_CAINFO / SSL_CERT_FILE = git_http::test_ca()) …
//! assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
//! gl.mrs("acme/app"); gl.notes("acme/app", iid);            // as GET …/merge_requests(/notes) answers
//! gl.requests(); gl.git_credentials(); gl.throttled();
//! ```
//!
//! How it decides, as GitLab (sources in `tests/data/gitlab/README.md`):
//! - API credentials: `PRIVATE-TOKEN` (or `private_token=`), `Authorization: Bearer`, and
//!   `JOB-TOKEN` (or `job_token=`). An unknown token gets 401 `{"message":"401 Unauthorized"}`. A
//!   job token is read only by the endpoints GitLab opens to it (reading merge requests and their
//!   notes); elsewhere it is ignored, so the request is anonymous (401 where GitLab
//!   authenticates, 404 for a private project). Scopes: `api` everything, `read_api` reads,
//!   `read_user` reads users; any scope reads `/personal_access_tokens/self`. A missing scope
//!   gets 403 `insufficient_scope` naming the scopes accepted, without `WWW-Authenticate` (GitLab
//!   sends none). Personal tokens see every project, project tokens their project, group tokens
//!   the projects under their group, job tokens their job's project.
//! - Git: Basic credentials, any user name for personal, project and group tokens, and only
//!   `gitlab-ci-token` for a job token; none → 401 `WWW-Authenticate: Basic realm="GitLab"`. Fetch
//!   needs `api`, `read_api`, `read_repository` or `write_repository`; push `api` or
//!   `write_repository`; a job token fetches its project, and pushes only when
//!   `allow_job_token_push` is on (else 403 `You are not allowed to push code to this project.`).
//! - Every request is checked against `tests/data/gitlab/openapi.yaml`: an operation it does not
//!   have, an unknown parameter, a wrong type or a missing required parameter is recorded in
//!   `violations()` (GitLab ignores unknown parameters; a wrong type or a missing parameter also
//!   gets its 400, `{"error":"title is missing"}`). Answers are checked too: a field the
//!   description does not document is recorded as a stand-in bug.
//! - Merge requests: one open merge request per source branch (409 `{"message":["Another open
//!   merge request already exists for this source branch: !N"]}`), branches must exist, a fork's
//!   merge request is created on the fork with `target_project_id` and lives in the target;
//!   `Draft:` in the title makes it a draft; `state_event` closes and reopens. Notes are edited by
//!   their author only (403 otherwise).
//! - Reviews (`mock_gitlab/review.rs`): each merge request's head is kept in its target project
//!   as `refs/merge-requests/<iid>/head` (a fork's too); its versions and diff are computed from
//!   the repositories; draft notes are their author's, published one by one or together; a
//!   position that is no line of the diff is dropped on publish as GitLab drops it, and recorded
//!   as a violation with GitLab's `line_code` message. Helpers: `discussions`, `drafts`,
//!   `apply_suggestions` (the file at the head with the live suggestions applied), `too_large`.
//! - Every answer has `RateLimit-Limit`, `-Observed`, `-Remaining`, `-Reset`; throttled API
//!   requests get 429 `Retry later` with `Retry-After: 1` and `RateLimit-Remaining: 0`.

mod api;
mod approvals;
mod auth;
mod entities;
mod git;
mod merge;
mod mr_diff;
mod mrs;
mod notes;
mod params;
mod review;
mod review_helpers;
mod serve;
mod spec;
mod state;

pub use state::{Auth, Kind, Mr, Seen};

use serde_json::Value;
use state::{Project, State, TokenRecord};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A token to register: what it is, its scopes (ignored for job tokens, which have GitLab's fixed
/// abilities), its user (for personal and job tokens: created when missing; for project and
/// group tokens: empty makes GitLab's bot user `project_<id>_bot_<hex>` / `group_<id>_bot_<hex>`),
/// and its project path (project and job tokens) or group path (group tokens).
pub struct Token<'a> {
    pub kind: Kind,
    pub scopes: &'a [&'a str],
    pub user: &'a str,
    pub project: Option<&'a str>,
}

pub struct Shared {
    state: Mutex<State>,
    /// Where the bare repositories are: `<repos>/<path>.git`.
    repos: PathBuf,
    base: String,
}

pub struct MockGitLab {
    /// `https://localhost:PORT`, the instance's URL (`CI_SERVER_URL`); the API is `{base}/api/v4`.
    pub base: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockGitLab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockGitLab {
    /// An instance over HTTPS (certificate for `localhost`, signed by `git_http::test_ca()`),
    /// keeping its repositories under `root`.
    pub async fn start(root: &Path) -> MockGitLab {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://localhost:{}", tcp.local_addr().unwrap().port());
        let repos = root.join("gitlab-repos");
        std::fs::create_dir_all(&repos).unwrap();
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), repos, base: base.clone() });
        let app = axum::Router::new().fallback(serve::handle).with_state(shared.clone());
        let listener = super::tls::TlsListener::new(tcp);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockGitLab { base, shared, task }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap()
    }

    /// The git URL of a project: `{base}/{path}.git`.
    pub fn git_url(&self, path: &str) -> String {
        format!("{}/{path}.git", self.base)
    }

    /// The bare repository behind a project (to look at what was pushed).
    pub fn bare(&self, path: &str) -> PathBuf {
        self.state().project(path).expect("no such project").bare.clone()
    }

    fn add_bare(&self, path: &str, from: &Path, forked_from: Option<u64>) -> u64 {
        let bare = self.shared.repos.join(format!("{path}.git"));
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        super::repo::git(
            &self.shared.repos,
            &["clone", "-q", "--bare", from.to_str().unwrap(), bare.to_str().unwrap()],
        );
        super::repo::git(&bare, &["config", "http.receivepack", "true"]);
        let default_branch = super::repo::git(&bare, &["symbolic-ref", "--short", "HEAD"]);
        let mut st = self.state();
        let (id, created_at) = (st.next_id(), st.now());
        let path = path.to_string();
        st.projects.push(Project {
            id,
            path,
            default_branch,
            bare,
            forked_from,
            job_token_push: false,
            created_at,
            archived: false,
            topics: vec![],
        });
        id
    }

    /// A project `path` (`group/sub/name`) whose repository is a bare clone of `from_repo`.
    pub fn add_project(&self, path: &str, from_repo: &Path) -> u64 {
        self.add_bare(path, from_repo, None)
    }

    /// Mark project `path` archived (or not) and give it `topics`.
    pub fn describe(&self, path: &str, archived: bool, topics: &[&str]) {
        let mut st = self.state();
        let p = st.projects.iter_mut().find(|p| p.path == path).expect("a project of the stand-in");
        (p.archived, p.topics) = (archived, topics.iter().map(|t| t.to_string()).collect());
    }

    /// A fork of project `of` at `path`, with a copy of its repository.
    pub fn fork(&self, of: &str, path: &str) -> u64 {
        let (upstream, bare) = {
            let st = self.state();
            let p = st.project(of).expect("no such project to fork");
            (p.id, p.bare.clone())
        };
        self.add_bare(path, &bare, Some(upstream))
    }

    /// A user (a person); its id, as `GET /users?username=` answers it.
    pub fn add_user(&self, username: &str) -> u64 {
        self.state().ensure_user(username, false)
    }

    /// Register a token; returns the user name it acts as (the bot's, for project and group
    /// tokens).
    pub fn add_token(&self, token: &str, t: Token) -> String {
        let mut st = self.state();
        let scope_path = t.project.map(str::to_string);
        let user = match t.kind {
            Kind::Project | Kind::Group if t.user.is_empty() => {
                let owner = match t.kind {
                    Kind::Project => {
                        format!("project_{}", st.project(t.project.unwrap_or_default()).expect("no such project").id)
                    }
                    _ => format!("group_{}", st.next_id()),
                };
                let n = st.next_id();
                st.ensure_user(&format!("{owner}_bot_{:032x}", n * 0x9e37_79b9), true)
            }
            Kind::Project | Kind::Group => st.ensure_user(t.user, true),
            Kind::Personal | Kind::Job => st.ensure_user(t.user, false),
        };
        let (id, created_at) = (st.next_id(), st.now());
        let scopes = t.scopes.iter().map(|s| s.to_string()).collect();
        st.tokens.insert(token.to_string(), TokenRecord { id, kind: t.kind, scopes, user, scope_path, created_at });
        st.user(user).unwrap().username.clone()
    }

    /// The project's "Allow Git push requests to the repository" job token setting.
    pub fn allow_job_token_push(&self, project: &str, allowed: bool) {
        let mut st = self.state();
        let id = st.project(project).expect("no such project").id;
        st.projects.iter_mut().find(|p| p.id == id).unwrap().job_token_push = allowed;
    }

    /// An open merge request into `project` by `author` (created when missing), from
    /// `source_project` (a fork) or the project itself; its iid.
    pub fn add_mr(
        &self,
        project: &str,
        source_branch: &str,
        target_branch: &str,
        title: &str,
        author: &str,
        source_project: Option<&str>,
    ) -> u64 {
        let mut st = self.state();
        let target = st.project(project).expect("no such project").id;
        let source = source_project.map_or(target, |s| st.project(s).expect("no such source project").id);
        let author = st.ensure_user(author, false);
        st.open_mr((target, source, author), source_branch.into(), target_branch.into(), title.into()).iid
    }

    /// A note on a merge request by `author` (created when missing); its id.
    pub fn add_note(&self, project: &str, iid: u64, author: &str, body: &str) -> u64 {
        let mut st = self.state();
        let project = st.project(project).expect("no such project").id;
        let author = st.ensure_user(author, false);
        st.add_note((project, iid, author), body.into()).id
    }

    /// The merge requests into `project`, oldest first, as `GET …/merge_requests/:iid` shows them.
    pub fn mrs(&self, project: &str) -> Vec<Value> {
        let st = self.state();
        let id = st.project(project).expect("no such project").id;
        st.mrs.iter().filter(|m| m.project == id).map(|m| entities::merge_request(&st, m, &self.base, true)).collect()
    }

    /// The notes on a merge request, oldest first.
    pub fn notes(&self, project: &str, iid: u64) -> Vec<Value> {
        let st = self.state();
        let id = st.project(project).expect("no such project").id;
        st.notes
            .iter()
            .filter(|n| n.project == id && n.iid == iid)
            .map(|n| entities::note(&st, n, &self.base))
            .collect()
    }

    /// Every request so far (API and git), with the status it got.
    pub fn requests(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    /// What was sent that GitLab's description does not allow (or answers the stand-in gave that
    /// it does not document). A test of hone asserts this is empty.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// Answer the next `n` API requests with 429 (`Retry-After: 1`).
    pub fn rate_limit_next(&self, n: usize) {
        self.state().throttle_next += n;
    }

    /// How many requests were answered 429.
    pub fn throttled(&self) -> usize {
        self.state().throttled
    }

    /// The Basic credentials (user name, password) git requests carried, in order.
    pub fn git_credentials(&self) -> Vec<(String, String)> {
        self.state().git_credentials.clone()
    }
}
