//! What the GitLab stand-in knows: projects, users, tokens, merge requests, notes, and what it saw.

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// The kind of an access token, which decides what it may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A personal access token (or an OAuth token: GitLab treats them alike here): its user's
    /// projects, which in the stand-in are all projects.
    Personal,
    /// A project access token: its bot user is a member of that one project.
    Project,
    /// A group access token: its bot user is a member of every project under the group's path.
    Group,
    /// `CI_JOB_TOKEN`: the job's project, with the abilities GitLab gives job tokens.
    Job,
}

/// How a request authenticated, as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    None,
    /// `PRIVATE-TOKEN` header (or `private_token` query parameter).
    PrivateToken(String),
    /// `JOB-TOKEN` header (or `job_token` query parameter).
    JobToken(String),
    /// `Authorization: Bearer`.
    Bearer(String),
    /// `Authorization: Basic` (git over HTTPS): user name and password.
    Basic(String, String),
}

/// One request the stand-in received, and the status it answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The path as sent (still percent-encoded).
    pub path: String,
    pub query: String,
    pub auth: Auth,
    /// The JSON body (a form body is turned into an object of strings); `Null` when empty.
    pub body: Value,
    pub status: u16,
}

pub struct Project {
    pub id: u64,
    pub path: String,
    pub default_branch: String,
    pub bare: PathBuf,
    pub forked_from: Option<u64>,
    pub job_token_push: bool,
    pub created_at: String,
    pub archived: bool,
    pub topics: Vec<String>,
}

pub struct User {
    pub id: u64,
    pub username: String,
    pub bot: bool,
    pub created_at: String,
}

pub struct TokenRecord {
    pub id: u64,
    pub kind: Kind,
    pub scopes: Vec<String>,
    pub user: u64,
    /// The project (project and job tokens) or group path (group tokens) the token is for.
    pub scope_path: Option<String>,
    pub created_at: String,
}

pub struct Mr {
    pub id: u64,
    pub iid: u64,
    /// The target project.
    pub project: u64,
    pub source_project: u64,
    pub title: String,
    pub description: String,
    pub state: String,
    pub source_branch: String,
    pub target_branch: String,
    pub labels: Vec<String>,
    pub assignees: Vec<u64>,
    pub reviewers: Vec<u64>,
    pub author: u64,
    pub remove_source_branch: bool,
    pub squash: bool,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub closed_by: Option<u64>,
    pub merged_at: Option<String>,
    pub merged_by: Option<u64>,
    /// The head pipeline's status (`success`, `failed`, `running`, …); none without a pipeline.
    pub pipeline: Option<String>,
    /// `detailed_merge_status` as a test sets it; `None` computes it from the state, the title
    /// and the pipeline.
    pub merge_status: Option<String>,
    /// Push a new commit to the source branch right after the next read of this merge request.
    pub move_head_after_read: bool,
    /// The users who approved it (each allowed to: GitLab lets no one else), oldest first.
    pub approved_by: Vec<u64>,
    /// Approvals its rules require (Premium); `None`: a tier without approval rules.
    pub approvals_required: Option<u64>,
    /// Its diff versions, oldest first (a new one each time the source branch moved).
    pub versions: Vec<Version>,
}

/// One version of a merge request's diff (`merge_request_diffs`): the merge base, the target
/// branch's head and the source branch's head when it was made.
#[derive(Clone, Debug)]
pub struct Version {
    pub id: u64,
    pub base: String,
    pub start: String,
    pub head: String,
    pub created_at: String,
}

/// A pending draft note (visible to its author only) on a merge request.
#[derive(Clone, Debug)]
pub struct Draft {
    pub id: u64,
    pub project: u64,
    pub iid: u64,
    pub author: u64,
    pub note: String,
    pub position: Option<Value>,
}

pub struct Note {
    pub id: u64,
    pub project: u64,
    pub iid: u64,
    pub author: u64,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    /// Its discussion (40 hex digits); a plain note is a discussion of its own.
    pub discussion: String,
    /// `DiffNote` (on the diff), `DiscussionNote` (a review's note without a position), or
    /// `None` for a plain note (not resolvable).
    pub kind: Option<&'static str>,
    pub position: Option<Value>,
    pub resolved: bool,
}

#[derive(Default)]
pub struct State {
    pub projects: Vec<Project>,
    pub users: Vec<User>,
    pub tokens: HashMap<String, TokenRecord>,
    pub mrs: Vec<Mr>,
    /// Issues: (project id, iid, title, description).
    pub issues: Vec<(u64, u64, String, String)>,
    pub notes: Vec<Note>,
    pub drafts: Vec<Draft>,
    /// A draft note the caller writes, by hand, right after its next draft over the API: the
    /// token's user reviewing while hone prepares its review.
    pub draft_meanwhile: Option<String>,
    /// Paths whose diff the stand-in leaves out as GitLab does for large files (`too_large`).
    pub too_large: Vec<String>,
    pub seen: Vec<Seen>,
    pub violations: Vec<String>,
    pub git_credentials: Vec<(String, String)>,
    /// API requests still to answer with 429, and how many were.
    pub throttle_next: usize,
    pub throttled: usize,
    pub observed: u64,
    next_id: u64,
    clock: u64,
}

