//! Merge requests: list with filters, create (one open merge request per source branch, 409
//! otherwise), get, update (title, description, labels, assignees, reviewers, close and reopen).

use super::api::Ctx;
use super::entities::{self, Reply, branch_head};
use super::state::{Mr, State};
use serde_json::json;

pub fn list(ctx: &Ctx) -> Result<Reply, Reply> {
    let project = ctx.project()?;
    let p = ctx.params;
    let state = p.str("state").unwrap_or_else(|| "all".to_string());
    let labels = p.strs("labels").unwrap_or_default();
    let mut found: Vec<&Mr> = ctx
        .st
        .mrs
        .iter()
        .filter(|m| m.project == project)
        .filter(|m| state == "all" || m.state == state)
        .filter(|m| p.str("source_branch").is_none_or(|b| m.source_branch == b))
        .filter(|m| p.str("target_branch").is_none_or(|b| m.target_branch == b))
        .filter(|m| p.u64("source_project_id").is_none_or(|id| m.source_project == id))
        .filter(|m| labels.iter().all(|l| m.labels.contains(l)))
        .filter(|m| {
            let author = ctx.st.user(m.author).map(|u| u.username.as_str());
            p.str("author_username").is_none_or(|a| author == Some(a.as_str()))
        })
        .filter(|m| match p.str("wip").as_deref() {
            Some("yes") => entities::is_draft(&m.title),
            Some("no") => !entities::is_draft(&m.title),
            _ => true,
        })
        .collect();
    found.sort_by_key(|m| m.id);
    if p.str("sort").as_deref() != Some("asc") {
        found.reverse();
    }
    let items = found.into_iter().map(|m| entities::merge_request(ctx.st, m, ctx.base, false)).collect();
    Ok(entities::paginate(items, p, &ctx.url))
}

pub fn get(ctx: &Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let m = ctx.st.mr(project, iid).expect("found above");
    Ok(Reply::json(200, entities::merge_request(ctx.st, m, ctx.base, true)))
}

/// Users by id that exist (GitLab drops the others silently); `0` or nothing clears the list.
fn users_given(st: &State, ids: Option<Vec<u64>>) -> Option<Vec<u64>> {
    ids.map(|ids| ids.into_iter().filter(|id| *id != 0 && st.user(*id).is_some()).collect())
}

