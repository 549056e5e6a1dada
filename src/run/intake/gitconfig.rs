//! The credentials a repository's git config holds: CI leaves them there (actions/checkout's
//! `http.<url>.extraheader`, GitLab's runner's `https://gitlab-ci-token:TOKEN@host/` origin, a
//! fleet clone of a URL with a password). hone reads the config files of the repository it
//! works on (its git dir's and common dir's `config` and `config.worktree`, its linked
//! worktrees' `config.worktree`, each submodule's `modules/…/config`) and registers every such
//! secret with the redactor, whatever the key: the user and password of every URL (a remote's
//! `url` or `pushurl`, a submodule's `url`, an `insteadOf` rule's key or value), and each
//! `extraheader`'s value, credentials, decoded pair and token.

use crate::git::Workspace;
use crate::redact::{Redactor, extract};
use std::path::Path;

/// The largest config file read.
const MAX_CONFIG: u64 = crate::jail::gitconfig::MAX_BYTES;

/// Register the secrets of `ws`'s git config files (the same files the jail shows rebuilt).
pub fn register(redactor: &Redactor, ws: &Workspace) {
    register_dirs(redactor, &[ws.git_dir(), ws.repository().commondir().to_path_buf()]);
}

/// Register the secrets of the git config files of repositories checked out inside the work
/// tree `root` (a second `actions/checkout` with `path:`, which persists its own token): those
/// whose `.git` directory is in one of `entries` (repo-relative untracked or ignored entries) or
/// one or two levels below it. The jail shows every nested repository's config rebuilt
/// (`sandbox::tree`); this is the second line.
pub fn register_nested(redactor: &Redactor, root: &Path, entries: &[String]) {
    let mut dirs = Vec::new();
    for e in entries.iter().take(4096) {
        let top = root.join(e.trim_end_matches('/'));
        let below = |d: &Path| crate::jail::gitconfig::subdirs_of(d);
        let mut candidates = vec![top.clone()];
        for one in below(&top) {
            candidates.extend(below(&one));
            candidates.push(one);
        }
        dirs.extend(
            candidates
                .into_iter()
                .map(|c| c.join(".git"))
                .filter(|g| std::fs::symlink_metadata(g).is_ok_and(|m| m.is_dir())),
        );
    }
    register_dirs(redactor, &dirs);
}

/// Register the secrets of the config files of the git dirs `dirs` (`jail::gitconfig::files`).
fn register_dirs(redactor: &Redactor, dirs: &[std::path::PathBuf]) {
    for file in crate::jail::gitconfig::files(dirs) {
        let Some(text) = read_config(&file) else { continue };
        for secret in secrets_in_config(&text) {
            redactor.add(&secret);
        }
    }
}

/// The text of the config file `file` (a regular file, not a link, at most `MAX_CONFIG`).
fn read_config(file: &Path) -> Option<String> {
    crate::safe_fs::read_small(file, MAX_CONFIG).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The secrets in a git config file's text: the userinfo of every URL in it (section names,
/// keys and values alike), and the credentials of every `extraheader` value.
pub fn secrets_in_config(text: &str) -> Vec<String> {
    let mut out = extract::userinfo_secrets(text);
    for line in text.lines() {
        // `[http "…"] extraheader = …` is one line to git too.
        let body = match line.trim_start().strip_prefix('[') {
            Some(_) => line.rsplit_once(']').map_or("", |(_, rest)| rest),
            None => line,
        };
        let Some((key, value)) = body.split_once('=') else { continue };
        if key.trim().eq_ignore_ascii_case("extraheader") {
            out.extend(extract::header_secrets(&config_value(value)));
        }
    }
    out
}

/// A git config value as git reads it: quotes taken out, `\"` and `\\` unescaped, and a
/// `#` or `;` comment outside quotes dropped.
fn config_value(raw: &str) -> String {
    let (mut out, mut quoted, mut chars) = (String::new(), false, raw.trim().chars());
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
#[path = "gitconfig_tests.rs"]
mod tests;
