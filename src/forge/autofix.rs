//! Autofix mode: fix an existing pull request in place. hone reads the PR, refuses fork branches
//! (unless allowed), skips a PR whose head commit it made itself (the `Hone-Job:` trailer, so it
//! never triggers itself), works on the head branch, pushes a new commit to it, and keeps one
//! comment on the PR up to date.

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
    }))
}

/// Whether a commit message carries this job's trailer.
pub fn made_by_hone(message: &str, job: &str) -> bool {
    message.lines().any(|l| l.trim() == format!("Hone-Job: {job}"))
}

/// Create or edit hone's one comment on the PR. Returns its URL.
pub async fn upsert_comment(gh: &GitHub, number: u64, job: &str, text: &str) -> Result<Option<String>> {
    let marker = comment_marker(job);
    let body = format!("{marker}\n{text}");
    let list = gh.get(&gh.repo_path(&format!("/issues/{number}/comments?per_page=100"))).await?;
    let existing = list.body.as_array().and_then(|a| {
        a.iter().find(|c| c["body"].as_str().is_some_and(|b| b.contains(&marker))).and_then(|c| c["id"].as_u64())
    });
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

    #[test]
    fn trailer_detection() {
        assert!(made_by_hone("hone: fix\n\nbody\n\nHone-Job: lint\nHone-Run: x\n", "lint"));
        assert!(!made_by_hone("fix\n\nHone-Job: other\n", "lint"));
        assert!(!made_by_hone("mentions Hone-Job: lint inline", "lint"));
    }
}