/// The labels after `labels` (replace), `add_labels` and `remove_labels`.
fn labels_after(ctx: &Ctx, mut labels: Vec<String>) -> Vec<String> {
    if let Some(set) = ctx.params.strs("labels") {
        labels = set;
    }
    for l in ctx.params.strs("add_labels").unwrap_or_default() {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let remove = ctx.params.strs("remove_labels").unwrap_or_default();
    labels.retain(|l| !remove.contains(l));
    labels
}

/// The target project of a create: the project itself, or (`target_project_id`) the project it
/// was forked from. GitLab refuses any other target.
fn target_of(ctx: &Ctx, source: u64) -> Result<u64, Reply> {
    let Some(target) = ctx.params.u64("target_project_id") else { return Ok(source) };
    if target == source {
        return Ok(source);
    }
    let forked_from = ctx.st.project_by_id(source).and_then(|p| p.forked_from);
    match ctx.visible(&target.to_string()) {
        Some(t) if forked_from == Some(t) => Ok(t),
        Some(_) => Err(Reply::json(422, json!({"message": ["Source project is not a fork of the target project"]}))),
        None => Err(Reply::message(404, "404 Project Not Found")),
    }
}

/// GitLab's answer when a branch is missing (the build service's messages, as validation errors).
fn branches_refusal(ctx: &Ctx, source: u64, target: u64, from: &str, into: &str) -> Option<Reply> {
    if source == target && from == into {
        return Some(Reply::json(400, json!({"message": ["You can't use same project/branch for source and target"]})));
    }
    let head = |project: u64, branch: &str| ctx.st.project_by_id(project).and_then(|p| branch_head(p, branch));
    let mut missing = Vec::new();
    if head(source, from).is_none() {
        missing.push(format!("Source branch \"{from}\" does not exist"));
    }
    if head(target, into).is_none() {
        missing.push(format!("Target branch \"{into}\" does not exist"));
    }
    (!missing.is_empty()).then(|| Reply::json(400, json!({"message": {"base": missing}})))
}

pub fn create(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let author = ctx.user()?;
    let source = ctx.project()?;
    let target = target_of(ctx, source)?;
    let p = ctx.params;
    let (from, into) = (p.str("source_branch").unwrap_or_default(), p.str("target_branch").unwrap_or_default());
    if let Some(refused) = branches_refusal(ctx, source, target, &from, &into) {
        return Err(refused);
    }
    if let Some(open) = ctx.st.open_mr_from(target, source, &from) {
        let msg = format!("Another open merge request already exists for this source branch: !{}", open.iid);
        return Err(Reply::json(409, json!({ "message": [msg] })));
    }
    let mut assignees = users_given(ctx.st, p.u64s("assignee_ids")).unwrap_or_default();
    if assignees.is_empty() {
        assignees = users_given(ctx.st, p.u64s("assignee_id")).unwrap_or_default();
    }
    let reviewers = users_given(ctx.st, p.u64s("reviewer_ids")).unwrap_or_default();
    let labels = labels_after(ctx, Vec::new());
    let title = p.str("title").unwrap_or_default();
    let m = ctx.st.open_mr((target, source, author), from, into, title);
    m.description = p.str("description").unwrap_or_default();
    (m.labels, m.assignees, m.reviewers) = (labels, assignees, reviewers);
    m.remove_source_branch = p.bool("remove_source_branch").unwrap_or(false);
    m.squash = p.bool("squash").unwrap_or(false);
    let iid = m.iid;
    let m = ctx.st.mr(target, iid).expect("just made");
    Ok(Reply::json(201, entities::merge_request(ctx.st, m, ctx.base, true)))
}

const UPDATABLE: [&str; 15] = [
    "title",
    "target_branch",
    "state_event",
    "discussion_locked",
    "assignee_id",
    "assignee_ids",
    "reviewer_ids",
    "description",
    "labels",
    "add_labels",
    "remove_labels",
    "milestone_id",
    "remove_source_branch",
    "allow_collaboration",
    "squash",
];

pub fn update(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let p = ctx.params;
    if !UPDATABLE.iter().any(|k| p.values.contains_key(*k)) {
        return Err(Reply::error(
            400,
            &format!("{} are missing, at least one parameter must be provided", UPDATABLE.join(", ")),
        ));
    }
    let current = ctx.st.mr(project, iid).expect("found above");
    if p.str("state_event").as_deref() == Some("reopen")
        && current.state == "closed"
        && let Some(open) = ctx.st.open_mr_from(project, current.source_project, &current.source_branch)
    {
        let msg = format!("Another open merge request already exists for this source branch: !{}", open.iid);
        return Err(Reply::json(409, json!({ "message": [msg] })));
    }
    let labels = labels_after(ctx, current.labels.clone());
    let assignees = users_given(ctx.st, p.u64s("assignee_ids").or_else(|| p.u64s("assignee_id")));
    let reviewers = users_given(ctx.st, p.u64s("reviewer_ids"));
    let now = ctx.st.now();
    let m = ctx.st.mr_mut(project, iid).expect("found above");
    if let Some(t) = p.str("title") {
        m.title = t;
    }
    if let Some(d) = p.str("description") {
        m.description = d;
    }
    if let Some(b) = p.str("target_branch") {
        m.target_branch = b;
    }
    m.labels = labels;
    m.assignees = assignees.unwrap_or(std::mem::take(&mut m.assignees));
    m.reviewers = reviewers.unwrap_or(std::mem::take(&mut m.reviewers));
    m.remove_source_branch = p.bool("remove_source_branch").unwrap_or(m.remove_source_branch);
    m.squash = p.bool("squash").unwrap_or(m.squash);
    match p.str("state_event").as_deref() {
        Some("close") if m.state == "opened" => {
            (m.state, m.closed_at, m.closed_by) = ("closed".into(), Some(now.clone()), Some(user))
        }
        Some("reopen") if m.state == "closed" => (m.state, m.closed_at, m.closed_by) = ("opened".into(), None, None),
        _ => {}
    }
    m.updated_at = now;
    let m = ctx.st.mr(project, iid).expect("found above");
    Ok(Reply::json(200, entities::merge_request(ctx.st, m, ctx.base, true)))
}
