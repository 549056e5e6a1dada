//! The git config the jail shows in place of the repository's own (`.git/config`, a worktree's
//! `config.worktree`, a submodule's `modules/*/config`): built from an allow-list of what
//! read-only git needs (the repository's format, remotes and branches by name, submodules,
//! diff and merge drivers, the author), with the userinfo taken out of every URL. Never
//! `http.*` (actions/checkout's `extraheader`), `credential.*`, `url.*.insteadOf` (a token in
//! the rewritten URL), includes, aliases or the programs git would run for hone's remotes.
//! Building the text is pure; finding and reading the files is `files` and `read`.

use std::path::{Path, PathBuf};

/// Sections the jail's git may see, with keys left out of them (lower case, as git2 gives them).
const SECTIONS: &[(&str, &[&str])] = &[
    ("core", &["askpass", "sshcommand", "gitproxy", "editor", "pager", "fsmonitor", "hookspath", "worktree"]),
    ("extensions", &[]),
    ("remote", &["proxy", "proxyauthmethod", "uploadpack", "receivepack", "vcs"]),
    ("branch", &[]),
    ("submodule", &[]),
    ("user", &["signingkey"]),
    ("diff", &[]),
    ("merge", &[]),
    ("filter", &[]),
    ("index", &[]),
    ("feature", &[]),
    ("pack", &[]),
    ("gc", &[]),
    ("init", &[]),
    ("status", &[]),
    ("log", &[]),
    ("color", &[]),
    ("blame", &[]),
    ("grep", &[]),
    ("worktree", &[]),
    ("fetch", &[]),
    ("pull", &[]),
    ("push", &[]),
    ("rebase", &[]),
    ("commit", &[]),
    ("tag", &[]),
    ("advice", &[]),
    ("i18n", &[]),
];

/// The most config text the jail is shown per file; a larger file is shown as the minimal one.
pub const MAX_BYTES: u64 = 1 << 20;

/// What a config without anything usable is replaced by.
pub const MINIMAL: &str = "[core]\n\trepositoryformatversion = 0\n";

/// Whether the entry `name` (`section.key` or `section.subsection.key`) is one the jail shows.
pub fn allowed(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let (Some(section), Some(key)) = (lower.split('.').next(), lower.rsplit('.').next()) else {
        return false;
    };
    if !lower.contains('.') {
        return false;
    }
    SECTIONS.iter().any(|(s, left_out)| *s == section && !left_out.contains(&key))
}

/// `value` with the userinfo (`user:token@`) of every URL in it taken out.
pub fn strip_userinfo(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace()).unwrap_or(tail.len());
        let authority = &tail[..end];
        out.push_str(authority.rsplit_once('@').map_or(authority, |(_, host)| host));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The config text for `entries` (name, value; in file order): the allowed ones, URLs without
/// userinfo, one section header each time the section changes.
pub fn render(entries: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut current: Option<(String, Option<String>)> = None;
    for (name, value) in entries.iter().filter(|(n, _)| allowed(n)) {
        let (Some((section, rest)), Some((_, key))) = (name.split_once('.'), name.rsplit_once('.')) else {
            continue;
        };
        let sub = rest.rsplit_once('.').map(|(s, _)| s.to_string());
        let head = (section.to_ascii_lowercase(), sub);
        if current.as_ref() != Some(&head) {
            match &head.1 {
                Some(s) => out.push_str(&format!("[{} \"{}\"]\n", head.0, escape(s))),
                None => out.push_str(&format!("[{}]\n", head.0)),
            }
            current = Some(head);
        }
        out.push_str(&format!("\t{key} = \"{}\"\n", escape(&strip_userinfo(value))));
    }
    if out.is_empty() { MINIMAL.to_string() } else { out }
}

/// A value or subsection quoted the way git reads it back.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// At most so many config files (submodules' included); past it, see `Found::complete`.
const MAX_FILES: usize = 4096;
/// How deep submodules nest (and submodule names hold `/`) before hone stops looking.
const MAX_DEPTH: usize = 32;

/// The config files of a repository's git dirs, and whether the walk saw all of them.
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<PathBuf>,
    /// False when a bound (`MAX_FILES`, `MAX_DEPTH`) stopped the walk: the jail then shows no
    /// submodule git dir at all (fail closed), rather than some of them unrebuilt.
    pub complete: bool,
}

