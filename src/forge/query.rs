//! Targets from a query: the forge listing a fleet file asks for (each forge's `query.rs`: a
//! GitHub organisation, user or search; a GitLab group; a Forgejo organisation), dispatched to its
//! forge's listing, and which listed repositories become targets. The listing is the forge's answer, so it is hostile: a name must be one the forge
//! gives and lie where the query looked, and the clone URL is built by hone from the forge's own
//! server, never taken from the answer.

use super::listing::{Filters, Listed, Listing};
use super::{Kind, forgejo, github, gitlab};
use serde::{Deserialize, Serialize};

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

    /// Ask the place's forge (a place for no one repository: `place::forge_wide`) for the
    /// query's repositories with its token, paced with the process's other forge requests and
    /// bounded by `bound`. Only for a query `check` accepted, on its own forge's place.
    pub async fn list(
        &self,
        place: &super::place::Place,
        token: &super::credential::Token,
        shared: &super::Shared,
        bound: &crate::bound::Bound,
    ) -> crate::error::Result<Listing> {
        if place.kind != self.kind() {
            let why = "a listing was sent to another forge than its query's";
            return Err(crate::error::HoneError::new(crate::error::Code::Internal, why));
        }
        let queue = shared.queue.clone();
        match self {
            Query::Github(q) => {
                let gh = github::GitHub::account(place.api()?, token.secret(), queue)?;
                github::listing::list(&gh, &q.source()).await
            }
            Query::Gitlab(q) => {
                let gl = gitlab::GitLab::server(place, queue, bound)?;
                gitlab::listing::list(&gl, &q.group_path(), q.subgroups).await
            }
            Query::Forgejo(q) => {
                let fj = forgejo::Forgejo::server(place, queue, bound)?;
                forgejo::listing::list(&fj, &q.org).await
            }
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
