//! Paths hone itself keeps from the model's commands and tools, whatever the policy file says:
//! the job spec and the policy file (unwritable), cloud credentials (unreadable too).

use super::{PathRule, Policy, compile_glob};
use std::path::Path;

impl Policy {
    /// Make `rel` (repo-relative) unwritable, e.g. the policy file itself.
    pub fn protect(&mut self, rel: &str, why: &str) {
        self.write_deny.extend(exact(rel, why));
    }

    /// Hide the file at `rel` (relative to the repository root): no command or tool may read or
    /// write it (the jail shows it empty), for `why`.
    pub fn hide(&mut self, rel: &str, why: &str) {
        self.read_deny.extend(exact(rel, why));
        self.write_deny.extend(exact(rel, why));
    }

    /// Keep the credentials file `file` (absolute, its links resolved) from the model: every
    /// jail masks it, and inside the repository `root` no tool reads or writes it either (nor,
    /// when it is a directory, anything in it).
    pub fn hide_file(&mut self, file: &Path, root: &Path, why: &str) {
        if let Some(rel) = file.strip_prefix(root).ok().filter(|r| !r.as_os_str().is_empty()) {
            let rel = rel.to_string_lossy();
            self.hide(&rel, why);
            if file.is_dir() {
                let within = compile_glob(&format!("{}/**", globset::escape(&rel))).ok();
                let rule = within.map(|matcher| PathRule { key: why.into(), glob: format!("{rel}/**"), matcher });
                self.read_deny.extend(rule.clone());
                self.write_deny.extend(rule);
            }
        }
        if !self.hidden_files.iter().any(|f| f == file) {
            self.hidden_files.push(file.to_path_buf());
        }
    }
}

impl Policy {
    /// The policy as it applies in another work tree of the same repository (a try's worktree
    /// at `to`, the checkout at `from`): the rules are relative to the root and hold as they
    /// are; a hidden file inside `from` is hidden at its place inside `to` too (and still where
    /// it was).
    pub fn rebased(&self, from: &Path, to: &Path) -> Policy {
        let mut p = self.clone();
        for f in &self.hidden_files {
            if let Ok(rel) = f.strip_prefix(from) {
                let moved = to.join(rel);
                if !p.hidden_files.contains(&moved) {
                    p.hidden_files.push(moved);
                }
            }
        }
        p
    }
}

/// The rule for exactly the path `rel`, keyed by `why`.
fn exact(rel: &str, why: &str) -> Option<PathRule> {
    let matcher = compile_glob(&globset::escape(rel)).ok()?;
    Some(PathRule { key: why.into(), glob: rel.into(), matcher })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hidden_in_the_checkout_is_hidden_in_a_try_s_tree_too() {
        let mut p = Policy::builtin();
        let (main, tree) = (Path::new("/repo"), Path::new("/tmp/tries/1"));
        p.hidden_files = vec![main.join(".aws/credentials"), Path::new("/home/u/.netrc").to_path_buf()];
        let moved = p.rebased(main, tree);
        assert_eq!(
            moved.hidden_files,
            vec![main.join(".aws/credentials"), "/home/u/.netrc".into(), tree.join(".aws/credentials")]
        );
    }
}
