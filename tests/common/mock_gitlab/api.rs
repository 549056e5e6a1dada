//! The stand-in's `/api/v4`: each request is matched to an operation of the description, checked
//! against it, authenticated as GitLab does, then answered; projects, users and tokens are here,
//! merge requests and notes in `mrs` and `notes`.

use super::Shared;
use super::auth::{Policy, api_caller, scope_refusal};
use super::entities::{self, Reply};
use super::params::Params;
use super::spec::{Op, spec};
use super::state::{Auth, Kind, State};
use super::{approvals, merge, mrs, notes, review};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;

/// The caller of a request that carried a known token.
#[derive(Clone)]
pub struct Who {
    pub kind: Kind,
    pub user: u64,
    pub token: String,
}

/// One API request being answered.
pub struct Ctx<'a> {
    pub st: &'a mut State,
    pub base: &'a str,
    /// `base` plus the request's path: the address of a list, for its `Link` header.
    pub url: String,
    pub who: Option<Who>,
    pub path: HashMap<String, String>,
    pub params: &'a Params,
}

impl Ctx<'_> {
    /// The caller's user, or 401 (for endpoints that authenticate, the policy already did).
    pub fn user(&self) -> Result<u64, Reply> {
        self.who.as_ref().map(|w| w.user).ok_or_else(Reply::unauthorized)
    }

    /// The project `:id` names, when the caller can see it; GitLab's 404 otherwise (all the
    /// stand-in's projects are private).
    pub fn project(&self) -> Result<u64, Reply> {
        let id = self.path.get("id").map(String::as_str).unwrap_or_default();
        self.visible(id).ok_or_else(|| Reply::message(404, "404 Project Not Found"))
    }

    pub fn visible(&self, id_or_path: &str) -> Option<u64> {
        let p = self.st.project(id_or_path)?;
        let who = self.who.as_ref()?;
        self.st.token_sees(&self.st.tokens[&who.token], p).then_some(p.id)
    }

    /// The merge request `:merge_request_iid` of the project `:id`, or GitLab's 404.
    pub fn mr(&self) -> Result<(u64, u64), Reply> {
        let project = self.project()?;
        let iid = self.path.get("merge_request_iid").and_then(|s| s.parse().ok()).unwrap_or(0);
        match self.st.mr(project, iid) {
            Some(_) => Ok((project, iid)),
            None => Err(Reply::message(404, "404 Merge Request Not Found")),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    Project,
    GroupProjects,
    ListMrs,
    CreateMr,
    GetMr,
    UpdateMr,
    MergeMr,
    DeleteBranch,
    GetBranch,
    Approvals,
    ListNotes,
    CreateNote,
    GetNote,
    UpdateNote,
    DeleteNote,
    Versions,
    Diffs,
    ListDrafts,
    CreateDraft,
    DeleteDraft,
    PublishDraft,
    BulkPublish,
    ListDiscussions,
    ResolveDiscussion,
    Users,
    Me,
    Member,
    TokenSelf,
    GetIssue,
}

fn route_of(op: &Op) -> Route {
    let mr = "/api/v4/projects/{id}/merge_requests/{merge_request_iid}";
    let notes = format!("{mr}/notes");
    let note = format!("{notes}/{{note_id}}");
    match (op.method.as_str(), op.template.as_str()) {
        ("GET", "/api/v4/projects/{id}") => Route::Project,
        ("GET", "/api/v4/groups/{id}/projects") => Route::GroupProjects,
        ("GET", "/api/v4/projects/{id}/merge_requests") => Route::ListMrs,
        ("POST", "/api/v4/projects/{id}/merge_requests") => Route::CreateMr,
        ("GET", t) if t == mr => Route::GetMr,
        ("PUT", t) if t == mr => Route::UpdateMr,
        ("PUT", t) if t == format!("{mr}/merge") => Route::MergeMr,
        ("DELETE", "/api/v4/projects/{id}/repository/branches/{branch}") => Route::DeleteBranch,
        ("GET", "/api/v4/projects/{id}/repository/branches/{branch}") => Route::GetBranch,
        ("GET", t) if t == format!("{mr}/approvals") => Route::Approvals,
        ("GET", t) if t == notes => Route::ListNotes,
        ("POST", t) if t == notes => Route::CreateNote,
        ("GET", t) if t == note => Route::GetNote,
        ("PUT", t) if t == note => Route::UpdateNote,
        ("DELETE", t) if t == note => Route::DeleteNote,
        ("GET", t) if t == format!("{mr}/versions") => Route::Versions,
        ("GET", t) if t == format!("{mr}/diffs") => Route::Diffs,
        ("GET", t) if t == format!("{mr}/draft_notes") => Route::ListDrafts,
        ("POST", t) if t == format!("{mr}/draft_notes") => Route::CreateDraft,
        ("DELETE", t) if t == format!("{mr}/draft_notes/{{draft_note_id}}") => Route::DeleteDraft,
        ("PUT", t) if t == format!("{mr}/draft_notes/{{draft_note_id}}/publish") => Route::PublishDraft,
        ("POST", t) if t == format!("{mr}/draft_notes/bulk_publish") => Route::BulkPublish,
        ("GET", t) if t == format!("{mr}/discussions") => Route::ListDiscussions,
        ("PUT", t) if t == format!("{mr}/discussions/{{discussion_id}}") => Route::ResolveDiscussion,
        ("GET", "/api/v4/users") => Route::Users,
        ("GET", "/api/v4/user") => Route::Me,
        ("GET", "/api/v4/projects/{id}/members/all/{user_id}") => Route::Member,
        ("GET", "/api/v4/personal_access_tokens/self") => Route::TokenSelf,
        ("GET", "/api/v4/projects/{id}/issues/{issue_iid}") => Route::GetIssue,
        (m, t) => panic!("the description has {m} {t}, which the stand-in does not serve"),
    }
}

/// What each endpoint lets in: job tokens only where `doc/ci/jobs/ci_job_token.md` lists them
/// (merge requests and their notes, reading); `authenticate` where GitLab's API class calls
/// `authenticate!` (notes, writes, `/user`, the token itself).
fn policy(route: Route) -> Policy {
    let read_mr = matches!(route, Route::ListMrs | Route::GetMr | Route::ListNotes | Route::GetNote);
    let open = matches!(
        route,
        Route::Project
            | Route::GroupProjects
            | Route::ListMrs
            | Route::GetMr
            | Route::Users
            | Route::GetBranch
            | Route::Approvals
    );
    Policy {
        job_token: read_mr,
        authenticate: !open,
        read_user: matches!(route, Route::Users | Route::Me),
        any_scope: route == Route::TokenSelf,
    }
}

/// Answer one API request; returns the response and the body as recorded.
pub fn handle(
    s: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    auth: &Auth,
) -> (Response, Value) {
    let decode = |seg: &str| percent_encoding::percent_decode_str(seg).decode_utf8_lossy().into_owned();
    let segments: Vec<String> = uri.path().trim_start_matches('/').split('/').map(decode).collect();
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let (params, recorded) = match Params::read(uri.query().unwrap_or_default(), content_type, body) {
        Ok(read) => read,
        Err(e) => return (Reply::error(400, &e).into_response(), Value::Null),
    };
    let mut st = s.state.lock().unwrap();
    let Some((op, path)) = spec().find(method.as_str(), &segments) else {
        st.violations.push(format!("{method} {}: not an operation of the description", uri.path()));
        let reply = match spec().knows_path(&segments) {
            true => Reply::error(405, "405 Method Not Allowed"),
            false => Reply::error(404, "404 Not Found"),
        };
        return (reply.into_response(), recorded);
    };
    let verdict = spec().check(op, &params);
    st.violations.extend(verdict.violations);
    let url = format!("{}{}", s.base, uri.path());
    let reply = answer(&mut st, &s.base, url, op, path, &params, auth, verdict.error);
    if (200..300).contains(&reply.status) {
        for field in spec().undocumented(op, reply.status, &reply.body) {
            st.violations
                .push(format!("stand-in bug: {} {} answered undocumented field `{field}`", op.method, op.template));
        }
    }
    (reply.into_response(), recorded)
}

#[allow(clippy::too_many_arguments)]
fn answer(
    st: &mut State,
    base: &str,
    url: String,
    op: &Op,
    path: HashMap<String, String>,
    params: &Params,
    auth: &Auth,
    invalid: Option<String>,
) -> Reply {
    let route = route_of(op);
    let policy = policy(route);
    let caller = match api_caller(st, auth, policy) {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let who = caller.map(|token| {
        let t = &st.tokens[&token];
        Who { kind: t.kind, user: t.user, token: token.clone() }
    });
    if let Some(w) = &who
        && let Some(refused) = scope_refusal(&st.tokens[&w.token], &op.method, policy)
    {
        return refused;
    }
    if let Some(error) = invalid {
        return Reply::error(400, &error);
    }
    let mut ctx = Ctx { st, base, url, who, path, params };
    let result = match route {
        Route::Project => get_project(&ctx),
        Route::GroupProjects => group_projects(&ctx),
        Route::ListMrs => mrs::list(&ctx),
        Route::CreateMr => mrs::create(&mut ctx),
        Route::GetMr => {
            let reply = mrs::get(&ctx);
            merge::after_read(&mut ctx);
            reply
        }
        Route::UpdateMr => mrs::update(&mut ctx),
        Route::MergeMr => merge::merge(&mut ctx),
        Route::DeleteBranch => merge::delete_branch(&mut ctx),
        Route::GetBranch => approvals::branch(&ctx),
        Route::GetIssue => approvals::issue(&ctx),
        Route::Approvals => approvals::approvals(&ctx),
        Route::ListNotes => notes::list(&ctx),
        Route::CreateNote => notes::create(&mut ctx),
        Route::GetNote => notes::get(&ctx),
        Route::UpdateNote => notes::update(&mut ctx),
        Route::DeleteNote => review::delete_note(&mut ctx),
        Route::Versions => review::versions(&mut ctx),
        Route::Diffs => review::diffs(&mut ctx),
        Route::ListDrafts => review::list_drafts(&mut ctx),
        Route::CreateDraft => review::create_draft(&mut ctx),
        Route::DeleteDraft => review::delete_draft(&mut ctx),
        Route::PublishDraft => review::publish_draft(&mut ctx),
        Route::BulkPublish => review::bulk_publish(&mut ctx),
        Route::ListDiscussions => review::list_discussions(&mut ctx),
        Route::ResolveDiscussion => review::resolve_discussion(&mut ctx),
        Route::Users => users(&ctx),
        Route::Me => me(&ctx),
        Route::Member => member(&ctx),
        Route::TokenSelf => token_self(&ctx),
    };
    result.unwrap_or_else(|refused| refused)
}

fn get_project(ctx: &Ctx) -> Result<Reply, Reply> {
    let id = ctx.project()?;
    let access = match ctx.who.as_ref().map(|w| w.kind) {
        Some(Kind::Personal) => 40,
        _ => 30,
    };
    let p = ctx.st.project_by_id(id).expect("a visible project exists");
    Ok(Reply::json(200, entities::project(ctx.st, p, ctx.base, access)))
}

/// `GET /groups/:id/projects`: the group's projects the caller sees (with `include_subgroups`,
/// its subgroups' too), by `order_by` (`path`, else GitLab's default, newest first), filtered by
/// `archived`. The stand-in's groups are the namespaces of its projects: none is 404.
fn group_projects(ctx: &Ctx) -> Result<Reply, Reply> {
    let group = ctx.path.get("id").cloned().unwrap_or_default();
    let prefix = format!("{}/", group.to_ascii_lowercase());
    let in_group = |path: &str, deep: bool| {
        let lower = path.to_ascii_lowercase();
        lower.strip_prefix(&prefix).is_some_and(|rest| deep || !rest.contains('/'))
    };
    if !ctx.st.projects.iter().any(|p| in_group(&p.path, true)) {
        return Err(Reply::message(404, "404 Group Not Found"));
    }
    let deep = ctx.params.bool("include_subgroups").unwrap_or(false);
    let archived = ctx.params.bool("archived");
    let mut found: Vec<&super::state::Project> = ctx
        .st
        .projects
        .iter()
        .filter(|p| in_group(&p.path, deep) && archived.is_none_or(|a| p.archived == a))
        .filter(|p| ctx.visible(&p.id.to_string()).is_some())
        .collect();
    match ctx.params.str("order_by").as_deref() {
        Some("path") => found.sort_by_key(|p| p.path.to_ascii_lowercase()),
        _ => found.sort_by_key(|p| std::cmp::Reverse(p.id)),
    }
    if ctx.params.str("sort").as_deref() == Some("desc") && ctx.params.str("order_by").as_deref() == Some("path") {
        found.reverse();
    }
    let items = found.into_iter().map(|p| entities::project(ctx.st, p, ctx.base, 30)).collect();
    Ok(entities::paginate(items, ctx.params, &ctx.url))
}

/// `GET /users`: anonymous callers must name a `username` (GitLab's rule), others may list.
fn users(ctx: &Ctx) -> Result<Reply, Reply> {
    let username = ctx.params.str("username");
    if ctx.who.is_none() && username.is_none() {
        return Err(Reply::message(403, "403 Forbidden - Not authorized to access /api/v4/users"));
    }
    let search = ctx.params.str("search").map(|s| s.to_ascii_lowercase());
    let found = ctx
        .st
        .users
        .iter()
        .filter(|u| username.as_ref().is_none_or(|n| u.username.eq_ignore_ascii_case(n)))
        .filter(|u| search.as_ref().is_none_or(|s| u.username.to_ascii_lowercase().contains(s)))
        .map(|u| entities::user_basic(ctx.st, u.id, ctx.base))
        .collect();
    Ok(entities::paginate(found, ctx.params, &ctx.url))
}

fn me(ctx: &Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    Ok(Reply::json(200, entities::user_public(ctx.st, user, ctx.base)))
}

/// `GET /projects/:id/members/all/:user_id`: every user of the stand-in is a Developer (30) of
/// every project it can see, and a user it does not know is GitLab's 404.
fn member(ctx: &Ctx) -> Result<Reply, Reply> {
    ctx.project()?;
    let id: u64 = ctx.path.get("user_id").and_then(|u| u.parse().ok()).unwrap_or_default();
    let u = ctx.st.user(id).ok_or_else(|| Reply::message(404, "404 Not found"))?;
    let web = format!("{}/{}", ctx.base, u.username);
    Ok(Reply::json(
        200,
        serde_json::json!({"id": u.id, "username": u.username, "name": u.username, "state": "active",
            "avatar_url": "", "web_url": web, "access_level": 30, "created_at": u.created_at,
            "expires_at": null, "membership_state": "active"}),
    ))
}

fn token_self(ctx: &Ctx) -> Result<Reply, Reply> {
    let who = ctx.who.as_ref().ok_or_else(Reply::unauthorized)?;
    Ok(Reply::json(200, entities::token_self(&ctx.st.tokens[&who.token])))
}
