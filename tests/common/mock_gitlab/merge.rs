//! Merging a merge request (`PUT …/merge`, held to `sha`) and deleting a branch, as GitLab answers
//! them; and the test's handles on a merge request's pipeline, merge status and head.

use super::MockGitLab;
use super::api::Ctx;
use super::entities::{self, Reply, branch_head, detailed_merge_status};
use super::state::{Mr, State};

/// `PUT /projects/:id/merge_requests/:iid/merge` as `lib/api/merge_requests.rb`: 405 unless
/// GitLab would merge it now, then 409 when `sha` is given and is not the head; merged otherwise
/// (the repository is left as it is: the stand-in records the merge only).
pub fn merge(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let user = ctx.user()?;
    let (project, iid) = ctx.mr()?;
    let m = ctx.st.mr(project, iid).expect("found above");
    if detailed_merge_status(m) != "mergeable" {
        return Err(Reply::message(405, "405 Method Not Allowed"));
    }
    let head = ctx.st.project_by_id(m.source_project).and_then(|p| branch_head(p, &m.source_branch));
    if let (Some(sha), Some(head)) = (ctx.params.str("sha"), head.as_deref())
        && sha != head
    {
        return Err(Reply::message(409, &format!("SHA does not match HEAD of source branch: {head}")));
    }
    let remove = ctx.params.bool("should_remove_source_branch").unwrap_or(false);
    let now = ctx.st.now();
    let m = ctx.st.mr_mut(project, iid).expect("found above");
    (m.state, m.merged_at, m.merged_by, m.updated_at) = ("merged".into(), Some(now.clone()), Some(user), now);
    m.squash = ctx.params.bool("squash").unwrap_or(m.squash);
    let (source, branch) = (m.source_project, m.source_branch.clone());
    if remove && let Some(p) = ctx.st.project_by_id(source) {
        super::super::repo::git(&p.bare, &["update-ref", "-d", &format!("refs/heads/{branch}")]);
    }
    let m = ctx.st.mr(project, iid).expect("found above");
    Ok(Reply::json(200, entities::merge_request(ctx.st, m, ctx.base, true)))
}

/// `DELETE /projects/:id/repository/branches/:branch`: 204, 404 for a missing branch, 405 for
/// the default branch (`Branches::DeleteService`).
pub fn delete_branch(ctx: &mut Ctx) -> Result<Reply, Reply> {
    let project = ctx.project()?;
    let branch = ctx.path.get("branch").cloned().unwrap_or_default();
    let p = ctx.st.project_by_id(project).expect("a visible project exists");
    if branch_head(p, &branch).is_none() {
        return Err(Reply::message(404, "404 Branch Not Found"));
    }
    if branch == p.default_branch {
        return Err(Reply::message(405, "Cannot remove HEAD branch"));
    }
    super::super::repo::git(&p.bare, &["update-ref", "-d", &format!("refs/heads/{branch}")]);
    Ok(Reply::json(204, serde_json::Value::Null))
}

/// After a read of merge request `:iid`: when the test asked, push a commit onto its source
/// branch (someone pushed between hone's read and its merge).
pub fn after_read(ctx: &mut Ctx) {
    let Ok((project, iid)) = ctx.mr() else { return };
    let m = ctx.st.mr_mut(project, iid).expect("found above");
    if !std::mem::take(&mut m.move_head_after_read) {
        return;
    }
    let (source, branch) = (m.source_project, m.source_branch.clone());
    move_head(ctx.st, source, &branch);
}

fn move_head(st: &State, project: u64, branch: &str) {
    let p = st.project_by_id(project).expect("the source project exists");
    let Some(head) = branch_head(p, branch) else { return };
    let git = |args: &[&str]| super::super::repo::git(&p.bare, args);
    let tree = format!("{head}^{{tree}}");
    let new = git(&["commit-tree", &tree, "-p", &head, "-m", "pushed after hone read it"]);
    git(&["update-ref", &format!("refs/heads/{branch}"), &new]);
}

impl MockGitLab {
    /// Change merge request `iid` of `project` (its `pipeline`, `merge_status`, `state`, …).
    pub fn with_mr(&self, project: &str, iid: u64, f: impl FnOnce(&mut Mr)) {
        let mut st = self.state();
        let id = st.project(project).expect("no such project").id;
        f(st.mr_mut(id, iid).expect("no such merge request"));
    }

    /// The branches of `project`'s repository.
    pub fn branches(&self, project: &str) -> Vec<String> {
        let bare = self.bare(project);
        let out = super::super::repo::git(&bare, &["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
        out.lines().map(str::to_string).collect()
    }

    /// The head of `branch` in `project`'s repository.
    pub fn head(&self, project: &str, branch: &str) -> Option<String> {
        let st = self.state();
        branch_head(st.project(project).expect("no such project"), branch)
    }
}
