//! How `grep` opens the files its walk found, at the cost of one open each: the read rules
//! compiled into one set for the call, and each file opened by its real name following no
//! symlink, so that no `/proc` lookup is needed to tell where the open led (issue 44: that
//! lookup, one a file, took a sixth of the search's CPU time).

use super::paths::Resolved;
use super::{ToolContext, beneath, io_err};
use crate::protocol::ToolOutput;
use globset::{GlobSet, GlobSetBuilder};
use std::borrow::Cow;
use std::fs::File;

/// The files a walk of one start (`base`) found, opened as [`ToolContext::open_readable`]
/// opens them: beneath the root, only if regular, and only if their real path may be read.
pub struct Opener<'a> {
    ctx: &'a ToolContext,
    root_dir: File,
    base: &'a Resolved,
    /// The policy's read rules as one set (their globs, with their options): matched once per
    /// path instead of once per rule. `None` if they do not build into one; then rule by rule.
    deny: Option<GlobSet>,
}

impl<'a> Opener<'a> {
    pub fn new(ctx: &'a ToolContext, base: &'a Resolved) -> std::io::Result<Opener<'a>> {
        let root_dir = beneath::open_root(ctx.root.path())?;
        let mut set = GlobSetBuilder::new();
        for rule in &ctx.policy.read_deny {
            set.add(rule.matcher.glob().clone());
        }
        Ok(Opener { ctx, root_dir, base, deny: set.build().ok() })
    }

    /// Whether the read rules let the model read `rel` ([`ToolContext::readable`]).
    pub fn readable(&self, rel: &str) -> bool {
        match &self.deny {
            Some(set) => !set.is_match(rel),
            None => self.ctx.readable(rel),
        }
    }

    /// Open the regular file `rel` the walk found (its read rules are the caller's). Its real
    /// path is its name with the start's real path in front (the walk follows no symlink below
    /// its start), and it is opened by that name following no symlink at all, so that what is
    /// read is the file there; that name's read rules are checked first. A name that goes
    /// through a symlink now (swapped in since the walk) is opened through it by
    /// [`ToolContext::open_readable`], which asks where it led.
    pub fn open(&self, rel: &str) -> Result<File, ToolOutput> {
        let real = real_name(self.base, rel);
        if real != rel && !self.readable(&real) {
            return Err(self.ctx.refuse_read(&real));
        }
        match beneath::open_file_unlinked(&self.root_dir, &real) {
            Ok(f) => Ok(f),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => self.ctx.open_readable(&self.root_dir, rel),
            Err(e) => Err(io_err(&format!("cannot read `{rel}`"), &e)),
        }
    }
}

/// The real path of `rel`, a file the walk of `base` found: `rel` with `base`'s real path in
/// place of `base`.
fn real_name<'r>(base: &Resolved, rel: &'r str) -> Cow<'r, str> {
    if base.target == base.rel {
        return Cow::Borrowed(rel);
    }
    // (`base` is not the root here: the root's real path is itself.)
    match rel.strip_prefix(base.rel.as_str()) {
        Some("") => Cow::Owned(base.target.clone()),
        Some(below) if below.starts_with('/') && base.target == "." => Cow::Borrowed(&below[1..]),
        Some(below) if below.starts_with('/') => Cow::Owned(format!("{}{below}", base.target)),
        // Not below `base` (the walk gives nothing else): its own name, opened as it is.
        _ => Cow::Borrowed(rel),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{ToolContext, dispatch};
    use super::*;
    use crate::error::Code;
    use crate::policy::Access;
    use serde_json::json;
    use std::sync::Arc;

    fn hiding(p: &std::path::Path, hidden: &[&str]) -> Arc<ToolContext> {
        let mut c = ctx(p);
        let policy = &mut Arc::get_mut(&mut c).unwrap().policy;
        for h in hidden {
            policy.hide(h, "test");
        }
        c
    }

    /// Where a found file really is decides whether it is read: through the symlinked directory
    /// a search starts from, and through a link swapped in after the walk saw its name.
    #[tokio::test]
    async fn a_found_file_is_read_only_if_its_real_path_may_be() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("vault")).unwrap();
        std::fs::create_dir_all(p.join("d")).unwrap();
        std::fs::write(p.join("vault/keys.txt"), "needle=secret\n").unwrap();
        std::os::unix::fs::symlink("vault", p.join("v")).unwrap();
        let c = hiding(p, &["vault/keys.txt"]);
        let out = dispatch(&c, &call("grep", json!({"pattern": "needle", "path": "v"}))).await.content;
        assert!(!out.contains("secret") && out.contains("[1 file(s) not searched"), "{out}");
        // The walk of the root saw `d/keys.txt`; then `d` became a link to `vault`.
        std::fs::remove_dir(p.join("d")).unwrap();
        std::os::unix::fs::symlink("vault", p.join("d")).unwrap();
        let base = c.resolve("", Access::Read).unwrap();
        let e = Opener::new(&c, &base).unwrap().open("d/keys.txt").unwrap_err();
        assert_eq!(e.code, Some(Code::PolicyDenied), "{}", e.content);
        // Through a link that stays readable, the file is read as before.
        std::fs::write(p.join("vault/open.txt"), "needle\n").unwrap();
        assert!(Opener::new(&c, &base).unwrap().open("d/open.txt").is_ok());
    }

    /// The read rules as one set refuse exactly what they refuse one by one.
    #[test]
    fn the_rules_as_one_set_decide_as_each_rule() {
        let dir = tempfile::tempdir().unwrap();
        let c = hiding(dir.path(), &["a[b]/*.txt", "sub/file?.rs"]);
        let base = c.resolve("", Access::Read).unwrap();
        let opener = Opener::new(&c, &base).unwrap();
        assert!(opener.deny.is_some());
        let paths = [
            ".env",
            "a/.env",
            "a/.env.local",
            "x.pem",
            "d/e/x.key",
            "k/id_rsa.pub",
            ".netrc",
            "n/.npmrc",
            "a[b]/*.txt",
            "ab/x.txt",
            "a[b]/x.txt",
            "sub/file?.rs",
            "sub/file1.rs",
            "src/main.rs",
            "env",
            ".envrc",
            "dir.pem/x",
            "x.pem/",
            "a/.git-credentials",
            ".pypirc.bak",
        ];
        for p in paths {
            assert_eq!(opener.readable(p), c.readable(p), "{p}");
        }
        assert!(!opener.readable("a[b]/*.txt") && opener.readable("ab/x.txt") && !opener.readable("x.pem"));
    }
}
