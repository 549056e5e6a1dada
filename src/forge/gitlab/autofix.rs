//! Autofix on a GitLab merge request (`--pr N` is its iid): read it, refuse one from a fork
//! (its branch lives in another project, whose code is untrusted), and keep one note on it up
//! to date: the one hone's own user wrote, never another's that carries the marker.

use super::GitLab;
use crate::error::{Code, HoneError, Result};
use crate::forge::autofix::{Decision, Target, comment_marker, commit_id};
use serde_json::{Value, json};

/// The merge request a GitLab merge request pipeline runs for (`CI_MERGE_REQUEST_IID`).
pub fn number_from_ci(env: &crate::env::RunEnv) -> Option<u64> {
    crate::forge::place::in_gitlab_ci(env).then(|| env.var("CI_MERGE_REQUEST_IID")?.parse().ok()).flatten()
}

/// Autofix's reading of merge request `iid` at the place: the decision, and with `remember`
/// the trusted reviewers' feedback on it.
pub async fn read(
    place: &crate::forge::place::Place,
    iid: u64,
    ask: &crate::forge::autofix::Ask<'_>,
    remember: bool,
) -> Result<crate::forge::autofix::Read> {
    let gl = GitLab::new(place, ask.shared.queue.clone(), ask.bound)?;
    let decision = inspect(&gl, iid, ask.review).await?;
    let fixing = matches!(decision, Decision::Fix(_)) && remember;
    let feedback = if fixing { Some(super::feedback::gitlab(&gl, iid, None).await) } else { None };
    Ok((decision, feedback))
}

/// Read merge request `iid` and decide whether hone may fix it.
/// `forks_ok`: review mode, which pushes nothing, works on a fork's merge request too.
pub async fn inspect(gl: &GitLab, iid: u64, forks_ok: bool) -> Result<Decision> {
    let a = gl.get(&gl.project_path(&format!("/merge_requests/{iid}"))).await?;
    if !a.ok() {
        let e = HoneError::new(
            Code::Forge,
            format!("cannot read merge request !{iid} of `{}`: {}", gl.project, a.message()),
        );
        return Err(super::pr::not_found_hint(e, &a));
    }
    decide(&a.body, iid, forks_ok)
}

/// The decision for a merge request as GitLab describes it.
fn decide(b: &Value, iid: u64, forks_ok: bool) -> Result<Decision> {
    if b["state"].as_str() != Some("opened") {
        return Ok(Decision::Skip(format!("merge request !{iid} is not open")));
    }
    let (source, target) = (b["source_project_id"].as_u64(), b["target_project_id"].as_u64());
    if !forks_ok && (source.is_none() || source != target) {
        return Ok(Decision::Skip(format!(
            "merge request !{iid} comes from a fork (project {}): hone does not push to a fork's branch on GitLab, whatever `pr.allow_forks` says (its code is untrusted and the token may not reach it)",
            source.map_or("unknown".to_string(), |s| s.to_string())
        )));
    }
    // Branch names come from the server's answer: only plain branch names go on to git.
    let branch = |k: &str| {
        b[k].as_str()
            .filter(|s| git2::Branch::name_is_valid(s).unwrap_or(false) && !s.starts_with('-'))
            .map(str::to_string)
            .ok_or_else(|| HoneError::new(Code::Forge, format!("merge request !{iid} has no valid {k}")))
    };
    let sha = commit_id(&b["sha"])
        .ok_or_else(|| HoneError::new(Code::Forge, format!("merge request !{iid} has no valid sha")));
    let base_sha = commit_id(&b["diff_refs"]["base_sha"]).ok_or_else(|| {
        let why = format!("GitLab's answer for merge request !{iid} names no base commit (`diff_refs.base_sha`)");
        HoneError::new(Code::Forge, why)
    });
    Ok(Decision::Fix(Target {
        number: iid,
        head_ref: branch("source_branch")?,
        head_sha: sha?,
        base_ref: branch("target_branch")?,
        base_sha,
        feedback: Vec::new(),
        feedback_unread: None,
    }))
}

/// The id of hone's note among `notes`: written by user `me`, not a system note, starting with
/// `marker`.
fn own_note(notes: &Value, me: u64, marker: &str) -> Option<u64> {
    notes.as_array()?.iter().find_map(|n| {
        let own = n["author"]["id"].as_u64() == Some(me)
            && n["system"].as_bool() != Some(true)
            && n["body"].as_str().is_some_and(|b| b.starts_with(marker));
        own.then(|| n["id"].as_u64()).flatten()
    })
}

/// The most pages of notes read looking for hone's (100 a page, oldest first).
const NOTE_PAGES: u32 = 20;

