//! Checkouts owned by another user (a container job on the runner's checkout, a self-hosted
//! runner): hone works in one wherever git's `safe.directory` lets git work, and otherwise stops
//! at intake saying which setting to add. The decision is git's (2.46 and later): the work tree,
//! its `.git` and the git directory owned by this user (or, as root, by the user `SUDO_UID`
//! names); else a `safe.directory` value from the system, global or command-line config (never
//! the repository's) that is `*`, the work tree's path, or `DIR/*` with the work tree under DIR;
//! an empty value forgets the ones before it. libgit2's own check, which cannot see that config
//! (hone keeps libgit2 from reading it), is off; this one takes its place.

use crate::env::RunEnv;
use crate::error::{Code, HoneError, Result};
use std::path::{Path, PathBuf};

/// Whether a file owned by `owner` is this user's to git: ours, or as root the sudo caller's.
pub fn owned_by_us(owner: u32, euid: u32, sudo_uid: Option<u32>) -> bool {
    owner == euid || (euid == 0 && sudo_uid == Some(owner))
}

/// A `safe.directory` value with `~` expanded (git's path interpolation). `None` for what hone
/// cannot expand: `%(prefix)/` (git's install prefix) and `~user/`.
pub fn interpolate(value: &str, home: Option<&str>) -> Option<String> {
    if value.starts_with("%(prefix)/") {
        return None;
    }
    match value.strip_prefix('~') {
        None => Some(value.to_string()),
        Some("") => home.map(str::to_string),
        Some(rest) if rest.starts_with('/') => home.map(|h| format!("{}{rest}", h.trim_end_matches('/'))),
        Some(_) => None,
    }
}

/// Whether the `safe.directory` `values` (in the order git reads them) let git work in the
/// repository whose work tree is at the real path `path`. `normalize` resolves a value to a real
/// path (its last part need not exist), as git does; `home` expands `~`.
pub fn allows(path: &str, values: &[&str], home: Option<&str>, normalize: impl Fn(&str) -> Option<String>) -> bool {
    let mut safe = false;
    for v in values {
        if v.is_empty() {
            safe = false;
            continue;
        }
        if *v == "*" {
            safe = true;
            continue;
        }
        let Some(v) = interpolate(v, home) else { continue };
        // A relative value means nothing (relative to what?), except `.`: the current directory.
        if !v.starts_with('/') && v != "." {
            continue;
        }
        let Some(norm) = normalize(&v) else { continue };
        match norm.strip_suffix('*') {
            Some(prefix) if prefix.ends_with('/') => safe |= path.starts_with(prefix),
            _ => safe |= path == norm,
        }
    }
    safe
}

/// `p` as a real path, its last part kept as written when it does not exist (`/srv/*`).
fn real(p: &str) -> Option<String> {
    let p = Path::new(p);
    if let Ok(r) = p.canonicalize() {
        return r.to_str().map(str::to_string);
    }
    let parent = p.parent().filter(|x| !x.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let joined = parent.canonicalize().ok()?.join(p.file_name()?);
    joined.to_str().map(str::to_string)
}

/// The paths git checks the owner of: the work tree, `.git` (a directory, or a worktree's or
/// submodule's pointer file) and the git directory.
pub fn owned_paths(root: &Path, git_dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf(), root.join(".git"), git_dir.to_path_buf()];
    out.dedup();
    out
}

/// Refuse the repository at `root` (git directory `git_dir`) unless this user owns it or the
/// user's `safe.directory` (in the config `env` leads to) lists it.
pub fn ensure(root: &Path, git_dir: &Path, env: &RunEnv) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let euid = nix::unistd::geteuid().as_raw();
    let sudo = env.var("SUDO_UID").and_then(|v| v.trim().parse().ok());
    let foreign = owned_paths(root, git_dir)
        .into_iter()
        .filter_map(|p| std::fs::symlink_metadata(&p).ok().map(|m| (p, m.uid())))
        .find(|(_, owner)| !owned_by_us(*owner, euid, sudo));
    let Some((_, owner)) = foreign else { return Ok(()) };
    let path = real(&root.to_string_lossy()).unwrap_or_else(|| root.display().to_string());
    let config = super::user_config::read(env);
    let values: Vec<&str> = config.iter().filter(|e| e.name == "safe.directory").map(|e| e.value.as_str()).collect();
    if allows(&path, &values, env.var("HOME"), real) {
        tracing::info!("{path} is owned by uid {owner}; git's safe.directory lists it");
        return Ok(());
    }
    Err(refusal(&path, owner, euid))
}

