//! Review mode on GitLab: hone's verified change offered on a merge request as one review (draft
//! notes published together): a note per suggestion on the diff, in GitLab's `suggestion:-A+B`
//! syntax, and the summary as a note of its own. A re-run replaces hone's earlier review.

mod diff;
mod notes;
mod render;

pub use diff::{DiffRefs, commentable, latest_version};

use super::{GitLab, pr::check};
use crate::error::{Code, HoneError, Result};
use crate::forge::place::CI_JOB_TOKEN;
use crate::forge::review::{Input, ReviewOperation, ReviewPlan, ReviewReport, body, marker};
use notes::Earlier;
use serde_json::{Value, json};

/// The most characters GitLab takes in a note (`Note`'s length validation).
pub const GITLAB_MAX_BODY: usize = 1_000_000;

/// A note hone is about to post: its body, and its position on the diff (`None`: the summary).
#[derive(Debug, Clone, PartialEq)]
struct Planned {
    body: String,
    position: Option<Value>,
}

/// The notes of `plan`: the summary first, then a note per suggestion.
fn planned_notes(marker: &str, plan: &ReviewPlan, refs: &DiffRefs, body: &str, out: &mut ReviewReport) -> Vec<Planned> {
    let mut notes = vec![Planned { body: body.to_string(), position: None }];
    for s in &plan.suggestions {
        let (text, line) = match render::anchor(s.start, s.end) {
            Some((line, above, below)) => (render::suggestion_note(marker, s, above, below), line),
            None => (render::long_change_note(marker, s), s.end),
        };
        match refs.position(&s.path, line) {
            Some(position) => {
                out.suggestions += usize::from(text.contains("suggestion:-"));
                notes.push(Planned { body: text, position: Some(position) });
            }
            None => out.warnings.push(format!(
                "line {line} of `{}` is not in the merge request's diff on GitLab: that suggestion was not posted",
                s.path
            )),
        }
    }
    notes
}

/// Post hone's review of `input.commit_sha` on merge request `input.number`: the merge request's
/// diff, the plan of suggestions and patch, its summary, one review (see `publish_plan`).
pub async fn publish(gl: &GitLab, ws: &crate::git::Workspace, input: &Input<'_>) -> Result<ReviewReport> {
    let (lines, refs) = commentable(gl, input.number).await?;
    let plan = match input.commit_sha {
        Some(commit) => crate::forge::review::plan_on(ws, input.head_sha, commit, lines).await?,
        None => ReviewPlan::default(),
    };
    let text = body::render(&plan, input, GITLAB_MAX_BODY);
    publish_plan(gl, input, &plan, &refs, &text).await
}

/// Post `plan` on merge request `input.number` as one review (`body`: its summary, the marker
/// first), after checking the merge request is still at `input.head_sha`; retire hone's earlier
/// review. With nothing to change (`input.commit_sha` is `None`), hone's earlier summary is
/// edited to say so and its suggestions retired; with no earlier review nothing is posted.
pub async fn publish_plan(
    gl: &GitLab,
    input: &Input<'_>,
    plan: &ReviewPlan,
    refs: &DiffRefs,
    body: &str,
) -> Result<ReviewReport> {
    let iid = input.number;
    let mut out = ReviewReport {
        forge: "gitlab".into(),
        number: iid,
        commit: input.head_sha.to_string(),
        in_patch: plan.in_patch_lines(),
        ..ReviewReport::default()
    };
    if gl.job_token() {
        // A review that was not posted is not a success: the run says so with an error.
        return Err(HoneError::new(
            Code::Forge,
            format!("{CI_JOB_TOKEN} cannot write notes on a merge request: no review was posted"),
        )
        .hint("put a project access token with the `api` scope in GITLAB_TOKEN for review mode"));
    }
    let latest = latest_version(gl, iid).await?;
    if !latest.head_sha.eq_ignore_ascii_case(input.head_sha) || latest.head_sha != refs.head_sha {
        return Err(HoneError::new(
            Code::Forge,
            format!(
                "merge request !{iid} moved on: its head is now {}, hone's change was made on {}; no review was posted",
                latest.head_sha, input.head_sha
            ),
        )
        .hint("run hone again on the merge request's new head"));
    }
    let (me, mark) = (super::whoami(gl).await?, marker(input.job));
    let earlier = notes::earlier(gl, iid, me, &mark).await?;
    let others = notes::clear_drafts(gl, iid, &mark).await?;
    if input.commit_sha.is_none() {
        return nothing_to_change(gl, iid, body, earlier, out).await;
    }
    let planned = planned_notes(&mark, plan, refs, body, &mut out);
    if let Some(summary) = same_review(&earlier, &planned, &refs.head_sha) {
        if summary.body != body {
            notes::edit(gl, iid, summary.note, body).await?;
        }
        out.operation = ReviewOperation::Updated;
        out.url = note_url(gl, iid, summary.note).await?;
        return Ok(out);
    }
    post_review(gl, iid, &planned, others, &mut out).await?;
    let now = notes::earlier(gl, iid, me, &mark).await?;
    let new: Vec<&Earlier> = now.iter().filter(|n| earlier.iter().all(|e| e.note != n.note)).collect();
    let on_diff = new.iter().filter(|n| n.position.is_some()).count();
    if on_diff < planned.len() - 1 {
        out.warnings.push(format!(
            "GitLab published {on_diff} of hone's {} notes on the diff of !{iid}: the others were dropped (lines GitLab did not accept)",
            planned.len() - 1
        ));
    }
    if let Some(summary) = new.iter().find(|n| n.position.is_none()) {
        out.url = note_url(gl, iid, summary.note).await?;
    }
    for e in &earlier {
        notes::retire(gl, iid, e).await?;
        out.superseded.push(e.note);
    }
    out.operation = ReviewOperation::Created;
    Ok(out)
}

