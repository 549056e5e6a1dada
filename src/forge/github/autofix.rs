//! GitHub's side of autofix: read a pull request and decide whether hone may fix it, and keep
//! hone's one comment on it, written by hone's own login.

use super::GitHub;
use crate::error::{Code, HoneError, Result};
use crate::forge::autofix::{Decision, Target, comment_marker, commit_id};
use serde_json::json;

/// Autofix's reading of PR `number` at the place: the decision, and with `remember` the
/// trusted reviewers' feedback on it.
pub async fn read(
    place: &crate::forge::place::Place,
    token: &crate::forge::credential::Token,
    number: u64,
    ask: &crate::forge::autofix::Ask<'_>,
    remember: bool,
) -> Result<crate::forge::autofix::Read> {
    let (owner, repo) = place.repo.as_deref().and_then(|r| r.split_once('/')).ok_or_else(|| {
        HoneError::new(Code::Forge, "cannot tell the GitHub repository; set GITHUB_REPOSITORY=owner/repo")
    })?;
    let gh = GitHub::new(place.api()?, token.secret(), owner, repo, ask.shared.queue.clone())?;
    // Review mode pushes nothing, so a fork's PR is as good as any.
    let decision = inspect(&gh, number, ask.job.pr.allow_forks || ask.review).await?;
    let fixing = matches!(decision, Decision::Fix(_)) && remember;
    // A GitHub App's bot login is known without asking `/user`.
    let own = place.login.as_deref();
    let feedback = if fixing {
        Some(
            crate::forge::pace::bounded(
                ask.bound,
                || format!("reading the feedback on PR #{number}"),
                super::feedback::github(&gh, number, own),
            )
            .await,
        )
    } else {
        None
    };
    Ok((decision, feedback))
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
        base_sha: commit_id(&b["base"]["sha"]).ok_or_else(|| {
            HoneError::new(Code::Forge, format!("GitHub's answer for PR #{number} names no base commit"))
        }),
        feedback: Vec::new(),
        feedback_unread: None,
    }))
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
    job: &str,
    login: Option<&str>,
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