/// The config files of the git dirs `git_dirs` (a repository's git dir and common dir): each
/// one's `config` and `config.worktree`, its linked worktrees' `config.worktree`, and each
/// submodule's `modules/…/config` (nested, and with names that hold `/`); regular files only,
/// none reached through a link below those dirs. The jail shows each rebuilt, and intake
/// registers the credentials in each with the redactor.
pub fn files(git_dirs: &[PathBuf]) -> Vec<PathBuf> {
    walk(git_dirs).files
}

/// `files`, saying whether the walk was complete.
pub fn walk(git_dirs: &[PathBuf]) -> Found {
    let mut found = Found { files: Vec::new(), complete: true };
    for dir in git_dirs.iter().filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())) {
        for name in ["config", "config.worktree"] {
            push_file(&dir.join(name), &mut found);
        }
        for worktree in subdirs(&dir.join("worktrees"), &mut found) {
            push_file(&worktree.join("config.worktree"), &mut found);
        }
        modules(&dir.join("modules"), 0, &mut found);
    }
    found.files.sort();
    found
}

/// The config of each submodule's git dir under `dir` (a git dir is a directory with a
/// `config`; its own `modules` holds its submodules' ones; any other directory is part of a
/// submodule's name).
fn modules(dir: &Path, depth: usize, found: &mut Found) {
    if depth >= MAX_DEPTH {
        found.complete &= subdirs(dir, found).is_empty();
        return;
    }
    for sub in subdirs(dir, found) {
        let config = sub.join("config");
        if std::fs::symlink_metadata(&config).is_ok_and(|m| m.is_file()) {
            push_file(&config, found);
            push_file(&sub.join("config.worktree"), found);
            modules(&sub.join("modules"), depth + 1, found);
        } else {
            modules(&sub, depth + 1, found);
        }
    }
}

/// The directories in `dir`, none a link (at most `MAX_FILES`).
fn subdirs(dir: &Path, found: &mut Found) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let all: Vec<PathBuf> =
        entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
    found.complete &= all.len() <= MAX_FILES;
    all.into_iter().take(MAX_FILES).collect()
}

/// The directories in `dir`, none a link (at most 4096).
pub fn subdirs_of(dir: &Path) -> Vec<PathBuf> {
    subdirs(dir, &mut Found::default())
}

/// `file` into `found`, when it is a regular file (not a link); past `MAX_FILES`, the walk is
/// incomplete.
fn push_file(file: &Path, found: &mut Found) {
    if !std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()) || found.files.iter().any(|f| f == file) {
        return;
    }
    if found.files.len() < MAX_FILES {
        found.files.push(file.to_path_buf());
    } else {
        found.complete = false;
    }
}

