//! `gitlab:` in a fleet file's `repos`: a group's projects, and which of the paths GitLab
//! answers lie in that group.

use crate::forge::listing::Filters;
use serde::{Deserialize, Serialize};

/// `gitlab:` in a fleet file's `repos`: a group's projects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "GitlabQuery")]
pub struct Query {
    /// The group's full path (`platform/backend`).
    pub group: String,
    /// Also the projects of its subgroups (default: true).
    #[serde(default = "yes")]
    pub subgroups: bool,
    #[serde(flatten)]
    pub filters: Filters,
}

fn yes() -> bool {
    true
}

impl Query {
    /// The group's path, as GitLab is asked for it.
    pub fn group_path(&self) -> String {
        self.group.trim_matches('/').to_string()
    }

    /// What is wrong with the query as written, if anything.
    pub fn check(&self) -> Option<String> {
        let g = self.group.trim_matches('/');
        let ok = super::is_project_path(g) || crate::forge::github::is_name(g);
        if !ok {
            return Some(format!("`{}` is not a GitLab group path (`group/subgroup`)", self.group));
        }
        self.filters
            .language
            .is_some()
            .then(|| "GitLab's listing of a group does not say a project's language: filter by `topics` instead".into())
    }

    /// Whether `path` is a project path in the group asked for (or its subgroups, when asked).
    pub fn placed(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        let group: Vec<&str> = self.group.trim_matches('/').split('/').collect();
        let depth_ok = if self.subgroups { parts.len() > group.len() } else { parts.len() == group.len() + 1 };
        super::is_project_path(path) && depth_ok && parts.iter().zip(&group).all(|(a, b)| a.eq_ignore_ascii_case(b))
    }
}
