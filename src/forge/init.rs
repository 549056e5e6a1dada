//! `hone init` for a forge: which forge the repository is on, and that forge's files (job specs,
//! policy, CI workflow) and the next step to tell the user. Each forge's `init.rs` writes its own.

use super::Kind;
use crate::error::Result;
use crate::project::Project;
use std::path::Path;

pub use crate::project::Scaffold;

/// The forge `init` writes for: the remote's host when it is a known public forge; else the
/// CI configuration the project has (`.gitlab-ci.yml`, `.forgejo/`, `.gitea/`); else GitHub.
pub fn forge_of(remote_host: Option<&str>, root: &Path) -> Kind {
    let has = |p: &str| std::fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_dir());
    let has_file = |p: &str| std::fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_file());
    match remote_host {
        Some("github.com") => Kind::Github,
        Some("gitlab.com") => Kind::Gitlab,
        Some("codeberg.org") => Kind::Forgejo,
        _ if has_file(".gitlab-ci.yml") => Kind::Gitlab,
        _ if has(".forgejo") || has(".gitea") => Kind::Forgejo,
        _ => Kind::Github,
    }
}

/// The files and next step of `kind` for `project` at `root`.
pub fn scaffold(kind: Kind, project: &Project, model: &str, root: &Path) -> Result<Scaffold> {
    match kind {
        Kind::Github => Ok(super::github::init::scaffold(project, model)),
        Kind::Gitlab => Ok(super::gitlab::init::scaffold(project, model, root)),
        Kind::Forgejo => Ok(super::forgejo::init::scaffold(project, model)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forge_is_the_remotes_else_the_projects_ci() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(forge_of(Some("github.com"), dir.path()), Kind::Github);
        assert_eq!(forge_of(Some("gitlab.com"), dir.path()), Kind::Gitlab);
        assert_eq!(forge_of(Some("codeberg.org"), dir.path()), Kind::Forgejo);
        assert_eq!(forge_of(Some("git.corp.example"), dir.path()), Kind::Github);
        assert_eq!(forge_of(None, dir.path()), Kind::Github);
        std::fs::create_dir(dir.path().join(".forgejo")).unwrap();
        assert_eq!(forge_of(Some("git.corp.example"), dir.path()), Kind::Forgejo);
        std::fs::write(dir.path().join(".gitlab-ci.yml"), "").unwrap();
        assert_eq!(forge_of(Some("git.corp.example"), dir.path()), Kind::Gitlab);
        assert_eq!(forge_of(Some("github.com"), dir.path()), Kind::Github);
    }
}
