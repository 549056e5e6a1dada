//! What every query can filter a listing on: topics, language, archived, forks, visibility.

use super::Listed;
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
