//! Autofix mode: fix an existing pull request in place. hone reads the PR, refuses fork branches
//! (unless allowed), skips a PR whose head commit it made itself (the `Hone-Job:` trailer and
//! hone's configured author and committer, so it never triggers itself), works on the head
//! branch, pushes a new commit to it, and keeps one comment on the PR up to date: the one its own
//! identity wrote, never another's that carries the marker.

use super::github::GitHub;
use crate::error::{Code, HoneError, Result};
use serde_json::json;

/// The PR being fixed.
#[derive(Debug, Clone)]
pub struct Target {
    pub number: u64,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    /// The PR's base commit as the forge names it (GitHub's `base.sha`, GitLab's
    /// `diff_refs.base_sha`), where the repository's instruction files are read: never the
    /// head's, which the PR's author wrote. `Err`: why there is none (the forge named none, or,
    /// once intake has looked, hone could not fetch it).
    pub base_sha: std::result::Result<String, String>,
    /// Trusted reviewers' feedback on the PR (filled in at intake for hone's memory).
    pub feedback: Vec<super::feedback::Feedback>,
    /// Why the feedback could not be read (the run goes on without it).
    pub feedback_unread: Option<String>,
}

/// Why autofix decided not to act.
pub enum Decision {
    Fix(Target),
    Skip(String),
}

pub fn comment_marker(job: &str) -> String {
    format!("<!-- hone:autofix job={job} -->")
}

/// The PR number from `GITHUB_EVENT_PATH` when the workflow was triggered by a pull request.
pub fn number_from_event(env: &crate::env::RunEnv) -> Option<u64> {
    if !env.github_event_name.as_deref()?.starts_with("pull_request") {
        return None;
    }
    let text = std::fs::read_to_string(env.github_event_path.as_ref()?).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["pull_request"]["number"].as_u64().or_else(|| v["number"].as_u64())
}

/// Read the PR and decide whether hone may fix it.
pub async fn inspect(gh: &GitHub, number: u64, allow_forks: bool) -> Result<Decision> {
    let resp = gh.get(&gh.repo_path(&format!("/pulls/{number}"))).await?;
    if !resp.ok() {
        return Err(HoneError::new(Code::Forge, format!("cannot read PR #{number}: {}", resp.message())));
    }
    let b = &resp.body;
    if b["state"].as_str() != Some("open") {
        return Ok(Decision::Skip(format!("PR #{number} is not open")));
    }
    let head_repo = b["head"]["repo"]["full_name"].as_str().unwrap_or("");
    let this_repo = format!("{}/{}", gh.owner, gh.repo);
    if !head_repo.eq_ignore_ascii_case(&this_repo) && !allow_forks {
        return Ok(Decision::Skip(format!(
            "PR #{number} comes from the fork `{head_repo}`: hone does not push to a fork's branch (its code is untrusted and the token may not reach it); set `pr.allow_forks: true` to allow it"
        )));
    }
    let field = |k: &str, f: &str| {
        b[k][f]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| HoneError::new(Code::Forge, format!("PR #{number} has no {k}.{f}")))
    };
    Ok(Decision::Fix(Target {
        number,
        head_ref: field("head", "ref")?,
        head_sha: field("head", "sha")?,
        base_ref: field("base", "ref")?,
        base_sha: commit_id(&b["base"]["sha"])
            .ok_or_else(|| format!("GitHub's answer for PR #{number} names no base commit")),
        feedback: Vec::new(),
        feedback_unread: None,
    }))
}

/// `v` when it is a full commit id (40 hex digits, as a forge writes them): nothing else goes on
/// to git as a commit.
pub fn commit_id(v: &serde_json::Value) -> Option<String> {
    v.as_str().filter(|s| s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit())).map(str::to_ascii_lowercase)
}

/// Who made a commit: (name, email) of its author and of its committer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MadeBy {
    pub author: (String, String),
    pub committer: (String, String),
}

impl MadeBy {
    /// The author and committer of `c`.
    pub fn of(c: &git2::Commit<'_>) -> MadeBy {
        let who = |s: git2::Signature<'_>| {
            (
                String::from_utf8_lossy(s.name_bytes()).into_owned(),
                String::from_utf8_lossy(s.email_bytes()).into_owned(),
            )
        };
        MadeBy { author: who(c.author()), committer: who(c.committer()) }
    }
}

/// Who made commit `sha`, as fetched into hone's repository for `remote`.
pub fn made_by(remote: &super::remote::Remote, sha: &str) -> Result<MadeBy> {
    let repo = git2::Repository::open_bare(remote.git_dir())?;
    let c = repo.find_commit(git2::Oid::from_str(sha)?)?;
    Ok(MadeBy::of(&c))
}

/// Whether hone made the commit for `job`: its message carries the job's trailer, and its author
/// and committer are both hone's configured identity (`git.author_name`, `git.author_email`). A
/// loop guard, not proof: anyone can write that trailer and that identity into a commit, and so
/// stop autofix on their own PR, but a trailer alone (a PR author's, or one in model text) does
/// not.
pub fn made_by_hone(message: &str, by: &MadeBy, job: &crate::spec::Job) -> bool {
    let hone = (job.git.author_name.clone(), job.git.author_email.clone());
    by.author == hone && by.committer == hone && message.lines().any(|l| l.trim() == format!("Hone-Job: {}", job.name))
}

