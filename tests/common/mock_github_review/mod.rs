//! A stateful stand-in for GitHub's pull-request review API, checking what GitHub checks with
//! code independent of hone's:
//!
//! - every request carries `Authorization: Bearer <the token>` (else 401); the token's user is
//!   `LOGIN` (`GET /user`);
//! - a PR's diff is computed for real from the test's bare origin (`diff.rs`): `GET …/pulls/N`
//!   (a fork's head repository differs), `GET …/pulls/N/files` (statuses, renames, `patch` as
//!   GitHub gives it, paginated, with a `Link` header that points at a trap);
//! - a review (`POST …/pulls/N/reviews`) is refused with 422 as GitHub refuses it: a comment on a
//!   path not in the PR's files ("Path could not be resolved"), on lines not inside one hunk of
//!   the RIGHT side ("Line could not be resolved"), a `commit_id` that is not the head, a body
//!   over 65,536 characters; nothing of a refused review is kept;
//! - editing another user's review or deleting another user's comment: 403;
//! - it records every request and refusal, and gives tests the reviews with their comments and a
//!   file's content after the live comments' suggestion blocks are applied.
//!
//! It uses nothing of the test harness, so that hone's unit tests can include it too.

pub mod diff;
mod routes;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const TOKEN: &str = "ghs_review_standin_0123456789";
/// The login the token belongs to.
pub const LOGIN: &str = "hone-bot";
/// The repository the stand-in serves.
pub const REPO: &str = "acme/app";
/// The most characters GitHub takes in a review's or a comment's body.
pub const MAX_BODY: usize = 65_536;

#[derive(Clone, Debug)]
pub struct Pr {
    pub number: u64,
    pub state: String,
    pub head_ref: String,
    pub head_sha: String,
    /// `owner/repo` of the head: a fork's differs from `REPO`.
    pub head_repo: String,
    pub base_ref: String,
}

#[derive(Clone, Debug)]
pub struct Review {
    pub id: u64,
    pub pr: u64,
    pub user: String,
    pub body: String,
    pub commit_id: String,
    pub event: String,
}

#[derive(Clone, Debug)]
pub struct Comment {
    pub id: u64,
    pub review_id: u64,
    pub user: String,
    pub path: String,
    pub line: u64,
    pub start_line: Option<u64>,
    pub body: String,
}

/// A request as the stand-in saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: serde_json::Value,
}

#[derive(Default)]
pub struct Inner {
    pub prs: BTreeMap<u64, Pr>,
    pub reviews: Vec<Review>,
    pub comments: Vec<Comment>,
    pub next_id: u64,
    pub seen: Vec<Seen>,
    /// (status, what) of every refusal.
    pub refused: Vec<(u16, String)>,
    /// Entries added to every files answer (a hostile server's file names).
    pub extra_files: Vec<serde_json::Value>,
    /// Requests that followed the `Link` header's trap.
    pub followed_link: Vec<String>,
}

pub struct State {
    pub origin: PathBuf,
    pub url: String,
    pub inner: Mutex<Inner>,
}

