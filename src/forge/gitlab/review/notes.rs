//! hone's own notes on a merge request: the discussions it started (its user's, starting with the
//! job's marker; never another user's that quotes it), its pending draft notes, and retiring an
//! earlier review's notes once a new one is up.

use super::super::{GitLab, pr::check};
use crate::error::Result;
use serde_json::{Value, json};

/// The most pages of discussions read (100 a page).
const DISCUSSION_PAGES: u32 = 20;

/// A discussion hone started on the merge request, by its first note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub discussion: String,
    pub note: u64,
    pub body: String,
    /// `(new_path, new_line, head_sha)` of a note on the diff.
    pub position: Option<(String, u64, String)>,
    /// Someone else wrote in the discussion: it is resolved, not deleted.
    pub replied: bool,
    pub resolved: bool,
}

/// A discussion id as GitLab writes one (it goes into a request's path).
fn discussion_id(v: &Value) -> Option<String> {
    v.as_str().filter(|s| s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit())).map(str::to_string)
}

/// hone's discussion among GitLab's answer for one: its first note is by `me`, not a system
/// note, and starts with `marker`.
fn own(d: &Value, me: u64, marker: &str) -> Option<Earlier> {
    let notes = d["notes"].as_array()?;
    let first = notes.first()?;
    let body = first["body"].as_str()?;
    let mine = first["author"]["id"].as_u64() == Some(me) && first["system"].as_bool() != Some(true);
    if !mine || !body.starts_with(marker) {
        return None;
    }
    let p = &first["position"];
    let position = match (p["new_path"].as_str(), p["new_line"].as_u64(), p["head_sha"].as_str()) {
        (Some(path), Some(line), Some(head)) => Some((path.to_string(), line, head.to_ascii_lowercase())),
        _ => None,
    };
    Some(Earlier {
        discussion: discussion_id(&d["id"])?,
        note: first["id"].as_u64()?,
        body: body.to_string(),
        position,
        replied: notes.iter().any(|n| n["author"]["id"].as_u64() != Some(me) && n["system"].as_bool() != Some(true)),
        resolved: first["resolved"].as_bool() == Some(true),
    })
}

/// The discussions hone started on merge request `iid` for `marker`, oldest first.
pub async fn earlier(gl: &GitLab, iid: u64, me: u64, marker: &str) -> Result<Vec<Earlier>> {
    let mut out = Vec::new();
    for page in 1..=DISCUSSION_PAGES {
        let path = format!("/merge_requests/{iid}/discussions?per_page=100&page={page}");
        let a = gl.get(&gl.project_path(&path)).await?;
        check(&a, || format!("reading the discussions of merge request !{iid}"))?;
        let list = a.body.as_array().cloned().unwrap_or_default();
        out.extend(list.iter().filter_map(|d| own(d, me, marker)));
        if list.len() < 100 {
            break;
        }
    }
    Ok(out)
}

/// Delete hone's pending draft notes (a run that stopped before publishing); how many other
/// draft notes the token's user has pending there (GitLab lists only the caller's).
pub async fn clear_drafts(gl: &GitLab, iid: u64, marker: &str) -> Result<usize> {
    let a = gl.get(&gl.project_path(&format!("/merge_requests/{iid}/draft_notes"))).await?;
    check(&a, || format!("reading the draft notes of merge request !{iid}"))?;
    let mut others = 0;
    for d in a.body.as_array().into_iter().flatten() {
        match (d["id"].as_u64(), d["note"].as_str().is_some_and(|n| n.starts_with(marker))) {
            (Some(id), true) => delete_draft(gl, iid, id).await?,
            _ => others += 1,
        }
    }
    Ok(others)
}

pub async fn delete_draft(gl: &GitLab, iid: u64, id: u64) -> Result<()> {
    let a = gl.delete(&gl.project_path(&format!("/merge_requests/{iid}/draft_notes/{id}"))).await?;
    check(&a, || format!("deleting draft note {id} of merge request !{iid}"))
}

/// Take an earlier review's discussion down: delete hone's note, or, when someone replied,
/// resolve the discussion and keep their words.
pub async fn retire(gl: &GitLab, iid: u64, e: &Earlier) -> Result<()> {
    let a = if e.replied {
        if e.resolved {
            return Ok(());
        }
        let path = format!("/merge_requests/{iid}/discussions/{}", e.discussion);
        gl.put(&gl.project_path(&path), &json!({"resolved": true})).await?
    } else {
        gl.delete(&gl.project_path(&format!("/merge_requests/{iid}/notes/{}", e.note))).await?
    };
    check(&a, || format!("retiring hone's earlier note {} on merge request !{iid}", e.note))
}

/// Replace the text of note `id`.
pub async fn edit(gl: &GitLab, iid: u64, id: u64, body: &str) -> Result<()> {
    let a = gl.put(&gl.project_path(&format!("/merge_requests/{iid}/notes/{id}")), &json!({"body": body})).await?;
    check(&a, || format!("editing hone's note {id} on merge request !{iid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_discussions_hones_user_started_with_the_marker_are_hones() {
        let m = "<!-- hone:review job=lint -->";
        let d = |id: &str, notes: Value| json!({"id": id, "notes": notes});
        let h = "a".repeat(40);
        let pos = json!({"new_path": "src/a.rs", "new_line": 4, "head_sha": "F".repeat(40)});
        let mine = d(
            &h,
            json!([{"id": 1, "body": format!("{m}\nx"), "author": {"id": 5}, "position": pos, "resolved": false},
                                 {"id": 2, "body": "thanks", "author": {"id": 9}}]),
        );
        let e = own(&mine, 5, m).unwrap();
        assert_eq!((e.note, e.replied, e.resolved), (1, true, false));
        assert_eq!(e.position, Some(("src/a.rs".into(), 4, "f".repeat(40))));
        let planted = d(&h, json!([{"id": 3, "body": format!("{m}\nplanted"), "author": {"id": 66}}]));
        assert!(own(&planted, 5, m).is_none(), "another user's note with the marker");
        let quoted = d(&h, json!([{"id": 4, "body": format!("> {m}"), "author": {"id": 5}}]));
        assert!(own(&quoted, 5, m).is_none());
        let system = d(&h, json!([{"id": 6, "body": m, "author": {"id": 5}, "system": true}]));
        assert!(own(&system, 5, m).is_none());
        let hostile = d("../../../user", json!([{"id": 7, "body": m, "author": {"id": 5}}]));
        assert!(own(&hostile, 5, m).is_none(), "a discussion id goes into a path only when it is one");
        let alone = own(&d(&h, json!([{"id": 8, "body": m, "author": {"id": 5}}])), 5, m).unwrap();
        assert!(!alone.replied && alone.position.is_none());
    }
}
