//! Autofix on a Forgejo pull request (its number from the Actions event, or `--pr N`): read
//! it, refuse one from a fork (its branch lives in another repository, whose code is untrusted),
//! and keep one comment on it up to date: the one the token's own user wrote and that starts
//! with hone's marker, never another's that carries the marker.

use super::Forgejo;
use crate::error::{Code, HoneError, Result};
use crate::forge::autofix::{Decision, Target, comment_marker, commit_id};
use serde_json::{Value, json};

/// Autofix's reading of PR `number` at the place: the decision, and with `remember` the
/// feedback of reviewers with write access on it.
pub async fn read(
    place: &crate::forge::place::Place,
    number: u64,
    ask: &crate::forge::autofix::Ask<'_>,
    remember: bool,
) -> Result<crate::forge::autofix::Read> {
    let fj = Forgejo::new(place, ask.shared.queue.clone(), ask.bound)?;
    // A fork's PR is never pushed to, whatever `pr.allow_forks` says; review mode pushes nothing.
    let decision = inspect(&fj, number, ask.review).await?;
    let fixing = matches!(decision, Decision::Fix(_)) && remember;
    let feedback = if fixing { Some(super::feedback::forgejo(&fj, number, None).await) } else { None };
    Ok((decision, feedback))
}

/// Read PR `number` and decide whether hone may fix it.
/// `forks_ok`: review mode, which pushes nothing, works on a fork's PR too.
pub async fn inspect(fj: &Forgejo, number: u64, forks_ok: bool) -> Result<Decision> {
    let a = fj.get(&fj.repo_path(&format!("/pulls/{number}"))).await?;
    if !a.ok() {
        let e = HoneError::new(Code::Forge, format!("cannot read PR #{number} of `{}`: {}", fj.repo, a.message()));
        return Err(super::pr::not_found_hint(e, &a));
    }
    decide(&a.body, &fj.repo, number, forks_ok)
}

/// The decision for a PR as Forgejo describes it.
pub fn decide(b: &Value, repo: &str, number: u64, forks_ok: bool) -> Result<Decision> {
    if b["state"].as_str() != Some("open") || b["merged"] == true {
        return Ok(Decision::Skip(format!("PR #{number} is not open")));
    }
    let head_repo = b["head"]["repo"]["full_name"].as_str();
    let own = head_repo.is_some_and(|r| r.eq_ignore_ascii_case(repo));
    if !forks_ok && !own {
        return Ok(Decision::Skip(format!(
            "PR #{number} comes from the fork `{}`: hone does not push to a fork's branch on Forgejo, whatever `pr.allow_forks` says (its code is untrusted and the token may not reach it)",
            head_repo.map_or("unknown".to_string(), |r| r.chars().filter(|c| !c.is_control()).take(200).collect())
        )));
    }
    // Branch names come from the server's answer: only plain branch names go on to git.
    let branch = |k: &str| {
        b[k]["ref"]
            .as_str()
            .filter(|s| git2::Branch::name_is_valid(s).unwrap_or(false) && !s.starts_with('-'))
            .map(str::to_string)
            .ok_or_else(|| HoneError::new(Code::Forge, format!("PR #{number} has no valid {k}.ref")))
    };
    let sha = commit_id(&b["head"]["sha"])
        .ok_or_else(|| HoneError::new(Code::Forge, format!("PR #{number} has no valid head.sha")));
    let base_sha = commit_id(&b["base"]["sha"]).ok_or_else(|| {
        HoneError::new(Code::Forge, format!("Forgejo's answer for PR #{number} names no base commit (`base.sha`)"))
    });
    Ok(Decision::Fix(Target {
        number,
        head_ref: branch("head")?,
        head_sha: sha?,
        base_ref: branch("base")?,
        base_sha,
        feedback: Vec::new(),
        feedback_unread: None,
    }))
}

/// The id of hone's comment among `comments`: written by user `me` (by id), starting with
/// `marker`.
pub fn own_comment(comments: &Value, me: u64, marker: &str) -> Option<u64> {
    comments.as_array()?.iter().find_map(|c| {
        let own = c["user"]["id"].as_u64() == Some(me) && c["body"].as_str().is_some_and(|b| b.starts_with(marker));
        own.then(|| c["id"].as_u64()).flatten()
    })
}

