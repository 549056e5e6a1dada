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

/// The rule for exactly the path `rel`, keyed by `why`.
fn exact(rel: &str, why: &str) -> Option<PathRule> {
    let matcher = compile_glob(&globset::escape(rel)).ok()?;
    Some(PathRule { key: why.into(), glob: rel.into(), matcher })
}
