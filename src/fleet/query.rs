//! Targets from a query: the forge listing a fleet file asks for (a GitHub organisation, user or
//! search; a GitLab group), the filters on what it answers, and which listed repositories become
//! targets. The listing is the forge's answer, so it is hostile: a name must be one the forge
//! gives and lie where the query looked, and the clone URL is built by hone from the forge's own
//! server, never taken from the answer.

use crate::forge::listing::{Listed, Source};
use crate::spec::forge::ForgeKind;
use serde::{Deserialize, Serialize};

/// Archived repositories or forks: left out (the default), kept, or the only ones kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    #[default]
    Exclude,
    Include,
    Only,
}

impl Keep {
    /// Whether a repository that `is` archived (or a fork) passes; when the answer does not
    /// say, it passes `exclude` and fails `only`.
    fn allows(self, is: Option<bool>) -> bool {
        match self {
            Keep::Include => true,
            Keep::Exclude => is != Some(true),
            Keep::Only => is == Some(true),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Public,
    Private,
    Internal,
}

impl Visibility {
    pub const fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
            Visibility::Internal => "internal",
        }
    }
}

/// What every query can filter on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Keep repositories that have every one of these topics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// Keep repositories in this language (the forge's primary language, any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Archived repositories: `exclude` (the default), `include` or `only`.
    #[serde(default)]
    pub archived: Keep,
    /// Forks: `exclude` (the default), `include` or `only`.
    #[serde(default)]
    pub forks: Keep,
    /// Keep only `public`, `private` or `internal` repositories (default: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
}

impl Filters {
    /// Whether `l` passes every filter. A filter on something the answer did not say (a code
    /// search's repositories carry no topics) keeps nothing, except `archived`'s default.
    pub fn keep(&self, l: &Listed) -> bool {
        let topics = self.topics.iter().all(|t| l.topics.iter().any(|have| have.eq_ignore_ascii_case(t)));
        let language = self
            .language
            .as_ref()
            .is_none_or(|want| l.language.as_deref().is_some_and(|have| have.eq_ignore_ascii_case(want)));
        let visibility = self.visibility.is_none_or(|v| l.visibility.as_deref() == Some(v.as_str()));
        topics && language && visibility && self.archived.allows(l.archived) && self.forks.allows(l.fork)
    }
}

/// `github:` in a fleet file's `repos`: exactly one of `org`, `user`, `search`, `code_search`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubQuery {
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

/// `gitlab:` in a fleet file's `repos`: a group's projects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitlabQuery {
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

/// One query of a fleet file, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Query {
    Github(GithubQuery),
    Gitlab(GitlabQuery),
}

impl Query {
    pub fn kind(&self) -> ForgeKind {
        match self {
            Query::Github(_) => ForgeKind::Github,
            Query::Gitlab(_) => ForgeKind::Gitlab,
        }
    }

    pub fn filters(&self) -> &Filters {
        match self {
            Query::Github(q) => &q.filters,
            Query::Gitlab(q) => &q.filters,
        }
    }

    /// What to ask the forge. Only for a query `check` accepted.
    pub fn source(&self) -> Source {
        match self {
            Query::Github(q) => match (&q.org, &q.user, &q.search, &q.code_search) {
                (Some(o), ..) => Source::GithubOrg(o.clone()),
                (_, Some(u), ..) => Source::GithubUser(u.clone()),
                (_, _, Some(s), _) => Source::GithubSearch(s.clone()),
                (.., Some(c)) => Source::GithubCode(c.clone()),
                _ => Source::GithubSearch(String::new()),
            },
            Query::Gitlab(q) => {
                Source::GitlabGroup { group: q.group.trim_matches('/').to_string(), subgroups: q.subgroups }
            }
        }
    }

    /// What is wrong with the query as written, if anything (for the fleet file's diagnostics).
    pub fn check(&self) -> Option<String> {
        match self {
            Query::Github(q) => {
                let given = [&q.org, &q.user, &q.search, &q.code_search].iter().filter(|x| x.is_some()).count();
                if given != 1 {
                    return Some("`github:` needs exactly one of `org`, `user`, `search` or `code_search`".into());
                }
                let name = q.org.as_ref().or(q.user.as_ref());
                if let Some(n) = name.filter(|n| !crate::forge::github::is_name(n)) {
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
            Query::Gitlab(q) => {
                let g = q.group.trim_matches('/');
                let ok = crate::forge::gitlab::is_project_path(g) || crate::forge::github::is_name(g);
                if !ok {
                    return Some(format!("`{}` is not a GitLab group path (`group/subgroup`)", q.group));
                }
                q.filters.language.is_some().then(|| {
                    "GitLab's listing of a group does not say a project's language: filter by `topics` instead".into()
                })
            }
        }
    }

    /// Whether a listed repository becomes a target: a name the forge gives, under the
    /// organisation, user or group asked for, that passes the filters.
    pub fn accept(&self, l: &Listed) -> bool {
        self.placed(&l.path) && self.filters().keep(l)
    }

    /// Whether `path` is a name the forge gives, under the organisation, user or group asked for.
    pub fn placed(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        let named = match self {
            Query::Github(_) => parts.len() == 2 && parts.iter().all(|p| crate::forge::github::is_name(p)),
            Query::Gitlab(_) => crate::forge::gitlab::is_project_path(path),
        };
        let under = |owner: &str| parts[0].eq_ignore_ascii_case(owner);
        named
            && match self {
                Query::Github(q) => q.org.as_deref().is_none_or(under) && q.user.as_deref().is_none_or(under),
                Query::Gitlab(q) => {
                    let group: Vec<&str> = q.group.trim_matches('/').split('/').collect();
                    let depth_ok = if q.subgroups { parts.len() > group.len() } else { parts.len() == group.len() + 1 };
                    depth_ok && parts.iter().zip(&group).all(|(a, b)| a.eq_ignore_ascii_case(b))
                }
            }
    }
}

/// The clone URL of `path` on the forge whose web address is `server` (`https://host[/prefix]`).
pub fn clone_url(server: &str, path: &str) -> String {
    format!("{}/{path}.git", server.trim_end_matches('/'))
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