/// Create or edit hone's one comment on PR `number`. Returns the comment's URL.
pub async fn upsert_comment(fj: &Forgejo, number: u64, job: &str, text: &str) -> Result<Option<String>> {
    let marker = comment_marker(job);
    let body = format!("{marker}\n{text}");
    let (me, _) = super::whoami(fj).await?;
    // Forgejo lists an issue's comments whole (no pages), oldest first.
    let list = fj.get(&fj.repo_path(&format!("/issues/{number}/comments"))).await?;
    super::pr::check(&list, || format!("reading the comments of PR #{number}"))?;
    let a = match own_comment(&list.body, me, &marker) {
        Some(id) => fj.patch(&fj.repo_path(&format!("/issues/comments/{id}")), &json!({"body": body})).await?,
        None => fj.post(&fj.repo_path(&format!("/issues/{number}/comments")), &json!({"body": body})).await?,
    };
    super::pr::check(&a, || format!("commenting on PR #{number}"))?;
    Ok(a.body["html_url"].as_str().filter(|u| u.starts_with("https://")).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> Value {
        json!({"state": "open", "merged": false,
            "head": {"ref": "fix", "sha": "a".repeat(40), "repo": {"full_name": "acme/app"}},
            "base": {"ref": "main", "sha": "B".repeat(40), "repo": {"full_name": "acme/app"}}})
    }

    #[test]
    fn forks_closed_and_own_pull_requests() {
        let Decision::Fix(t) = decide(&own(), "acme/app", 5, false).unwrap() else { panic!("own PR is fixed") };
        assert_eq!((t.number, t.head_ref.as_str(), t.base_ref.as_str()), (5, "fix", "main"));
        assert_eq!(t.base_sha.ok(), Some("b".repeat(40)), "the base commit as Forgejo names it");
        for fork in [json!({"full_name": "mallory/app"}), Value::Null] {
            let mut f = own();
            f["head"]["repo"] = fork;
            assert!(matches!(decide(&f, "acme/app", 5, false).unwrap(), Decision::Skip(m) if m.contains("fork")));
        }
        let mut fork = own();
        fork["head"]["repo"]["full_name"] = json!("mallory/app");
        assert!(matches!(decide(&fork, "acme/app", 5, true).unwrap(), Decision::Fix(_)), "review mode pushes nothing");
        let mut merged = own();
        merged["merged"] = json!(true);
        assert!(matches!(decide(&merged, "acme/app", 5, false).unwrap(), Decision::Skip(m) if m.contains("not open")));
        for (k, f, v) in
            [("head", "ref", "-uhelp"), ("head", "ref", "a..b"), ("base", "ref", "m\nx"), ("head", "sha", "HEAD")]
        {
            let mut hostile = own();
            hostile[k][f] = json!(v);
            assert!(decide(&hostile, "acme/app", 5, false).is_err(), "{k}.{f}={v:?}");
        }
        let mut no_base = own();
        no_base["base"]["sha"] = json!("HEAD");
        let Decision::Fix(t) = decide(&no_base, "acme/app", 5, false).unwrap() else { panic!("still fixed") };
        assert!(t.base_sha.is_err());
    }

    #[test]
    fn only_a_comment_by_hones_user_that_starts_with_the_marker_is_hones() {
        let m = comment_marker("lint");
        let comments = json!([
            {"id": 1, "body": format!("{m}\nplanted"), "user": {"id": 66, "login": "hone-bot"}},
            {"id": 2, "body": format!("quote {m}"), "user": {"id": 5}},
            {"id": 4, "body": format!("{m}\nmine"), "user": {"id": 5}},
        ]);
        assert_eq!(own_comment(&comments, 5, &m), Some(4));
        assert_eq!(own_comment(&comments, 7, &m), None);
        assert_eq!(own_comment(&json!({"message": "x"}), 5, &m), None);
    }
}
