//! Merge request notes: list, get, create, and edit (by their author only, as GitLab).

use super::api::Ctx;
use super::entities::{self, Reply};
use super::state::Note;

pub fn list(ctx: &Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let mut found: Vec<&Note> = ctx.st.notes.iter().filter(|n| n.project == project && n.iid == iid).collect();
    match ctx.params.str("order_by").as_deref() {
        Some("updated_at") => found.sort_by(|a, b| (&a.updated_at, a.id).cmp(&(&b.updated_at, b.id))),
        _ => found.sort_by_key(|n| n.id),
    }
    if ctx.params.str("sort").as_deref() != Some("asc") {
        found.reverse();
    }
    let items = found.into_iter().map(|n| entities::note(ctx.st, n, ctx.base)).collect();
    Ok(entities::paginate(items, ctx.params, &ctx.url))
}

fn note_id(ctx: &Ctx, project: u64, iid: u64) -> Result<u64, Reply> {
    let id: u64 = ctx.path.get("note_id").and_then(|s| s.parse().ok()).unwrap_or(0);
    match ctx.st.notes.iter().any(|n| n.id == id && n.project == project && n.iid == iid) {
        true => Ok(id),
        false => Err(Reply::message(404, "404 Note Not Found")),
    }
}

pub fn get(ctx: &Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let id = note_id(ctx, project, iid)?;
    let n = ctx.st.notes.iter().find(|n| n.id == id).expect("found above");
    Ok(Reply::json(200, entities::note(ctx.st, n, ctx.base)))
}

pub fn create(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let author = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let body = ctx.params.str("body").unwrap_or_default();
    let id = ctx.st.add_note((project, iid, author), body).id;
    let n = ctx.st.notes.iter().find(|n| n.id == id).expect("just made");
    Ok(Reply::json(201, entities::note(ctx.st, n, ctx.base)))
}

pub fn update(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let id = note_id(ctx, project, iid)?;
    let body = ctx.params.str("body").unwrap_or_default();
    let now = ctx.st.now();
    let n = ctx.st.notes.iter_mut().find(|n| n.id == id).expect("found above");
    if n.author != user {
        return Err(Reply::message(403, "403 Forbidden"));
    }
    n.body = body;
    n.updated_at = now;
    let n = ctx.st.notes.iter().find(|n| n.id == id).expect("found above");
    Ok(Reply::json(200, entities::note(ctx.st, n, ctx.base)))
}
