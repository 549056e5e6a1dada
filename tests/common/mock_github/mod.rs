//! A stateful stand-in for GitHub's REST and GraphQL API as `hone fleet` and `hone fleet prs`
//! use it, checking what GitHub checks with code independent of hone's:
//!
//! - every request carries `Authorization: Bearer <the token>` (else 401, counted as refused);
//!   `GET /user` says the token's user is `LOGIN` (an installation token may not read it: 403,
//!   and GraphQL's `viewer` names its bot);
//! - repositories hold pull requests in every state (each with its author, `user.login`, and its
//!   head and base repositories as full objects), their head commits' check runs and statuses,
//!   reviews (each with its reviewer's `author_association`, paged as GitHub pages them),
//!   comments, branches (each at a commit, readable as `GET …/git/ref/heads/{branch}`) and
//!   base-branch rules (a merge queue, required approvals, required status checks);
//! - GraphQL answers a PR's `reviewDecision` as GitHub computes it: null unless the rules
//!   require approvals, else from the latest review of each reviewer with write access
//!   (`OWNER`, `MEMBER`, `COLLABORATOR` here);
//! - a merge (`PUT …/pulls/{n}/merge`) is refused as GitHub refuses it: 409 when `sha` is not
//!   the head, 405 with GitHub's message when it is a draft, not mergeable, a check fails or a
//!   required one has not reported, it lacks the approvals of reviewers with write access, or its
//!   base requires the merge queue; GraphQL `enqueuePullRequest` queues it on such a base, with
//!   `expectedHeadOid` checked;
//! - every answer has GitHub's rate-limit headers (`x-ratelimit-*`), and the test can make it
//!   answer a primary (403, remaining 0, reset) or secondary (403 with `retry-after`) limit;
//! - it counts requests, and can hold one PR's GET until the test kills hone.

mod graphql;
mod routes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

pub const TOKEN: &str = "ghp_prs_standin_0123456789";
/// The login of `TOKEN`'s user: the campaign's identity, which opens the seeded PRs.
pub const LOGIN: &str = "hone-bot";

/// The `author_association` of a reviewer with write access (a member of the organisation).
pub const WRITER: &str = "MEMBER";
/// The `author_association` of a stranger to the repository.
pub const OUTSIDER: &str = "NONE";

/// Now, as GitHub writes times.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap()
}

/// A pull request as the stand-in keeps it.
#[derive(Clone, Debug)]
pub struct MockPr {
    pub number: u64,
    /// Who opened it (`user.login`).
    pub author: String,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub draft: bool,
    pub head_ref: String,
    pub head_sha: String,
    /// Its earlier heads (before pushes), whose checks are still there.
    pub past_heads: Vec<String>,
    /// `owner/repo` of the head (a fork's differs).
    pub head_repo: Option<String>,
    pub base_ref: String,
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
    pub created_at: String,
    /// (status, conclusion) of each check run on the head.
    pub check_runs: Vec<(String, Option<String>)>,
    /// The state of each commit status on the head.
    pub statuses: Vec<String>,
    /// (login, state, author_association) of each review, oldest first.
    pub reviews: Vec<(String, String, String)>,
    pub comments: Vec<String>,
    pub queued: bool,
}

impl MockPr {
    /// An open PR by `LOGIN` from `head_ref` (in its own repository) onto `main`, checks passing,
    /// approved by a member, mergeable, opened three days ago.
    pub fn open(number: u64, head_ref: &str) -> MockPr {
        let created = time::OffsetDateTime::now_utc() - time::Duration::days(3) - time::Duration::hours(1);
        MockPr {
            number,
            author: LOGIN.into(),
            state: "open".into(),
            merged: false,
            draft: false,
            head_ref: head_ref.into(),
            head_sha: format!("{number:0>40}"),
            past_heads: vec![],
            head_repo: None,
            base_ref: "main".into(),
            mergeable: Some(true),
            mergeable_state: "clean".into(),
            created_at: created.format(&time::format_description::well_known::Rfc3339).unwrap(),
            check_runs: vec![("completed".into(), Some("success".into()))],
            statuses: vec!["success".into()],
            reviews: vec![review("reviewer", "APPROVED", WRITER)],
            comments: vec![],
            queued: false,
        }
    }
}

/// A review: (reviewer, state, `author_association`).
pub fn review(login: &str, state: &str, association: &str) -> (String, String, String) {
    (login.into(), state.into(), association.into())
}

/// A repository: its PRs, branches (name to commit) and the rules on `main`.
#[derive(Clone, Debug, Default)]
pub struct MockRepo {
    pub prs: BTreeMap<u64, MockPr>,
    pub branches: BTreeMap<String, String>,
    pub merge_queue: bool,
    pub required_reviews: u64,
    /// The contexts a `required_status_checks` rule names.
    pub required_checks: Vec<String>,
    /// Issues (not pull requests): number to (title, body).
    pub issues: BTreeMap<u64, (String, String)>,
}

impl MockRepo {
    /// Someone pushes `sha` to `branch`: the branch and every PR from it move there.
    pub fn push(&mut self, branch: &str, sha: &str) {
        self.branches.insert(branch.into(), sha.into());
        for p in self.prs.values_mut().filter(|p| p.head_ref == branch && p.head_repo.is_none()) {
            let old = std::mem::replace(&mut p.head_sha, sha.into());
            p.past_heads.push(old);
        }
    }
}

/// A request as the stand-in saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: serde_json::Value,
    pub at: std::time::SystemTime,
}

