//! What the Forgejo stand-in knows: users and their tokens, repositories (each a bare git
//! repository), pull requests and their comments, reviews, commit statuses, labels and branch
//! protections, and every request it saw.

use serde_json::Value;
use std::path::PathBuf;

/// One request the stand-in received, and the status it answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The path as sent (still percent-encoded).
    pub path: String,
    pub query: String,
    /// The `Authorization` header as sent, if any.
    pub authorization: Option<String>,
    /// The JSON body; `Null` when empty.
    pub body: Value,
    pub status: u16,
}

pub struct User {
    pub id: u64,
    pub login: String,
}

pub struct Repo {
    pub id: u64,
    /// `owner/name`.
    pub full_name: String,
    pub bare: PathBuf,
    pub fork_of: Option<u64>,
    pub archived: bool,
    pub private: bool,
    pub topics: Vec<String>,
    /// Labels: (id, name).
    pub labels: Vec<(u64, String)>,
    /// Users with write access (besides the owner's own users): their ids.
    pub writers: Vec<u64>,
    /// Branch protections: (branch, required approvals, required status contexts).
    pub protections: Vec<(String, u64, Vec<String>)>,
}

#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    /// The base repository's id.
    pub repo: u64,
    /// The head repository's id (`None`: the fork was deleted).
    pub head_repo: Option<u64>,
    pub head_ref: String,
    /// The head commit when it was closed or merged (an open PR's is its branch's).
    pub head_sha_then: Option<String>,
    pub base_ref: String,
    pub title: String,
    pub body: String,
    pub open: bool,
    pub merged: bool,
    pub merge_style: Option<String>,
    pub author: u64,
    pub labels: Vec<u64>,
    pub assignees: Vec<String>,
    pub reviewers: Vec<String>,
    pub team_reviewers: Vec<String>,
    pub mergeable: bool,
    pub created_at: String,
}

pub struct Comment {
    pub id: u64,
    pub repo: u64,
    pub number: u64,
    pub author: u64,
    pub body: String,
    pub created_at: String,
}

pub struct Review {
    pub id: u64,
    pub repo: u64,
    pub number: u64,
    pub user: u64,
    pub state: String,
    pub body: String,
    pub official: bool,
    pub submitted_at: String,
}

pub struct Status {
    pub repo: u64,
    pub sha: String,
    pub context: String,
    pub state: String,
}

#[derive(Default)]
pub struct State {
    pub users: Vec<User>,
    /// token → user id.
    pub tokens: Vec<(String, u64)>,
    pub repos: Vec<Repo>,
    pub pulls: Vec<Pull>,
    /// Issues that are not PRs: (repository id, number, title, body).
    pub issues: Vec<(u64, u64, String, String)>,
    pub comments: Vec<Comment>,
    pub reviews: Vec<Review>,
    pub statuses: Vec<Status>,
    pub seen: Vec<Seen>,
    pub violations: Vec<String>,
    /// The Basic credentials git requests carried: (user, password).
    pub git_credentials: Vec<(String, String)>,
    /// Answer the next this many API requests with 429.
    pub throttle_next: usize,
    next: u64,
}

impl State {
    pub fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Now, as Forgejo writes times (RFC 3339, whole seconds, UTC), kept apart per call so
    /// newer things sort after older ones.
    pub fn now(&mut self) -> String {
        let n = self.next_id();
        let t = time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000) + time::Duration::seconds(n as i64);
        t.format(&time::format_description::well_known::Rfc3339).unwrap()
    }

    pub fn user_id(&mut self, login: &str) -> u64 {
        if let Some(u) = self.users.iter().find(|u| u.login == login) {
            return u.id;
        }
        let id = self.next_id();
        self.users.push(User { id, login: login.to_string() });
        id
    }

    pub fn login(&self, id: u64) -> String {
        self.users.iter().find(|u| u.id == id).map(|u| u.login.clone()).unwrap_or_default()
    }

    pub fn repo(&self, full_name: &str) -> Option<&Repo> {
        self.repos.iter().find(|r| r.full_name.eq_ignore_ascii_case(full_name))
    }

    pub fn repo_by_id(&self, id: u64) -> Option<&Repo> {
        self.repos.iter().find(|r| r.id == id)
    }

    /// The next issue number of a repository (PRs and issues share them).
    pub fn next_number(&self, repo: u64) -> u64 {
        let pulls = self.pulls.iter().filter(|p| p.repo == repo).map(|p| p.number);
        pulls.chain(self.issues.iter().filter(|i| i.0 == repo).map(|i| i.1)).max().unwrap_or(0) + 1
    }

    pub fn pull_mut(&mut self, repo: u64, number: u64) -> Option<&mut Pull> {
        self.pulls.iter_mut().find(|p| p.repo == repo && p.number == number)
    }

    pub fn pull(&self, repo: u64, number: u64) -> Option<&Pull> {
        self.pulls.iter().find(|p| p.repo == repo && p.number == number)
    }

    /// Whether user `id` may write to repository `repo`: its owner's user, or a writer.
    pub fn may_write(&self, repo: &Repo, id: u64) -> bool {
        let owner = repo.full_name.split('/').next().unwrap_or_default();
        self.login(id).eq_ignore_ascii_case(owner) || repo.writers.contains(&id)
    }
}

/// The commit `branch` is at in the bare repository `bare`, if the branch exists.
pub fn branch_sha(bare: &std::path::Path, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}^{{commit}}")])
        .current_dir(bare)
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
