//! The user's own git config, read in process as git reads its protected config: the system
//! file, the global files and the command line's (`GIT_CONFIG_COUNT`), never a repository's
//! (whose config the repository's author writes). hone's git processes and libgit2 read none of
//! it; hone takes from it only `safe.directory` (`safe.rs`) and the transport settings of
//! `transport.rs`.

use crate::env::RunEnv;
use std::path::PathBuf;

/// One setting: its name as libgit2 spells it (section and key in lower case, a subsection as
/// written: `http.https://git.corp/.sslcainfo`), and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub value: String,
}

/// The files git reads for its system and global config, in the order it reads them (a later
/// value wins): `GIT_CONFIG_SYSTEM` or `/etc/gitconfig` (none with `GIT_CONFIG_NOSYSTEM`), then
/// `GIT_CONFIG_GLOBAL`, or the XDG file and `~/.gitconfig`.
pub fn files(var: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let no_system = var("GIT_CONFIG_NOSYSTEM").is_some_and(|v| !matches!(v.trim(), "" | "0" | "false" | "no" | "off"));
    if !no_system {
        out.push(var("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from));
    }
    if let Some(global) = var("GIT_CONFIG_GLOBAL") {
        out.push(PathBuf::from(global));
        return out;
    }
    let home = var("HOME").map(PathBuf::from);
    match (var("XDG_CONFIG_HOME"), &home) {
        (Some(xdg), _) => out.push(PathBuf::from(xdg).join("git/config")),
        (None, Some(h)) => out.push(h.join(".config/git/config")),
        (None, None) => {}
    }
    if let Some(h) = home {
        out.push(h.join(".gitconfig"));
    }
    out
}

/// The command line's settings (`git -c` hands them on as `GIT_CONFIG_COUNT`,
/// `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`), names folded as libgit2 folds them.
pub fn command_line(var: impl Fn(&str) -> Option<String>) -> Vec<Entry> {
    let count: usize = var("GIT_CONFIG_COUNT").and_then(|c| c.trim().parse().ok()).unwrap_or(0);
    (0..count.min(1000))
        .filter_map(|i| {
            let key = var(&format!("GIT_CONFIG_KEY_{i}"))?;
            Some(Entry { name: fold(&key), value: var(&format!("GIT_CONFIG_VALUE_{i}")).unwrap_or_default() })
        })
        .collect()
}

/// A key as libgit2 names it: the section and the variable in lower case, the subsection as is.
pub fn fold(key: &str) -> String {
    match (key.find('.'), key.rfind('.')) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{}{}", key[..a].to_ascii_lowercase(), &key[a..b], key[b..].to_ascii_lowercase())
        }
        _ => key.to_ascii_lowercase(),
    }
}

/// Every setting of the user's protected config, in git's order. A file that is missing or
/// unreadable is skipped, as git skips a missing one.
pub fn read(env: &RunEnv) -> Vec<Entry> {
    // As git reads them: a variable set to nothing is set (`GIT_CONFIG_GLOBAL=` means no file).
    let var = |k: &str| env.vars().find(|(n, _)| n.as_str() == k).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    for file in files(var).into_iter().filter(|f| f.is_file()) {
        let Ok(cfg) = git2::Config::open(&file) else {
            tracing::warn!("cannot read the git config {}: skipped", file.display());
            continue;
        };
        let Ok(mut entries) = cfg.entries(None) else { continue };
        while let Some(Ok(e)) = entries.next() {
            if let (Ok(name), Ok(value)) = (e.name(), e.value()) {
                out.push(Entry { name: name.to_string(), value: value.to_string() });
            }
        }
    }
    out.extend(command_line(var));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_files_git_reads_in_its_order() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            files(vars(&[("HOME", "/h")])),
            [p("/etc/gitconfig"), p("/h/.config/git/config"), p("/h/.gitconfig")]
        );
        assert_eq!(
            files(vars(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x"), ("GIT_CONFIG_SYSTEM", "/s")])),
            [p("/s"), p("/x/git/config"), p("/h/.gitconfig")]
        );
        assert_eq!(
            files(vars(&[("HOME", "/h"), ("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", "/g")])),
            [p("/g")]
        );
        assert_eq!(files(vars(&[("GIT_CONFIG_NOSYSTEM", "0")])), [p("/etc/gitconfig")]);
    }

    #[test]
    fn command_line_settings_come_from_the_count() {
        let v = [
            ("GIT_CONFIG_COUNT", "2"),
            ("GIT_CONFIG_KEY_0", "Safe.Directory"),
            ("GIT_CONFIG_VALUE_0", "/srv/a"),
            ("GIT_CONFIG_KEY_1", "HTTP.https://Git.Corp/.SSLCAInfo"),
            ("GIT_CONFIG_VALUE_1", "/ca.pem"),
            ("GIT_CONFIG_KEY_2", "safe.directory"),
            ("GIT_CONFIG_VALUE_2", "*"),
        ];
        let got = command_line(vars(&v));
        let want = [
            Entry { name: "safe.directory".into(), value: "/srv/a".into() },
            Entry { name: "http.https://Git.Corp/.sslcainfo".into(), value: "/ca.pem".into() },
        ];
        assert_eq!(got, want, "only as many as the count says");
    }

    #[test]
    fn a_file_is_read_in_its_order_with_its_includes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("more"), "[safe]\n\tdirectory = /b\n").unwrap();
        let global = dir.path().join("global");
        std::fs::write(&global, "[safe]\n\tdirectory = /a\n[include]\n\tpath = more\n[http]\n\tproxy = http://p:1\n")
            .unwrap();
        let env = RunEnv::from_vars(
            [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", global.to_str().unwrap())]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        let got: Vec<(String, String)> = read(&env).into_iter().map(|e| (e.name, e.value)).collect();
        let safe: Vec<&str> = got.iter().filter(|(n, _)| n == "safe.directory").map(|(_, v)| v.as_str()).collect();
        assert_eq!(safe, ["/a", "/b"]);
        assert!(got.contains(&("http.proxy".into(), "http://p:1".into())), "{got:?}");
    }
}