/// Create a draft note per planned note, then publish each by its id: never GitLab's bulk
/// publish, which would also post any draft the token's user has pending or writes meanwhile
/// (a person reviewing with the same account) under hone's review.
async fn post_review(gl: &GitLab, iid: u64, planned: &[Planned], others: usize, out: &mut ReviewReport) -> Result<()> {
    let mut drafts = Vec::new();
    for p in planned {
        let mut fields = json!({"note": p.body});
        if let Some(position) = &p.position {
            fields["position"] = position.clone();
        }
        let a = gl.post(&gl.project_path(&format!("/merge_requests/{iid}/draft_notes")), &fields).await?;
        let made = check(&a, || format!("writing a draft note on merge request !{iid}")).and_then(|()| {
            a.body["id"].as_u64().ok_or_else(|| HoneError::new(Code::Forge, "GitLab answered without a draft note id"))
        });
        match made {
            Ok(id) => drafts.push(id),
            Err(e) => {
                // Leave no half review behind: the drafts so far go.
                for id in drafts {
                    let _ = notes::delete_draft(gl, iid, id).await;
                }
                return Err(e);
            }
        }
    }
    if others > 0 {
        out.warnings.push(format!(
            "the token's user has {others} other pending draft note(s) on !{iid}: hone published only its own and left those unpublished"
        ));
    }
    for id in drafts {
        let a =
            gl.put(&gl.project_path(&format!("/merge_requests/{iid}/draft_notes/{id}/publish")), &json!({})).await?;
        check(&a, || format!("publishing hone's draft note {id} on merge request !{iid}"))?;
    }
    Ok(())
}

/// hone's earlier summary, when its earlier review has exactly the planned notes on this head.
fn same_review<'e>(earlier: &'e [Earlier], planned: &[Planned], head: &str) -> Option<&'e Earlier> {
    let mut summaries = earlier.iter().filter(|e| e.position.is_none());
    let summary = summaries.next()?;
    if summaries.next().is_some() || earlier.len() != planned.len() {
        return None;
    }
    let key =
        |body: &str, p: &Value| (body.to_string(), p["new_path"].as_str().map(str::to_string), p["new_line"].as_u64());
    let mut want: Vec<_> = planned.iter().filter_map(|p| p.position.as_ref().map(|pos| key(&p.body, pos))).collect();
    let mut have: Vec<_> = earlier
        .iter()
        .filter_map(|e| e.position.as_ref().filter(|(_, _, h)| h == head).map(|(path, line, _)| (e, path, line)))
        .map(|(e, path, line)| (e.body.clone(), Some(path.clone()), Some(*line)))
        .collect();
    want.sort();
    have.sort();
    (want == have).then_some(summary)
}

/// Nothing to change: hone's earlier summary says so, its suggestions go; no earlier review,
/// nothing posted.
async fn nothing_to_change(
    gl: &GitLab,
    iid: u64,
    body: &str,
    earlier: Vec<Earlier>,
    mut out: ReviewReport,
) -> Result<ReviewReport> {
    if earlier.is_empty() {
        return Ok(out);
    }
    let summary = earlier.iter().find(|e| e.position.is_none()).map(|e| e.note);
    let id = match summary {
        Some(id) => {
            notes::edit(gl, iid, id, body).await?;
            id
        }
        None => {
            let a = gl.post(&gl.project_path(&format!("/merge_requests/{iid}/notes")), &json!({"body": body})).await?;
            check(&a, || format!("commenting on merge request !{iid}"))?;
            a.body["id"].as_u64().unwrap_or_default()
        }
    };
    for e in earlier.iter().filter(|e| e.note != id) {
        notes::retire(gl, iid, e).await?;
        out.superseded.push(e.note);
    }
    out.operation = ReviewOperation::Updated;
    out.url = note_url(gl, iid, id).await?;
    Ok(out)
}

/// The address of note `id` on merge request `iid`.
async fn note_url(gl: &GitLab, iid: u64, id: u64) -> Result<Option<String>> {
    let mr = gl.get(&gl.project_path(&format!("/merge_requests/{iid}"))).await?;
    // Only a plain https URL from the answer is shown (in the report and the `review-url` output).
    let plain = |u: &&str| crate::spec::forge::is_server_url(u.trim_end_matches('/'));
    Ok(mr.body["web_url"].as_str().filter(|_| mr.ok()).filter(plain).map(|u| format!("{u}#note_{id}")))
}

#[cfg(test)]
#[path = "review/tests.rs"]
mod tests;