pub struct MockGithubReview {
    /// `http://127.0.0.1:PORT`: `GITHUB_API_URL`.
    pub url: String,
    pub state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockGithubReview {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockGithubReview {
    /// A stand-in whose PR diffs come from the bare repository `origin`.
    pub async fn start(origin: &Path) -> MockGithubReview {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let inner = Mutex::new(Inner { next_id: 100, ..Inner::default() });
        let state = Arc::new(State { origin: origin.to_path_buf(), url: url.clone(), inner });
        let app = routes::routes().with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockGithubReview { url, state, task }
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.state.inner.lock().unwrap())
    }

    /// Open PR `number` from `head_ref` at `head_sha` of `head_repo` onto `main`.
    pub fn open_pr(&self, number: u64, head_ref: &str, head_sha: &str, head_repo: &str) {
        let pr = Pr {
            number,
            state: "open".into(),
            head_ref: head_ref.into(),
            head_sha: head_sha.into(),
            head_repo: head_repo.into(),
            base_ref: "main".into(),
        };
        self.with(|s| s.prs.insert(number, pr));
    }

    /// A review `user` wrote on PR `pr` (another user's, or an earlier one of hone's).
    pub fn seed_review(&self, pr: u64, user: &str, body: &str, commit_id: &str) -> u64 {
        self.with(|s| {
            s.next_id += 1;
            let review = Review {
                id: s.next_id,
                pr,
                user: user.into(),
                body: body.into(),
                commit_id: commit_id.into(),
                event: "COMMENT".into(),
            };
            s.reviews.push(review);
            s.next_id
        })
    }

    /// A comment of review `review_id`, by `user`.
    pub fn seed_comment(&self, review_id: u64, user: &str, path: &str, line: u64, body: &str) -> u64 {
        self.with(|s| {
            s.next_id += 1;
            let c = Comment {
                id: s.next_id,
                review_id,
                user: user.into(),
                path: path.into(),
                line,
                start_line: None,
                body: body.into(),
            };
            s.comments.push(c);
            s.next_id
        })
    }

    /// The reviews of PR `pr`, oldest first, each with its comments.
    pub fn reviews(&self, pr: u64) -> Vec<(Review, Vec<Comment>)> {
        self.with(|s| {
            let of = |id: u64| s.comments.iter().filter(|c| c.review_id == id).cloned().collect();
            s.reviews.iter().filter(|r| r.pr == pr).map(|r| (r.clone(), of(r.id))).collect()
        })
    }

    /// The refusals so far: (status, what).
    pub fn refused(&self) -> Vec<(u16, String)> {
        self.with(|s| s.refused.clone())
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.with(|s| s.seen.clone())
    }

    /// How many requests with `method` went to a path starting with `prefix`.
    pub fn count(&self, method: &str, prefix: &str) -> usize {
        self.seen().iter().filter(|s| s.method == method && s.path.starts_with(prefix)).count()
    }

    /// The content of `path` at PR `pr`'s head with the suggestion blocks of every live comment
    /// `LOGIN` wrote on it applied (overlapping ones fail the test: a duplicate review).
    pub fn apply_suggestions(&self, pr: u64, path: &str) -> String {
        let head = self.with(|s| s.prs[&pr].head_sha.clone());
        let repo = git2::Repository::open_bare(&self.state.origin).unwrap();
        let tree = repo.find_commit(git2::Oid::from_str(&head).unwrap()).unwrap().tree().unwrap();
        let blob = tree.get_path(Path::new(path)).unwrap().to_object(&repo).unwrap().peel_to_blob().unwrap();
        let mut lines: Vec<String> =
            String::from_utf8(blob.content().to_vec()).unwrap().split_inclusive('\n').map(str::to_string).collect();
        let reviews: Vec<u64> = self.with(|s| s.reviews.iter().filter(|r| r.pr == pr).map(|r| r.id).collect());
        let mut edits: Vec<(u64, u64, Vec<String>)> = self.with(|s| {
            s.comments
                .iter()
                .filter(|c| c.user == LOGIN && c.path == path && reviews.contains(&c.review_id))
                .filter_map(|c| Some((c.start_line.unwrap_or(c.line), c.line, diff::suggestion_lines(&c.body)?)))
                .collect()
        });
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for pair in edits.windows(2) {
            assert!(pair[1].1 < pair[0].0, "suggestions overlap on {path}: {edits:?}");
        }
        for (start, end, new) in edits {
            let new: Vec<String> = new.into_iter().map(|l| format!("{l}\n")).collect();
            lines.splice(start as usize - 1..end as usize, new);
        }
        lines.concat()
    }

    /// The environment that points hone here: token, API and repository.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("GITHUB_TOKEN", TOKEN.into()), ("GITHUB_API_URL", self.url.clone()), ("GITHUB_REPOSITORY", REPO.into())]
    }
}