/// The login hone's comments are written by: the token's user (`GET /user`), or, for a token
/// that may not read it (an installation token: `GITHUB_TOKEN` is the Actions App's, whose bot is
/// `github-actions[bot]`; another App's token is its own `slug[bot]`), the login GraphQL's
/// `viewer` names. Never guessed: a 403 may be any App's token, or a rate limit.
pub async fn own_login(gh: &GitHub) -> Result<String> {
    own_login_asked(gh).await.map(|(login, _)| login)
}

/// `own_login`, with how many requests it took (one or two).
pub async fn own_login_asked(gh: &GitHub) -> Result<(String, u64)> {
    let me = gh.get("/user").await?;
    if let Some(login) = me.body["login"].as_str().filter(|_| me.ok()) {
        return Ok((login.to_string(), 1));
    }
    if me.status == 403 {
        let viewer = gh.graphql_query("query { viewer { login } }", &serde_json::json!({})).await?;
        let login = viewer.body["data"]["viewer"]["login"].as_str().filter(|l| viewer.ok() && !l.is_empty());
        if let Some(login) = login {
            return Ok((login.to_string(), 2));
        }
    }
    Err(HoneError::new(Code::Forge, format!("cannot tell whose token this is (GET /user): {}", me.message()))
        .hint("give hone a token that may read its own user (GET /user, or GraphQL `viewer`)"))
}

/// The id of hone's comment among `comments`: written by `login`, starting with `marker`.
fn own_comment(comments: &serde_json::Value, login: &str, marker: &str) -> Option<u64> {
    comments.as_array()?.iter().find_map(|c| {
        let own =
            c["user"]["login"].as_str() == Some(login) && c["body"].as_str().is_some_and(|b| b.starts_with(marker));
        own.then(|| c["id"].as_u64()).flatten()
    })
}

/// Create or edit hone's one comment on the PR (only one hone's own identity wrote: `login` when
/// hone knows it, as for a GitHub App's bot, else the token's). Returns its URL.
pub async fn upsert_comment(
    gh: &GitHub,
    number: u64,
    (job, login): (&str, Option<&str>),
    text: &str,
) -> Result<Option<String>> {
    let marker = comment_marker(job);
    let body = format!("{marker}\n{text}");
    let login = match login {
        Some(l) => l.to_string(),
        None => own_login(gh).await?,
    };
    let list = gh.get(&gh.repo_path(&format!("/issues/{number}/comments?per_page=100"))).await?;
    let existing = own_comment(&list.body, &login, &marker);
    let resp = match existing {
        Some(id) => gh.patch(&gh.repo_path(&format!("/issues/comments/{id}")), &json!({"body": body})).await?,
        None => gh.post(&gh.repo_path(&format!("/issues/{number}/comments")), &json!({"body": body})).await?,
    };
    if !resp.ok() {
        return Err(HoneError::new(Code::Forge, format!("commenting on PR #{number} failed: {}", resp.message())));
    }
    Ok(resp.body["html_url"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> crate::spec::Job {
        let yaml = "version: 1\nname: lint\ntask: t\nmodel: { provider: script, script: s.yaml }\nverify: [{ name: c, run: \"true\" }]\n";
        crate::spec::parse(std::path::Path::new("job.yaml"), yaml).unwrap()
    }

    fn by(name: &str, email: &str) -> MadeBy {
        let who = (name.to_string(), email.to_string());
        MadeBy { author: who.clone(), committer: who }
    }

    #[test]
    fn trailer_and_identity_detection() {
        let job = job();
        let hone = by(&job.git.author_name, &job.git.author_email);
        assert!(made_by_hone("hone: fix\n\nbody\n\nHone-Job: lint\nHone-Run: x\n", &hone, &job));
        assert!(!made_by_hone("fix\n\nHone-Job: other\n", &hone, &job));
        assert!(!made_by_hone("mentions Hone-Job: lint inline", &hone, &job));
        let trailer = "fix\n\nHone-Job: lint\n";
        assert!(!made_by_hone(trailer, &by("mallory", "m@example.com"), &job), "a trailer alone");
        let half = MadeBy { committer: ("mallory".into(), "m@example.com".into()), ..hone };
        assert!(!made_by_hone(trailer, &half, &job), "hone's author but another committer");
    }

    #[test]
    fn only_a_comment_by_hones_login_that_starts_with_the_marker_is_hones() {
        let m = comment_marker("lint");
        let c = serde_json::json!([
            {"id": 1, "body": format!("{m}\nplanted"), "user": {"login": "mallory"}},
            {"id": 2, "body": format!("quote: {m}"), "user": {"login": "hone-bot"}},
            {"id": 3, "body": format!("{m}\nmine"), "user": {"login": "hone-bot"}},
        ]);
        assert_eq!(own_comment(&c, "hone-bot", &m), Some(3));
        assert_eq!(own_comment(&c, "github-actions[bot]", &m), None);
        assert_eq!(own_comment(&serde_json::json!({"message": "x"}), "hone-bot", &m), None);
    }
}
