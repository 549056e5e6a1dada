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
use std::path::{Path, PathBuf};

/// The largest config file read.
const MAX_CONFIG: u64 = 1 << 20;
/// At most so many config files (submodules' included).
const MAX_FILES: usize = 256;
/// How deep submodules nest (and submodule names hold `/`) before hone stops looking.
const MAX_DEPTH: usize = 8;

/// Register the secrets of `ws`'s git config files.
pub fn register(redactor: &Redactor, ws: &Workspace) {
    for file in config_files(&ws.git_dir(), ws.repository().commondir()) {
        let Some(text) = read_config(&file) else { continue };
        for secret in secrets_in_config(&text) {
            redactor.add(&secret);
        }
    }
}

/// The config files of the repository with git dir `git_dir` and common dir `common` that
/// exist as regular files, none reached through a link below those dirs.
pub fn config_files(git_dir: &Path, common: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [git_dir, common] {
        for name in ["config", "config.worktree"] {
            push_file(&dir.join(name), &mut out);
        }
    }
    for worktree in subdirs(&common.join("worktrees")) {
        push_file(&worktree.join("config.worktree"), &mut out);
    }
    modules(&common.join("modules"), 0, &mut out);
    out
}

/// The config of each submodule's git dir under `dir` (a git dir is a directory with a
/// `config`; its own `modules` holds its submodules' ones; any other directory is part of a
/// submodule's name).
fn modules(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth >= MAX_DEPTH {
        return;
    }
    for sub in subdirs(dir) {
        let config = sub.join("config");
        if std::fs::symlink_metadata(&config).is_ok_and(|m| m.is_file()) {
            push_file(&config, out);
            modules(&sub.join("modules"), depth + 1, out);
        } else {
            modules(&sub, depth + 1, out);
        }
    }
}

/// The directories in `dir`, none a link.
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().take(MAX_FILES).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect()
}

/// `file` into `out`, when it is a regular file (not a link) and `out` is not full.
fn push_file(file: &Path, out: &mut Vec<PathBuf>) {
    if out.len() < MAX_FILES
        && !out.iter().any(|f| f == file)
        && std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file())
    {
        out.push(file.to_path_buf());
    }
}

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
