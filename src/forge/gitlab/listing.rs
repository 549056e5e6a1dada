//! GitLab's listing of a group's projects (`/groups/:id/projects`), page by page.

use crate::error::{Code, HoneError, Result};
use crate::forge::github::encode;
use crate::forge::gitlab::GitLab;
use crate::forge::listing::{Listed, Listing, MAX_PAGES, PER_PAGE, cut_short};
use serde_json::Value;

pub async fn list(gl: &GitLab, group: &str, subgroups: bool) -> Result<Listing> {
    let path = format!(
        "/groups/{}/projects?include_subgroups={subgroups}&order_by=path&sort=asc&per_page={PER_PAGE}",
        encode(group)
    );
    let what = format!("projects of the GitLab group `{group}`");
    let mut out = Listing::default();
    let mut seen = std::collections::HashSet::new();
    for page in 1..=MAX_PAGES {
        let a = gl.get(&format!("{path}&page={page}")).await?;
        out.requests += 1;
        if !a.ok() {
            let hint = if a.status == 404 {
                "check the group's full path, and that the token can see it (GitLab answers 404 for what a token may not see)"
            } else {
                "check the token (`read_api` is enough to list) and the GitLab server's address"
            };
            return Err(HoneError::new(Code::Forge, format!("cannot list the {what}: {}", a.message())).hint(hint));
        }
        let items = a.body.as_array().ok_or_else(|| {
            HoneError::new(Code::Forge, format!("GitLab's answer listing the {what} is not a list of projects"))
        })?;
        for item in items {
            if let Some(l) = listed(item).filter(|l| seen.insert(l.path.to_ascii_lowercase())) {
                out.repos.push(l);
            }
        }
        if items.len() < PER_PAGE {
            return Ok(out);
        }
    }
    out.warnings.push(cut_short(&format!("The {what}")));
    Ok(out)
}

/// One project from GitLab's description of it (which does not say its language).
fn listed(v: &Value) -> Option<Listed> {
    // Only a path GitLab gives is kept: a hostile answer's other names cost no memory.
    let path = v.get("path_with_namespace")?.as_str().filter(|p| crate::forge::gitlab::is_project_path(p))?;
    Some(Listed {
        path: path.to_string(),
        archived: v.get("archived").and_then(Value::as_bool),
        fork: Some(v.get("forked_from_project").is_some_and(|f| !f.is_null())),
        visibility: v.get("visibility").and_then(Value::as_str).map(str::to_string),
        topics: crate::forge::listing::topics(v.get("topics").or_else(|| v.get("tag_list"))),
        language: None,
    })
}
