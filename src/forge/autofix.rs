//! Autofix mode: fix an existing pull request in place. hone reads the PR, refuses fork branches
//! (unless allowed), skips a PR whose head commit it made itself (the `Hone-Job:` trailer and
//! hone's configured author and committer, so it never triggers itself), works on the head
//! branch, pushes a new commit to it, and keeps one comment on the PR up to date: the one its own
//! identity wrote, never another's that carries the marker.

use crate::error::Result;

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
    pub base_sha: Result<String>,
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
    if !env.actions_event_name.as_deref()?.starts_with("pull_request") {
        return None;
    }
    let text = std::fs::read_to_string(env.actions_event_path.as_ref()?).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["pull_request"]["number"].as_u64().or_else(|| v["number"].as_u64())
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
/// How a PR is read for autofix or review.
pub struct Ask<'a> {
    pub job: &'a crate::spec::Job,
    /// Review mode: a fork's PR is as good as any (nothing is pushed), and no feedback is read.
    pub review: bool,
    pub shared: &'a super::Shared,
    pub bound: &'a crate::bound::Bound,
}

/// What an autofix read gives: the decision, and the feedback when it was asked for.
pub type Read = (Decision, Option<Result<Vec<super::feedback::Feedback>>>);

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
}
