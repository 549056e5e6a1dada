//! `forgejo:` in a fleet file's `repos`: an organisation's repositories on the job's Forgejo (or
//! Gitea) server, and which of the names Forgejo answers lie in that organisation.

use crate::forge::listing::Filters;
use serde::{Deserialize, Serialize};

/// `forgejo:` in a fleet file's `repos`: an organisation's repositories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ForgejoQuery")]
pub struct Query {
    /// The organisation's name (`acme`).
    pub org: String,
    #[serde(flatten)]
    pub filters: Filters,
}

impl Query {
    /// What is wrong with the query as written, if anything.
    pub fn check(&self) -> Option<String> {
        (!super::is_name(&self.org)).then(|| format!("`{}` is not a Forgejo organisation name", self.org))
    }

    /// Whether `path` is a repository `owner/name` of the organisation asked for.
    pub fn placed(&self, path: &str) -> bool {
        super::is_repo_path(path) && path.split('/').next().is_some_and(|o| o.eq_ignore_ascii_case(&self.org))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_organisations_own_names_are_placed() {
        let q = Query { org: "Acme".into(), ..Default::default() };
        assert!(q.check().is_none() && q.placed("acme/app"));
        for bad in ["other/app", "acme/app/x", "acme/..", "acme"] {
            assert!(!q.placed(bad), "{bad}");
        }
        assert!(Query { org: "a/b".into(), ..Default::default() }.check().is_some());
    }
}
