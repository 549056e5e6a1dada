//! `github:` in a fleet file's `repos`: which of GitHub's listings to ask (an organisation, a
//! user, a repository or code search), and which of the names it answers lie where it looked.

use super::listing::Source;
use crate::forge::listing::{Filters, Keep};
use serde::{Deserialize, Serialize};

/// `github:` in a fleet file's `repos`: exactly one of `org`, `user`, `search`, `code_search`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "GithubQuery")]
pub struct Query {
    /// Every repository of this organisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    /// Every repository this user owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A repository search (`org:acme topic:python pushed:>2026-01-01`), at most 1,000 results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// A code search (`org:acme filename:setup.py`): the repositories with a match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_search: Option<String>,
    #[serde(flatten)]
    pub filters: Filters,
}

impl Query {
    /// What to ask GitHub. Only for a query `check` accepted.
    pub fn source(&self) -> Source {
        match (&self.org, &self.user, &self.search, &self.code_search) {
            (Some(o), ..) => Source::Org(o.clone()),
            (_, Some(u), ..) => Source::User(u.clone()),
            (_, _, Some(s), _) => Source::Search(s.clone()),
            (.., Some(c)) => Source::Code(c.clone()),
            _ => Source::Search(String::new()),
        }
    }

    /// What is wrong with the query as written, if anything.
    pub fn check(&self) -> Option<String> {
        let q = self;
        let given = [&q.org, &q.user, &q.search, &q.code_search].iter().filter(|x| x.is_some()).count();
        if given != 1 {
            return Some("`github:` needs exactly one of `org`, `user`, `search` or `code_search`".into());
        }
        let name = q.org.as_ref().or(q.user.as_ref());
        if let Some(n) = name.filter(|n| !super::is_name(n)) {
            return Some(format!("`{n}` is not a GitHub account name"));
        }
        let f = &q.filters;
        let unknowable = !f.topics.is_empty() || f.language.is_some() || f.visibility.is_some();
        if q.code_search.is_some() && (unknowable || f.archived != Keep::Exclude) {
            return Some("a code search's answer does not say a repository's topics, language, visibility or whether it is archived: put those in the query (`language:go`), or use `search`".into());
        }
        [&q.search, &q.code_search]
            .into_iter()
            .flatten()
            .any(|s| s.trim().is_empty())
            .then(|| "the search query is empty".into())
    }

    /// Whether `path` is `owner/name` as GitHub gives it, under the organisation or user asked for.
    pub fn placed(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        let named = parts.len() == 2 && parts.iter().all(|p| super::is_name(p));
        let under = |owner: &str| parts[0].eq_ignore_ascii_case(owner);
        named && self.org.as_deref().is_none_or(under) && self.user.as_deref().is_none_or(under)
    }
}
