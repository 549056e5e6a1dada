//! Targets from a query: the forge listing a fleet file asks for (a GitHub organisation, user or
//! search; a GitLab group), the filters on what it answers, and which listed repositories become
//! targets. The listing is the forge's answer, so it is hostile: a name must be one the forge
//! gives and lie where the query looked, and the clone URL is built by hone from the forge's own
//! server, never taken from the answer.

use super::listing::{Listed, Source};
use super::{Kind, forgejo, github, gitlab};
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
    pub(crate) fn allows(self, is: Option<bool>) -> bool {
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

/// One query of a fleet file, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Query {
    Github(github::query::Query),
    Gitlab(gitlab::query::Query),
    Forgejo(forgejo::query::Query),
}

impl Query {
    pub fn kind(&self) -> Kind {
        match self {
            Query::Github(_) => Kind::Github,
            Query::Gitlab(_) => Kind::Gitlab,
            Query::Forgejo(_) => Kind::Forgejo,
        }
    }

    /// The key the query is written under in the fleet file.
    pub fn key(&self) -> &'static str {
        self.kind().id()
    }

    pub fn filters(&self) -> &Filters {
        match self {
            Query::Github(q) => &q.filters,
            Query::Gitlab(q) => &q.filters,
            Query::Forgejo(q) => &q.filters,
        }
    }

    /// What to ask the forge. Only for a query `check` accepted.
    pub fn source(&self) -> Source {
        match self {
            Query::Github(q) => q.source(),
            Query::Gitlab(q) => q.source(),
            Query::Forgejo(q) => q.source(),
        }
    }

    /// What is wrong with the query as written, if anything (for the fleet file's diagnostics).
    pub fn check(&self) -> Option<String> {
        match self {
            Query::Github(q) => q.check(),
            Query::Gitlab(q) => q.check(),
            Query::Forgejo(q) => q.check(),
        }
    }

    /// Whether a listed repository becomes a target: a name the forge gives, under the
    /// organisation, user or group asked for, that passes the filters.
    pub fn accept(&self, l: &Listed) -> bool {
        self.placed(&l.path) && self.filters().keep(l)
    }

    /// Whether `path` is a name the forge gives, under the organisation, user or group asked for.
    pub fn placed(&self, path: &str) -> bool {
        match self {
            Query::Github(q) => q.placed(path),
            Query::Gitlab(q) => q.placed(path),
            Query::Forgejo(q) => q.placed(path),
        }
    }
}

/// One entry of a fleet file's `repos`: a URL, a local path, a file listing URLs, or one forge's
/// query (one key per forge, so adding a forge adds its key here).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEntry {
    pub url: Option<String>,
    pub path: Option<String>,
    pub from_file: Option<String>,
    /// Every repository a GitHub organisation, user or search gives, filtered.
    github: Option<github::query::Query>,
    /// Every project of a GitLab group, filtered.
    gitlab: Option<gitlab::query::Query>,
    /// Every repository of a Forgejo (Gitea) organisation, filtered.
    forgejo: Option<forgejo::query::Query>,
    pub base: Option<String>,
}

impl RawEntry {
    /// The query keys, for messages: "`github`, `gitlab` or `forgejo`".
    pub const QUERY_KEYS: &str = "`github`, `gitlab` or `forgejo`";

    /// How many queries the entry gives.
    pub fn queries(&self) -> usize {
        usize::from(self.github.is_some()) + usize::from(self.gitlab.is_some()) + usize::from(self.forgejo.is_some())
    }

    /// The entry's one query, if it gives one.
    pub fn query(&mut self) -> Option<Query> {
        let query = self.github.take().map(Query::Github).or(self.gitlab.take().map(Query::Gitlab));
        query.or(self.forgejo.take().map(Query::Forgejo))
    }
}

/// The clone URL of `path` on the forge whose web address is `server` (`https://host[/prefix]`).
pub fn clone_url(server: &str, path: &str) -> String {
    format!("{}/{path}.git", server.trim_end_matches('/'))
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
