//! The registration of the forges hone speaks to: one name per forge, and the words and refs
//! that differ between them. Everything else a forge does is in its own folder, reached through
//! the dispatch in `forge/mod.rs` (publishing), `campaign/` (`hone fleet prs`), `listing/`,
//! `autofix.rs`, `review/` and `init.rs`.

use serde::{Deserialize, Serialize};

/// A forge hone can open pull (merge) requests on.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Github,
    Gitlab,
    /// Forgejo and Gitea (one API): Codeberg and most self-hosted instances.
    #[serde(alias = "gitea")]
    #[value(alias = "gitea")]
    Forgejo,
}

impl Kind {
    /// Every forge, in the order `hone init` and the docs list them.
    pub const ALL: [Kind; 3] = [Kind::Github, Kind::Gitlab, Kind::Forgejo];

    /// The forge's name as users write it (`forge.kind`, reports).
    pub const fn id(self) -> &'static str {
        match self {
            Kind::Github => "github",
            Kind::Gitlab => "gitlab",
            Kind::Forgejo => "forgejo",
        }
    }

    /// The forge's name in prose.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Github => "GitHub",
            Kind::Gitlab => "GitLab",
            Kind::Forgejo => "Forgejo",
        }
    }

    /// How the forge names a pull request with `number`: `PR #7`, `merge request !7`.
    pub fn pr_name(self, number: u64) -> String {
        match self {
            Kind::Gitlab => format!("merge request !{number}"),
            Kind::Github | Kind::Forgejo => format!("PR #{number}"),
        }
    }

    /// The ref the forge keeps a pull request's head at, fetchable from the base repository.
    pub fn pr_head_ref(self, number: u64) -> String {
        match self {
            Kind::Gitlab => format!("refs/merge-requests/{number}/head"),
            Kind::Github | Kind::Forgejo => format!("refs/pull/{number}/head"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_refs() {
        assert_eq!(Kind::Gitlab.pr_name(7), "merge request !7");
        assert_eq!(Kind::Forgejo.pr_head_ref(3), "refs/pull/3/head");
        let k: Kind = serde_json::from_str("\"gitea\"").unwrap();
        assert_eq!(k, Kind::Forgejo);
        assert_eq!(Kind::ALL.map(Kind::id), ["github", "gitlab", "forgejo"]);
    }
}