/// The rate limit every answer reports (`RateLimit-Limit`), as GitLab.com's authenticated API.
pub const RATE_LIMIT: u64 = 2000;

impl State {
    /// A new open merge request of `author` from `source`'s `from` onto `target`'s `into`, as
    /// GitLab makes it (nothing set but its title); returns it for the caller to set the rest.
    pub fn open_mr(
        &mut self,
        (target, source, author): (u64, u64, u64),
        from: String,
        into: String,
        title: String,
    ) -> &mut Mr {
        let (id, iid, now) = (self.next_id(), self.next_iid(target), self.now());
        self.mrs.push(Mr {
            id,
            iid,
            project: target,
            source_project: source,
            title,
            description: String::new(),
            state: "opened".into(),
            source_branch: from,
            target_branch: into,
            labels: Vec::new(),
            assignees: Vec::new(),
            reviewers: Vec::new(),
            author,
            remove_source_branch: false,
            squash: false,
            created_at: now.clone(),
            updated_at: now,
            closed_at: None,
            closed_by: None,
            merged_at: None,
            merged_by: None,
            pipeline: None,
            merge_status: None,
            move_head_after_read: false,
            approved_by: Vec::new(),
            approvals_required: None,
            versions: Vec::new(),
        });
        self.mrs.last_mut().expect("just pushed")
    }

    /// A plain note by `author` on merge request `iid` of `project`, in a discussion of its own.
    pub fn add_note(&mut self, (project, iid, author): (u64, u64, u64), body: String) -> &Note {
        let (id, now) = (self.next_id(), self.now());
        let discussion = format!("{:040x}", id * 0x9e37_79b9);
        let updated_at = now.clone();
        let (kind, position, resolved) = (None, None, false);
        let note =
            Note { id, project, iid, author, body, created_at: now, updated_at, discussion, kind, position, resolved };
        self.notes.push(note);
        self.notes.last().expect("just pushed")
    }

    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A timestamp later than every earlier one (a fake clock: no test waits on it).
    pub fn now(&mut self) -> String {
        self.clock += 1;
        let s = self.clock;
        format!("2026-01-01T{:02}:{:02}:{:02}.000Z", (s / 3600) % 24, (s / 60) % 60, s % 60)
    }

    /// The project a path segment names: a numeric id, or a full path (decoded), as GitLab
    /// resolves `:id`, path case-insensitively.
    pub fn project(&self, id_or_path: &str) -> Option<&Project> {
        match id_or_path.parse::<u64>() {
            Ok(id) => self.projects.iter().find(|p| p.id == id),
            Err(_) => self.projects.iter().find(|p| p.path.eq_ignore_ascii_case(id_or_path)),
        }
    }

    pub fn project_by_id(&self, id: u64) -> Option<&Project> {
        self.projects.iter().find(|p| p.id == id)
    }

    pub fn user(&self, id: u64) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }

    pub fn user_named(&self, username: &str) -> Option<&User> {
        self.users.iter().find(|u| u.username.eq_ignore_ascii_case(username))
    }

    /// The user `username`, created (a person, not a bot) when missing.
    pub fn ensure_user(&mut self, username: &str, bot: bool) -> u64 {
        if let Some(u) = self.user_named(username) {
            return u.id;
        }
        let id = self.next_id();
        let created_at = self.now();
        self.users.push(User { id, username: username.to_string(), bot, created_at });
        id
    }

    /// Whether `token` may see `project` (GitLab answers 404 to a project its caller cannot see).
    pub fn token_sees(&self, token: &TokenRecord, project: &Project) -> bool {
        let scope = token.scope_path.as_deref().unwrap_or_default();
        match token.kind {
            Kind::Personal => true,
            Kind::Project | Kind::Job => project.path.eq_ignore_ascii_case(scope),
            Kind::Group => project.path.to_ascii_lowercase().starts_with(&format!("{}/", scope.to_ascii_lowercase())),
        }
    }

    pub fn mr(&self, project: u64, iid: u64) -> Option<&Mr> {
        self.mrs.iter().find(|m| m.project == project && m.iid == iid)
    }

    pub fn mr_mut(&mut self, project: u64, iid: u64) -> Option<&mut Mr> {
        self.mrs.iter_mut().find(|m| m.project == project && m.iid == iid)
    }

    /// The next merge request iid in a project (iids count per project, from 1).
    pub fn next_iid(&self, project: u64) -> u64 {
        self.mrs.iter().filter(|m| m.project == project).map(|m| m.iid).max().unwrap_or(0) + 1
    }

    /// The open merge request from `source_branch` of `source_project` into `project`, if any.
    pub fn open_mr_from(&self, project: u64, source_project: u64, source_branch: &str) -> Option<&Mr> {
        self.mrs.iter().find(|m| {
            m.project == project
                && m.source_project == source_project
                && m.source_branch == source_branch
                && m.state == "opened"
        })
    }
}