/// The error for a checkout git would refuse: the setting, and the exact command to add it.
pub fn refusal(path: &str, owner: u32, euid: u32) -> HoneError {
    HoneError::new(
        Code::Spec,
        format!(
            "the repository `{path}` is owned by another user (uid {owner}; hone runs as uid {euid}) and git's `safe.directory` does not list it, so git would refuse to work in it, and hone does too"
        ),
    )
    .hint(format!(
        "if you trust this checkout, run `git config --global --add safe.directory {}` (a repository's own config cannot set it), or run hone as the checkout's owner",
        shell_word(path)
    ))
}

/// `s` as one shell word.
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:@,".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values resolved as written (`.` is `/cwd`): the decision without a file system.
    fn norm(v: &str) -> Option<String> {
        Some(if v == "." { "/cwd".to_string() } else { v.to_string() })
    }

    fn ok(values: &[&str]) -> bool {
        allows("/srv/work/app", values, Some("/home/u"), norm)
    }

    #[test]
    fn who_owns_it() {
        assert!(owned_by_us(1000, 1000, None));
        assert!(!owned_by_us(1001, 1000, None));
        assert!(owned_by_us(1001, 0, Some(1001)), "root under sudo: the caller's files too");
        assert!(!owned_by_us(1001, 1000, Some(1001)), "SUDO_UID counts only for root");
        assert!(!owned_by_us(0, 1000, None));
    }

    #[test]
    fn safe_directory_as_git_reads_it() {
        assert!(!ok(&[]));
        assert!(ok(&["/srv/work/app"]));
        assert!(ok(&["*"]));
        assert!(ok(&["/srv/work/*"]), "a directory and everything under it");
        assert!(ok(&["/srv/*"]));
        assert!(!ok(&["/srv/work/app/*"]), "under it, not it");
        assert!(!ok(&["/srv/work/ap*"]), "only `/*` is a pattern");
        assert!(!ok(&["/srv/work"]), "the exact path, not a parent");
        assert!(!ok(&["srv/work/app"]), "a relative value means nothing");
        assert!(!ok(&["/srv/work/app", ""]), "an empty value forgets the ones before");
        assert!(ok(&["*", "", "/srv/work/app"]));
        assert!(!ok(&["*", ""]));
        assert!(ok(&["/other", "/srv/work/app", "/else"]));
        assert!(allows("/home/u/app", &["~/app"], Some("/home/u"), norm));
        assert!(!allows("/home/u/app", &["~/app"], None, norm), "no HOME, no `~`");
        assert!(!ok(&["%(prefix)/srv/work/app"]), "git's install prefix is not hone's to know");
        assert!(allows("/cwd", &["."], None, norm), "`.`: the current directory");
        assert!(!ok(&["."]));
    }

    #[test]
    fn interpolation() {
        assert_eq!(interpolate("~", Some("/h")).as_deref(), Some("/h"));
        assert_eq!(interpolate("~/x", Some("/h/")).as_deref(), Some("/h/x"));
        assert_eq!(interpolate("~bob/x", Some("/h")), None);
        assert_eq!(interpolate("/a/b", None).as_deref(), Some("/a/b"));
    }

    #[test]
    fn values_are_compared_as_real_paths() {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real_dir.join("app")).unwrap();
        std::os::unix::fs::symlink(real_dir.join("app"), real_dir.join("link")).unwrap();
        let path = real_dir.join("app").to_string_lossy().into_owned();
        let link = real_dir.join("link").to_string_lossy().into_owned();
        assert!(allows(&path, &[link.as_str()], None, real), "a symlink to it names it");
        let star = format!("{}/*", real_dir.display());
        assert!(allows(&path, &[star.as_str()], None, real));
    }

    #[test]
    fn the_refusal_names_the_setting_and_the_command() {
        let e = refusal("/srv/my app", 1001, 0);
        assert!(e.message.contains("safe.directory") && e.message.contains("uid 1001"), "{}", e.message);
        let hint = e.hint.unwrap_or_default();
        assert!(hint.contains("git config --global --add safe.directory '/srv/my app'"), "{hint}");
        assert_eq!(shell_word("/srv/app-1"), "/srv/app-1");
        assert_eq!(shell_word("/it's"), r"'/it'\''s'");
    }
}
