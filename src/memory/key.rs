//! The key a repository's memory is filed under: its remote's URL normalized, so that every
//! clone of one repository shares it and two repositories never do.

use std::path::Path;

/// Which repository a memory belongs to: `github.com/acme/widgets` (a remote URL without
/// scheme, credentials, default port or `.git`), `file:///srv/git/x` (a local remote) or
/// `root:<sha>` (no remote: the first root commit of HEAD). A network key's first part is a
/// host and perhaps a port (digits), so it never begins with `file:/` or `root:`: a remote on a
/// host named `file` or `root` is never keyed as a local or remote-less repository.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RepoKey(String);

impl RepoKey {
    /// The key of `repo`: the URL of its remote `remote` normalized, else its root commit; `None`
    /// when it has neither (an empty repository without that remote).
    pub fn of(repo: &git2::Repository, remote: &str) -> Option<RepoKey> {
        let base = repo.workdir().unwrap_or_else(|| repo.path());
        let url = repo.find_remote(remote).ok().and_then(|r| r.url().ok().map(str::to_string));
        if let Some(key) = url.as_deref().and_then(|u| normalize(u, base)) {
            return Some(RepoKey(key));
        }
        root_commit(repo).map(|sha| RepoKey(format!("root:{sha}")))
    }

    /// The key of a repository named by its URL (the forge's name for it, when the environment
    /// or a fleet file says it).
    pub fn from_url(url: &str, base: &Path) -> Option<RepoKey> {
        normalize(url, base).map(RepoKey)
    }

    /// A key as written in a memory file (`hone memory` checks it against the file's name).
    pub fn from_stored(key: &str) -> Option<RepoKey> {
        let ok = !key.is_empty() && key.len() <= 1000 && !key.chars().any(char::is_control);
        ok.then(|| RepoKey(key.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RepoKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The first root commit of HEAD's first-parent history.
fn root_commit(repo: &git2::Repository) -> Option<String> {
    let mut walk = repo.revwalk().ok()?;
    walk.push_head().ok()?;
    walk.simplify_first_parent().ok()?;
    walk.filter_map(Result::ok).last().map(|oid| oid.to_string())
}

/// The default port of a URL scheme.
fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "https" => Some("443"),
        "http" => Some("80"),
        "ssh" | "git+ssh" | "ssh+git" => Some("22"),
        "git" => Some("9418"),
        _ => None,
    }
}

/// `url` as a key: `host[:port]/path` for a network URL, `file://<absolute path>` for a local one;
/// local paths are taken relative to `base` (the repository's directory). `None` when empty or
/// when its authority is no host (and port).
pub fn normalize(url: &str, base: &Path) -> Option<String> {
    let url = url.trim();
    if url.is_empty() || url.chars().any(char::is_control) {
        return None;
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return local(rest, base);
        }
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        return network(authority, path, default_port(&scheme));
    }
    // scp-like `[user@]host:path`: a colon before the first slash (git's own rule).
    match url.split_once(':') {
        Some((host, path)) if !host.contains('/') && !host.is_empty() => network(host, path, None),
        _ => local(url, base),
    }
}

/// `host/path` from a URL's authority (credentials and a default port dropped) and its path
/// (trailing `/` and `.git` dropped), lowercased. `None` for an authority that is no host (and
/// port): so no network key begins with `file:` or `root:`, which name a local repository and
/// one without a remote.
fn network(authority: &str, path: &str, default_port: Option<&str>) -> Option<String> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.rsplit_once(':') {
        // An IPv6 literal `[::1]` keeps its colons.
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (host_port, None),
    };
    let host = host.to_ascii_lowercase();
    if !is_host(&host) {
        return None;
    }
    let host = match port {
        None | Some("") => host,
        Some(p) if p.parse::<u16>().is_err() => return None,
        Some(p) if Some(p) == default_port => host,
        Some(p) => format!("{host}:{p}"),
    };
    // Forges name repositories case-insensitively (`GITHUB_REPOSITORY=Acme/Widgets` is the clone
    // of `github.com/acme/widgets`), so the path is lowercased too.
    let path = trim_repo_path(path.trim_start_matches('/')).to_lowercase();
    Some(if path.is_empty() { host } else { format!("{host}/{path}") })
}

/// A host name (letters, digits, `.`, `-`, `_`, `~`, `%`) or an IPv6 literal in brackets: never
/// a colon outside brackets.
fn is_host(host: &str) -> bool {
    let name = |c: char| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '~' | '%');
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => !v6.is_empty() && v6.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%')),
        None => !host.is_empty() && host.chars().all(name),
    }
}

/// A local path as `file://<absolute path>` (`file:///srv/git/x`), through symlinks when it exists.
fn local(path: &str, base: &Path) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() { p.to_path_buf() } else { base.join(p) };
    let abs = crate::safe_fs::absolute(&joined);
    let text = abs.to_string_lossy();
    let trimmed = trim_repo_path(text.trim_start_matches('/'));
    Some(format!("file:///{trimmed}"))
}