/// hone's note on merge request `iid`, looked for page by page (system notes count too).
async fn find_own_note(gl: &GitLab, iid: u64, me: u64, marker: &str) -> Result<Option<u64>> {
    for page in 1..=NOTE_PAGES {
        let path = format!("/merge_requests/{iid}/notes?per_page=100&sort=asc&page={page}");
        let a = gl.get(&gl.project_path(&path)).await?;
        super::pr::check(&a, || format!("reading the notes of merge request !{iid}"))?;
        if let Some(id) = own_note(&a.body, me, marker) {
            return Ok(Some(id));
        }
        if a.body.as_array().is_none_or(|l| l.len() < 100) {
            return Ok(None);
        }
    }
    Ok(None)
}

/// Create or edit hone's one note on merge request `iid`. Returns the merge request's URL.
pub async fn upsert_note(gl: &GitLab, iid: u64, job: &str, text: &str) -> Result<Option<String>> {
    let marker = comment_marker(job);
    let body = format!("{marker}\n{text}");
    let me = super::whoami(gl).await?;
    let a = match find_own_note(gl, iid, me, &marker).await? {
        Some(id) => {
            gl.put(&gl.project_path(&format!("/merge_requests/{iid}/notes/{id}")), &json!({"body": body})).await?
        }
        None => gl.post(&gl.project_path(&format!("/merge_requests/{iid}/notes")), &json!({"body": body})).await?,
    };
    super::pr::check(&a, || format!("commenting on merge request !{iid}"))?;
    let mr = gl.get(&gl.project_path(&format!("/merge_requests/{iid}"))).await?;
    Ok(mr.body["web_url"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forks_closed_and_own_merge_requests() {
        let sha = "a".repeat(40);
        let base = "B".repeat(40);
        let own = json!({"state": "opened", "source_project_id": 7, "target_project_id": 7, "source_branch": "fix", "sha": sha, "target_branch": "main",
            "diff_refs": {"base_sha": base, "start_sha": "c".repeat(40), "head_sha": sha}});
        let Decision::Fix(t) = decide(&own, 5, false).unwrap() else { panic!("own MR is fixed") };
        assert_eq!(
            (t.number, t.head_ref.as_str(), t.head_sha.as_str(), t.base_ref.as_str()),
            (5, "fix", sha.as_str(), "main")
        );
        assert_eq!(t.base_sha.ok(), Some(base.to_ascii_lowercase()), "the base commit as GitLab names it");
        // A base that is no full commit id is none: the run reads no instruction files.
        for bad in [json!(null), json!("HEAD"), json!("-uhelp"), json!("b".repeat(39))] {
            let mut odd = own.clone();
            odd["diff_refs"]["base_sha"] = bad.clone();
            let Decision::Fix(t) = decide(&odd, 5, false).unwrap() else { panic!("still fixed") };
            assert!(t.base_sha.is_err_and(|e| e.code == Code::Forge && e.message.contains("no base commit")), "{bad}");
        }
        let mut fork = own.clone();
        fork["source_project_id"] = json!(99);
        assert!(matches!(decide(&fork, 5, false).unwrap(), Decision::Skip(m) if m.contains("fork")));
        assert!(matches!(decide(&fork, 5, true).unwrap(), Decision::Fix(_)), "review mode pushes nothing");
        let mut closed = own.clone();
        closed["state"] = json!("merged");
        assert!(matches!(decide(&closed, 5, false).unwrap(), Decision::Skip(m) if m.contains("not open")));
        let mut broken = own.clone();
        broken["sha"] = Value::Null;
        assert!(decide(&broken, 5, false).is_err());
        // Branch names and shas from the server's answer go to git only when they are plain.
        for (k, v) in
            [("source_branch", "-uhelp"), ("source_branch", "a..b"), ("target_branch", "main\nx"), ("sha", "HEAD")]
        {
            let mut hostile = own.clone();
            hostile[k] = json!(v);
            assert!(decide(&hostile, 5, false).is_err(), "{k}={v:?}");
        }
    }

    #[test]
    fn only_a_note_by_hones_user_that_starts_with_the_marker_is_hones() {
        let m = comment_marker("lint");
        let notes = json!([
            {"id": 1, "body": format!("{m}\nplanted"), "author": {"id": 66}, "system": false},
            {"id": 2, "body": format!("quote {m}"), "author": {"id": 5}, "system": false},
            {"id": 3, "body": format!("{m}\nsystem"), "author": {"id": 5}, "system": true},
            {"id": 4, "body": format!("{m}\nmine"), "author": {"id": 5}, "system": false},
        ]);
        assert_eq!(own_note(&notes, 5, &m), Some(4));
        assert_eq!(own_note(&notes, 7, &m), None);
    }
}