impl Seen {
    /// When it arrived, in whole unix seconds (as GitHub's reset times are).
    pub fn at_unix(&self) -> u64 {
        self.at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    }
}

/// A rate limit the stand-in answers with, once its request count reaches `at`.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// 403, `x-ratelimit-remaining: 0`, reset `secs` from the first refusal: every request is
    /// refused until then.
    Primary { at: usize, secs: u64 },
    /// 403 "You have exceeded a secondary rate limit" with `retry-after: secs`, once.
    Secondary { at: usize, secs: u64 },
}

#[derive(Default)]
pub struct State {
    pub repos: Mutex<BTreeMap<String, MockRepo>>,
    pub seen: Mutex<Vec<Seen>>,
    pub refused: Mutex<Vec<String>>,
    pub limit: Mutex<Option<Limit>>,
    /// When the primary limit resets (unix seconds), once it is hit.
    pub limited_until: Mutex<Option<u64>>,
    /// The rate-limited answers given (each an answer the client must wait out).
    pub limited: Mutex<Vec<(u64, String)>>,
    /// `repo#n` whose GET is held until the test ends (hone killed meanwhile).
    pub hold: Mutex<Option<String>>,
    pub held: tokio::sync::Notify,
    /// `repo#n` whose head moves (a push) right after hone reads the PR.
    pub move_after_read: Mutex<Option<String>>,
    /// The token is an installation token of this App bot (`slug[bot]`): `GET /user` is
    /// forbidden (403) and GraphQL's `viewer` names the bot.
    pub installation: Mutex<Option<String>>,
}

pub struct MockGithub {
    /// `http://127.0.0.1:PORT`: `GITHUB_API_URL`.
    pub url: String,
    pub state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockGithub {
    fn drop(&mut self) {
        self.task.abort();
        if !std::thread::panicking() {
            let refused = self.state.refused.lock().unwrap().clone();
            assert!(refused.is_empty(), "the GitHub stand-in refused requests as GitHub would: {refused:#?}");
        }
    }
}

impl MockGithub {
    pub async fn start() -> MockGithub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        let app = routes::routes().with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockGithub { url, state, task }
    }

    /// Add (or replace) PR `pr` of `repo` (`owner/name`); its head branch exists.
    pub fn seed(&self, repo: &str, pr: MockPr) {
        let mut repos = self.state.repos.lock().unwrap();
        let r = repos.entry(repo.to_lowercase()).or_default();
        if pr.head_repo.is_none() || pr.head_repo.as_deref() == Some(repo) {
            r.branches.insert(pr.head_ref.clone(), pr.head_sha.clone());
        }
        r.branches.entry(pr.base_ref.clone()).or_insert_with(|| "b".repeat(40));
        r.prs.insert(pr.number, pr);
    }

    /// Change repository `repo` (rules, PRs) in place.
    pub fn with_repo<T>(&self, repo: &str, f: impl FnOnce(&mut MockRepo) -> T) -> T {
        f(self.state.repos.lock().unwrap().entry(repo.to_lowercase()).or_default())
    }

    pub fn pr(&self, repo: &str, n: u64) -> MockPr {
        self.state.repos.lock().unwrap()[&repo.to_lowercase()].prs[&n].clone()
    }

    pub fn branches(&self, repo: &str) -> BTreeSet<String> {
        self.state.repos.lock().unwrap()[&repo.to_lowercase()].branches.keys().cloned().collect()
    }

    /// The commit `branch` of `repo` is at.
    pub fn branch_sha(&self, repo: &str, branch: &str) -> Option<String> {
        self.state.repos.lock().unwrap()[&repo.to_lowercase()].branches.get(branch).cloned()
    }

    /// Someone pushes `sha` to `branch` of `repo` (the branch and its PRs move).
    pub fn push(&self, repo: &str, branch: &str, sha: &str) {
        self.with_repo(repo, |r| r.push(branch, sha));
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The requests with this method whose path starts with `prefix`.
    pub fn count(&self, method: &str, prefix: &str) -> usize {
        self.seen().iter().filter(|s| s.method == method && s.path.starts_with(prefix)).count()
    }

    pub fn limit(&self, l: Limit) {
        *self.state.limit.lock().unwrap() = Some(l);
    }

    pub fn limited(&self) -> Vec<(u64, String)> {
        self.state.limited.lock().unwrap().clone()
    }

    /// Hold the GET of PR `n` of `repo` forever; `held()` resolves when it arrives.
    pub fn hold(&self, repo: &str, n: u64) {
        *self.state.hold.lock().unwrap() = Some(format!("{}#{n}", repo.to_lowercase()));
    }

    /// Someone pushes to PR `n` of `repo` right after its next read: its head moves.
    pub fn move_head_after_read(&self, repo: &str, n: u64) {
        *self.state.move_after_read.lock().unwrap() = Some(format!("{}#{n}", repo.to_lowercase()));
    }

    /// The token is an installation token acting as `bot` (`slug[bot]`), as an App's token
    /// handed over in `GITHUB_TOKEN` is: `GET /user` answers 403, GraphQL `viewer` says `bot`.
    pub fn as_installation(&self, bot: &str) {
        *self.state.installation.lock().unwrap() = Some(bot.to_string());
    }

    pub async fn held(&self) {
        self.state.held.notified().await;
    }

    /// The environment that points hone here with the token.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("GITHUB_TOKEN", TOKEN.to_string()), ("GITHUB_API_URL", self.url.clone())]
    }
}
