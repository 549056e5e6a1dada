//! What the work tree holds that the view must change: the paths the policy forbids reading, the
//! git dirs of repositories checked out inside it (a second `actions/checkout` with `path:`,
//! which persists its own token in its own `.git/config`), and the git config files of all of
//! them as the jail shows them (`jail::gitconfig`).

use crate::policy::Policy;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One walk of the work tree (ignored entries too, no link followed, on every core).
#[derive(Debug, Default)]
pub struct Tree {
    /// Files and directories the policy forbids reading; a denied directory is not searched
    /// further.
    pub denied: Vec<PathBuf>,
    /// The `.git` directories of repositories inside the work tree (not the work tree's own).
    pub nested_git: Vec<PathBuf>,
}

/// Walk `root`.
pub fn walk(policy: &Policy, root: &Path) -> Tree {
    let found = Mutex::new(Tree::default());
    let own = root.join(".git");
    ignore::WalkBuilder::new(root).standard_filters(false).follow_links(false).build_parallel().run(|| {
        let (found, own) = (&found, &own);
        Box::new(move |entry| {
            let Ok(e) = entry else { return ignore::WalkState::Continue };
            if e.file_name() == ".git" {
                if e.path() != own
                    && e.file_type().is_some_and(|t| t.is_dir())
                    && let Ok(mut f) = found.lock()
                {
                    f.nested_git.push(e.into_path());
                }
                return ignore::WalkState::Skip;
            }
            let rel = e.path().strip_prefix(root).map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
            if rel.is_empty() || crate::policy::read_denied_by(policy, &rel).is_none() {
                return ignore::WalkState::Continue;
            }
            if let Ok(mut f) = found.lock() {
                f.denied.push(e.into_path());
            }
            ignore::WalkState::Skip
        })
    });
    let mut out = found.into_inner().unwrap_or_else(|e| e.into_inner());
    out.denied.sort();
    out.nested_git.sort();
    out
}

/// The git config files the jail shows rebuilt (the repository's git dirs and every nested
/// repository's), with their text; and what to mask where the walk of submodule git dirs was
/// cut short by its bounds (every `modules` dir of those git dirs: no submodule's config is then
/// shown at all rather than some of them as they are).
pub fn git_configs(git_dirs: &[PathBuf], nested: &[PathBuf]) -> (Vec<(PathBuf, String)>, Vec<PathBuf>) {
    let dirs: Vec<PathBuf> = git_dirs.iter().chain(nested).cloned().collect();
    let found = crate::jail::gitconfig::walk(&dirs);
    let masks = if found.complete {
        Vec::new()
    } else {
        tracing::warn!("more submodule git dirs than the jail rebuilds the config of: their git dirs are hidden");
        dirs.iter().map(|d| d.join("modules")).filter(|m| m.is_dir()).collect()
    };
    let shown = found.files.into_iter().map(|f| (f.clone(), crate::jail::gitconfig::read(&f))).collect();
    (shown, masks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second checkout inside the work tree (ignored or not) is found by its `.git`; the work
    /// tree's own `.git` and a submodule's `.git` file are not nested repositories.
    #[test]
    fn repositories_inside_the_work_tree_are_found_by_their_git_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [".git/modules/s", "other/.git", "deep/a/b/.git", "s"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("s/.git"), "gitdir: ../.git/modules/s\n").unwrap();
        std::fs::write(root.join(".env"), "X=1\n").unwrap();
        let t = walk(&Policy::builtin(), root);
        assert_eq!(t.nested_git, [root.join("deep/a/b/.git"), root.join("other/.git")]);
        assert_eq!(t.denied, [root.join(".env")]);
    }
}