/// The text the jail shows for the config file `path`: its entries through `render`, or the
/// minimal config when the file is too large or git cannot read it.
pub fn read(path: &Path) -> String {
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(u64::MAX) > MAX_BYTES {
        tracing::warn!("{} is over 1 MiB: the jail shows a minimal git config in its place", path.display());
        return MINIMAL.to_string();
    }
    let entries = git2::Config::open(path).and_then(|c| {
        let mut v: Vec<(String, String)> = Vec::new();
        c.entries(None)?.for_each(|e| {
            if let (Ok(n), Ok(val)) = (e.name(), e.value()) {
                v.push((n.to_string(), val.to_string()));
            }
        })?;
        Ok(v)
    });
    match entries {
        Ok(e) => render(&e),
        Err(e) => {
            tracing::warn!("cannot read {}: {}; the jail shows a minimal git config", path.display(), e.message());
            MINIMAL.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn what_checkout_and_gitlab_leave_is_not_shown() {
        let text = render(&e(&[
            ("core.repositoryformatversion", "0"),
            ("core.bare", "false"),
            ("http.https://github.com/.extraheader", "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hw"),
            ("remote.origin.url", "https://gitlab-ci-token:glcbt-SECRET@gitlab.example.com/g/p.git"),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("credential.helper", "store --file=/home/u/.creds"),
            ("url.https://x-access-token:ghp_X@github.com/.insteadof", "https://github.com/"),
            ("include.path", "/home/u/secret.inc"),
            ("alias.t", "!curl -H 'Authorization: token ghp_Y'"),
            ("core.sshcommand", "ssh -i /home/u/.ssh/deploy"),
            ("branch.main.remote", "origin"),
        ]));
        for bad in
            ["extraheader", "eC1hY2Nl", "glcbt-SECRET", "gitlab-ci-token", "credential", "ghp_", "include", "deploy"]
        {
            assert!(!text.contains(bad), "{bad} in:\n{text}");
        }
        assert_eq!(
            text,
            "[core]\n\trepositoryformatversion = \"0\"\n\tbare = \"false\"\n[remote \"origin\"]\n\turl = \"https://gitlab.example.com/g/p.git\"\n\tfetch = \"+refs/heads/*:refs/remotes/origin/*\"\n[branch \"main\"]\n\tremote = \"origin\"\n"
        );
    }

    #[test]
    fn userinfo_is_taken_out_of_every_url_and_nothing_else_changes() {
        assert_eq!(strip_userinfo("https://u:p@h.example/x@y"), "https://h.example/x@y");
        assert_eq!(strip_userinfo("http://tok@h:8080"), "http://h:8080");
        assert_eq!(strip_userinfo("ssh://git@h/r a https://a:b@c/d"), "ssh://h/r a https://c/d");
        assert_eq!(strip_userinfo("git@github.com:o/r.git"), "git@github.com:o/r.git");
        assert_eq!(strip_userinfo("/srv/repo.git"), "/srv/repo.git");
        assert_eq!(strip_userinfo("https://a:b@c?x@y"), "https://c?x@y");
    }

    #[test]
    fn names_and_values_are_quoted_so_git_reads_them_back() {
        let text = render(&e(&[("branch.we\"ird.x.merge", "refs/heads/we\"ird\\x"), ("user.name", "A\tB")]));
        assert_eq!(
            text,
            "[branch \"we\\\"ird.x\"]\n\tmerge = \"refs/heads/we\\\"ird\\\\x\"\n[user]\n\tname = \"A\\tB\"\n"
        );
        assert_eq!(render(&[]), MINIMAL);
        assert!(!allowed("core") && !allowed("http.extraheader") && allowed("extensions.objectformat"));
    }

    /// The text is read back by libgit2 as the same allowed entries.
    #[test]
    fn a_written_config_reads_back_as_its_entries() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config");
        let src = "[core]\n\tbare = false\n[remote \"o\"]\n\turl = https://t:s@h/r\n[http \"https://h/\"]\n\textraheader = X: y\n[submodule \"m\"]\n\turl = https://k@h/m\n";
        std::fs::write(&f, src).unwrap();
        let shown = read(&f);
        std::fs::write(&f, &shown).unwrap();
        let c = git2::Config::open(&f).unwrap();
        assert_eq!(c.get_string("remote.o.url").unwrap(), "https://h/r");
        assert_eq!(c.get_string("submodule.m.url").unwrap(), "https://h/m");
        assert!(c.get_string("http.https://h/.extraheader").is_err());
        assert!(!c.get_bool("core.bare").unwrap());
    }

    #[test]
    fn the_config_files_of_a_repository_with_worktrees_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join(".git");
        for d in ["worktrees/w1", "modules/a/modules/b", "modules/lib/one"] {
            std::fs::create_dir_all(g.join(d)).unwrap();
        }
        for f in [
            "config",
            "config.worktree",
            "worktrees/w1/config.worktree",
            "modules/a/config",
            "modules/a/modules/b/config",
            "modules/lib/one/config",
        ] {
            std::fs::write(g.join(f), "").unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", g.join("modules/a/config.worktree")).unwrap();
        let got: Vec<String> =
            files(std::slice::from_ref(&g)).iter().map(|p| p.strip_prefix(&g).unwrap().display().to_string()).collect();
        assert_eq!(
            got,
            [
                "config",
                "config.worktree",
                "modules/a/config",
                "modules/a/modules/b/config",
                "modules/lib/one/config",
                "worktrees/w1/config.worktree"
            ]
        );
    }
}

#[cfg(test)]
#[path = "gitconfig_attack_tests.rs"]
mod attack_tests;
