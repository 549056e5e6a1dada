//! Reviews as GitLab keeps them: a merge request's versions and diff, draft notes (seen by their
//! author only) published one by one or together, discussions, resolving one, deleting a note.
//!
//! Publishing a draft note makes the note GitLab would: a `DiffNote` when it has a position, a
//! resolvable `DiscussionNote` otherwise. GitLab accepts any position on a draft and checks it only
//! when publishing (`DiffNote` validates its line code): a position that is no line of the diff
//! its shas name (both numbers on an unchanged line, the new one only on an added line) is
//! dropped there, with nothing said; the stand-in drops it too and records a violation with
//! GitLab's validation message. A position on another version than the latest is published
//! (GitLab shows it as outdated, its suggestion cannot be applied) and recorded as a violation.

use super::api::Ctx;
use super::entities::{self, Reply};
use super::mr_diff::{self, current_version};
use super::state::{Draft, Note, State};
use serde_json::{Value, json};

pub fn versions(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    current_version(ctx.st, project, iid).ok_or_else(|| Reply::message(404, "404 Not found"))?;
    let m = ctx.st.mr(project, iid).expect("found above");
    let items = m
        .versions
        .iter()
        .rev()
        .map(|v| {
            json!({"id": v.id, "head_commit_sha": v.head, "base_commit_sha": v.base, "start_commit_sha": v.start,
                   "created_at": v.created_at, "merge_request_id": m.id, "state": "collected", "real_size": null,
                   "patch_id_sha": null})
        })
        .collect();
    Ok(entities::paginate(items, ctx.params, &ctx.url))
}

pub fn diffs(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let v = current_version(ctx.st, project, iid).ok_or_else(|| Reply::message(404, "404 Not found"))?;
    let bare = ctx.st.project_by_id(project).expect("visible").bare.clone();
    let files = mr_diff::files(&bare, &v.base, &v.head).unwrap_or_default();
    let items = files
        .into_iter()
        .map(|f| {
            let large = ctx.st.too_large.contains(&f.new_path);
            json!({"old_path": f.old_path, "new_path": f.new_path, "a_mode": f.a_mode, "b_mode": f.b_mode,
                   "new_file": f.new_file, "renamed_file": f.renamed_file, "deleted_file": f.deleted_file,
                   "generated_file": false, "too_large": large, "collapsed": large,
                   "diff": if large { String::new() } else { f.diff }})
        })
        .collect();
    Ok(entities::paginate(items, ctx.params, &ctx.url))
}

fn draft_entity(st: &State, d: &Draft) -> Value {
    let mr_id = st.mr(d.project, d.iid).map(|m| m.id);
    json!({"id": d.id, "author_id": d.author, "merge_request_id": mr_id, "resolve_discussion": false,
           "discussion_id": null, "note": d.note, "commit_id": null, "line_code": null,
           "position": d.position.as_ref().map(entities::position).unwrap_or_else(|| entities::position(&Value::Null))})
}

pub fn list_drafts(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let mine = ctx.st.drafts.iter().filter(|d| d.project == project && d.iid == iid && d.author == user);
    Ok(Reply::json(200, Value::Array(mine.map(|d| draft_entity(ctx.st, d)).collect())))
}

pub fn create_draft(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let note = ctx.params.str("note").unwrap_or_default();
    let position = ctx.params.values.get("position").filter(|p| p.is_object()).cloned();
    let id = ctx.st.next_id();
    ctx.st.drafts.push(Draft { id, project, iid, author: user, note, position });
    let answer = Reply::json(201, draft_entity(ctx.st, ctx.st.drafts.last().expect("just made")));
    if let Some(note) = ctx.st.draft_meanwhile.take() {
        let id = ctx.st.next_id();
        ctx.st.drafts.push(Draft { id, project, iid, author: user, note, position: None });
    }
    Ok(answer)
}

/// The caller's draft `:draft_note_id` on the merge request (another's is not found, as GitLab).
fn own_draft(ctx: &Ctx, user: u64, project: u64, iid: u64) -> Result<u64, Reply> {
    let id: u64 = ctx.path.get("draft_note_id").and_then(|s| s.parse().ok()).unwrap_or(0);
    match ctx.st.drafts.iter().any(|d| d.id == id && d.project == project && d.iid == iid && d.author == user) {
        true => Ok(id),
        false => Err(Reply::message(404, "404 Draft Note Not Found")),
    }
}

pub fn delete_draft(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let id = own_draft(ctx, user, project, iid)?;
    ctx.st.drafts.retain(|d| d.id != id);
    Ok(Reply::json(204, Value::Null))
}

pub fn publish_draft(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let id = own_draft(ctx, user, project, iid)?;
    let pos = ctx.st.drafts.iter().position(|d| d.id == id).expect("found above");
    let d = ctx.st.drafts.remove(pos);
    publish(ctx.st, d);
    Ok(Reply::json(204, Value::Null))
}