/// A repository path without trailing `/`, `.git` or `/.git`.
fn trim_repo_path(path: &str) -> String {
    let mut p = path.trim_end_matches('/');
    if let Some(s) = p.strip_suffix(".git") {
        p = s.trim_end_matches('/');
    }
    p.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git::git;

    #[test]
    fn clones_of_one_repository_share_a_key_whatever_the_url_says() {
        let base = Path::new("/work/repo");
        let same = [
            "https://github.com/acme/widgets.git",
            "https://x-access-token:ghs_secret123456@github.com/acme/widgets",
            "https://GitHub.com:443/acme/widgets/",
            "https://github.com/Acme/Widgets",
            "git@github.com:acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets.git",
            "ssh://github.com/acme/widgets",
            "http://user@github.com:80/acme/widgets.git?x=1",
        ];
        for url in same {
            assert_eq!(normalize(url, base).as_deref(), Some("github.com/acme/widgets"), "{url}");
        }
        let key = normalize("https://oauth2:glpat-XYZ123456@gitlab.example:8443/g/sub/p.git", base).unwrap();
        assert_eq!(key, "gitlab.example:8443/g/sub/p");
        assert!(!key.contains("glpat"), "credentials never reach the key");
        assert_ne!(
            normalize("https://github.com/acme/widgets", base),
            normalize("https://github.com/acme/gadgets", base)
        );
        assert_ne!(normalize("https://github.com/acme/w", base), normalize("https://gitlab.com/acme/w", base));
    }

    #[test]
    fn local_remotes_are_absolute_file_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("x.git")).unwrap();
        let want = format!("file:///{}/x", real.to_string_lossy().trim_start_matches('/'));
        assert_eq!(normalize(&format!("{}/x.git", real.display()), Path::new("/")).unwrap(), want);
        assert_eq!(normalize(&format!("file://{}/x.git/", real.display()), Path::new("/")).unwrap(), want);
        assert_eq!(normalize("../x.git", &real.join("work")).unwrap(), want, "relative to the repository");
        assert_eq!(normalize("", &real), None);
    }

    #[test]
    fn a_url_whose_host_is_file_or_root_never_shares_a_key_with_a_local_or_remote_less_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().canonicalize().unwrap();
        git(&real, &["init", "-q"]);
        std::fs::write(real.join("a"), "1").unwrap();
        git(&real, &["add", "a"]);
        git(&real, &["commit", "-q", "-m", "one"]);
        let root = git(&real, &["rev-parse", "HEAD"]);
        let repo = git2::Repository::open(&real).unwrap();
        let remote_less = RepoKey::of(&repo, "origin").unwrap();
        // (Lowercase, as a network key's path is.)
        let local = normalize("/srv/git/x.git", Path::new("/")).unwrap();
        let abs = "srv/git";
        let urls = [
            format!("https://file/{abs}/x"),
            format!("ssh://git@file/{abs}/x.git"),
            format!("git@file:{abs}/x"),
            format!("file:/{abs}/x"),
            format!("https://FILE:443/{abs}/x"),
            format!("https://file::/{abs}/x"),
            format!("https://file:/{abs}/x"),
            format!("https://root/{root}"),
            format!("git@root:{root}"),
            format!("ssh://root/{root}.git"),
            format!("https://root:/{root}"),
            format!("https://root::/{root}"),
        ];
        for url in &urls {
            let key = normalize(url, &real);
            assert_ne!(key.as_deref(), Some(local.as_str()), "{url} is keyed as the local remote");
            assert_ne!(key.as_deref(), Some(remote_less.as_str()), "{url} is keyed as the remote-less repository");
        }
        // A repository whose remote is such a URL is not the remote-less one either.
        git(&real, &["remote", "add", "origin", &format!("https://root/{root}")]);
        assert_ne!(RepoKey::of(&repo, "origin").unwrap(), remote_less);
    }

    #[test]
    fn a_repository_without_a_remote_is_keyed_by_its_root_commit_and_an_empty_one_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let repo = git2::Repository::open(tmp.path()).unwrap();
        assert_eq!(RepoKey::of(&repo, "origin"), None, "no remote, no commit");
        std::fs::write(tmp.path().join("a"), "1").unwrap();
        git(tmp.path(), &["add", "a"]);
        git(tmp.path(), &["commit", "-q", "-m", "one"]);
        let root = git(tmp.path(), &["rev-parse", "HEAD"]);
        std::fs::write(tmp.path().join("a"), "2").unwrap();
        git(tmp.path(), &["commit", "-q", "-am", "two"]);
        let key = RepoKey::of(&repo, "origin").unwrap();
        assert_eq!(key.as_str(), format!("root:{root}"));
        git(tmp.path(), &["remote", "add", "upstream", "git@github.com:acme/widgets.git"]);
        assert_eq!(RepoKey::of(&repo, "upstream").unwrap().as_str(), "github.com/acme/widgets");
        assert_eq!(RepoKey::of(&repo, "origin").unwrap().as_str(), format!("root:{root}"), "only the remote named");
    }
}