pub fn bulk_publish(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let (mine, rest): (Vec<Draft>, Vec<Draft>) = std::mem::take(&mut ctx.st.drafts)
        .into_iter()
        .partition(|d| d.project == project && d.iid == iid && d.author == user);
    ctx.st.drafts = rest;
    for d in mine {
        publish(ctx.st, d);
    }
    Ok(Reply::json(204, Value::Null))
}

/// Whether `p` is a line of the diff its shas name, as GitLab's `line_for_position` finds it.
fn line_of_diff(st: &State, project: u64, p: &Value) -> bool {
    let bare = &st.project_by_id(project).expect("exists").bare;
    let (Some(base), Some(head)) = (p["base_sha"].as_str(), p["head_sha"].as_str()) else { return false };
    let Some(files) = mr_diff::files(bare, base, head) else { return false };
    let want = (p["old_line"].as_u64().map(|l| l as u32), p["new_line"].as_u64().map(|l| l as u32));
    files
        .iter()
        .filter(|f| {
            Some(f.new_path.as_str()) == p["new_path"].as_str() || Some(f.old_path.as_str()) == p["old_path"].as_str()
        })
        .any(|f| f.lines.contains(&want))
}

/// A draft note becomes a note in a discussion of its own (or is dropped, as GitLab drops it).
fn publish(st: &mut State, d: Draft) {
    if let Some(p) = &d.position {
        if !line_of_diff(st, d.project, p) {
            st.violations.push(format!(
                "draft note {}: position {} line {} (old line {}) is no line of the diff its shas name; GitLab drops it on publish: Note {{:line_code=>[\"can't be blank\", \"must be a valid line code\"]}}",
                d.id, p["new_path"], p["new_line"], p["old_line"]
            ));
            return;
        }
        let latest = st.mr(d.project, d.iid).and_then(|m| m.versions.last()).map(|v| v.head.clone());
        if latest.as_deref() != p["head_sha"].as_str() {
            st.violations.push(format!(
                "draft note {}: position on {} is not the latest version: published outdated",
                d.id, p["head_sha"]
            ));
        }
    }
    let id = st.add_note((d.project, d.iid, d.author), d.note).id;
    let n = st.notes.iter_mut().find(|n| n.id == id).expect("just made");
    n.kind = Some(if d.position.is_some() { "DiffNote" } else { "DiscussionNote" });
    n.position = d.position;
}

/// The discussions of a merge request, oldest first, each with its notes.
fn discussions_of(st: &State, project: u64, iid: u64, base: &str) -> Vec<Value> {
    let mut order: Vec<&str> = Vec::new();
    for n in st.notes.iter().filter(|n| n.project == project && n.iid == iid) {
        if !order.contains(&n.discussion.as_str()) {
            order.push(&n.discussion);
        }
    }
    order.into_iter().map(|d| discussion(st, d, base)).collect()
}

fn discussion(st: &State, id: &str, base: &str) -> Value {
    let notes: Vec<&Note> = st.notes.iter().filter(|n| n.discussion == id).collect();
    let individual = notes.first().is_some_and(|n| n.kind.is_none());
    json!({"id": id, "individual_note": individual, "notes": notes.iter().map(|n| entities::note(st, n, base)).collect::<Vec<_>>()})
}

pub fn list_discussions(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let items = discussions_of(ctx.st, project, iid, ctx.base);
    Ok(entities::paginate(items, ctx.params, &ctx.url))
}

pub fn resolve_discussion(ctx: &mut Ctx) -> Result<Reply, Reply> {
    ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let id = ctx.path.get("discussion_id").cloned().unwrap_or_default();
    let resolved = ctx.params.bool("resolved").unwrap_or(false);
    let mut found = false;
    for n in ctx.st.notes.iter_mut().filter(|n| n.project == project && n.iid == iid && n.discussion == id) {
        found = true;
        if n.kind.is_none() {
            return Err(Reply::message(400, "400 Bad request - Discussion is not resolvable"));
        }
        n.resolved = resolved;
    }
    if !found {
        return Err(Reply::message(404, "404 Discussion Not Found"));
    }
    Ok(Reply::json(200, discussion(ctx.st, &id, ctx.base)))
}

/// `DELETE …/notes/:note_id`: its author only (the stand-in's users are not maintainers).
pub fn delete_note(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let id: u64 = ctx.path.get("note_id").and_then(|s| s.parse().ok()).unwrap_or(0);
    let Some(n) = ctx.st.notes.iter().find(|n| n.id == id && n.project == project && n.iid == iid) else {
        return Err(Reply::message(404, "404 Note Not Found"));
    };
    if n.author != user {
        return Err(Reply::message(403, "403 Forbidden"));
    }
    ctx.st.notes.retain(|n| n.id != id);
    Ok(Reply::json(204, Value::Null))
}
