//! `forge:` in the job spec: which forge hosts the repository when its remote does not say, and
//! the address of a self-managed server (GitLab outside GitLab CI, Forgejo or Gitea).

use super::Checker;
use crate::forge::Kind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawForge {
    /// `github`, `gitlab` or `forgejo` (`gitea` is the same). Default: from the remote's host
    /// (github.com, `GITHUB_SERVER_URL`, the GitLab server), else GitLab inside GitLab CI or when
    /// `url` is set, else GitHub.
    pub kind: Option<Kind>,
    /// A self-managed server, `https://git.example.com`: GitLab's (default: `CI_SERVER_URL` in
    /// GitLab CI, else `https://gitlab.com`), or with `kind: forgejo` the Forgejo or Gitea server.
    /// The token goes to this host only.
    pub url: Option<String>,
    /// `url`'s older name, for a GitLab server; give one of the two.
    #[serde(rename = "gitlab_url")]
    pub older_url: Option<String>,
}

/// The checked `forge:` block.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForgeSpec {
    pub kind: Option<Kind>,
    /// `https://host[:port][/path]`, without a trailing `/`.
    pub url: Option<String>,
}

/// Whether `url` is a plain `https://host[:port][/path]` address: no user or password, query,
/// fragment, whitespace or non-ASCII, a host of letters, digits, dots and dashes.
pub fn is_server_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else { return false };
    if !url.bytes().all(|b| b.is_ascii_graphic()) || url.contains(['\\', '?', '#', '@', '%']) {
        return false;
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (host, port) = authority.split_once(':').map_or((authority, None), |(h, p)| (h, Some(p)));
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    let path_ok = path.split('/').all(|s| s != "." && s != "..");
    host_ok && port_ok && path_ok
}

impl Checker<'_> {
    pub(super) fn forge(&mut self, raw: Option<RawForge>) -> ForgeSpec {
        let raw = raw.unwrap_or_default();
        if raw.url.is_some() && raw.older_url.is_some() {
            self.err("forge.gitlab_url", "both `url` and `gitlab_url` are given", "keep `url` alone");
        }
        let key = if raw.url.is_some() { "forge.url" } else { "forge.gitlab_url" };
        let url = raw.url.or(raw.older_url).map(|u| u.trim_end_matches('/').to_string());
        if let Some(u) = &url
            && !is_server_url(u)
        {
            self.err(
                key,
                format!("`{u}` is not a plain https:// server address"),
                "write the server's address, like `https://git.example.com`, without credentials, query or fragment",
            );
        }
        ForgeSpec { kind: raw.kind, url }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls() {
        for ok in ["https://gitlab.example.com", "https://gitlab.example.com:8443", "https://example.com/gitlab"] {
            assert!(is_server_url(ok), "{ok}");
        }
        for bad in [
            "http://gitlab.example.com",
            "https://user:pw@gitlab.example.com",
            "https://gitlab.example.com?x=1",
            "https://gitlab.example.com#f",
            "https://",
            "https://gitlab example.com",
            "https://gitlab.example.com:0",
            "https://gitlab.example.com:99999",
            "https://gitlab.example.com/../x",
            "https://gitl\u{e4}b.example.com",
            "https://[::1]",
            "gitlab.example.com",
        ] {
            assert!(!is_server_url(bad), "{bad}");
        }
    }

    #[test]
    fn the_block_is_checked_with_its_position() {
        let yaml = "version: 1\nname: j\ntask: t\nmodel: { provider: script, script: s.yaml }\nforge:\n  kind: gitlab\n  gitlab_url: http://gitlab.example.com\n";
        let e = crate::spec::parse(std::path::Path::new("job.yaml"), yaml).unwrap_err().render();
        assert!(e.contains("forge.gitlab_url") && e.contains("job.yaml:7"), "{e}");
        let ok = yaml.replace("http://", "https://");
        let job = crate::spec::parse(std::path::Path::new("job.yaml"), &ok).unwrap();
        assert_eq!(job.forge.kind, Some(Kind::Gitlab));
        assert_eq!(job.forge.url.as_deref(), Some("https://gitlab.example.com"));
        let bad =
            "version: 1\nname: j\ntask: t\nmodel: { provider: script, script: s.yaml }\nforge: { kind: bitbucket }\n";
        assert!(crate::spec::parse(std::path::Path::new("job.yaml"), bad).is_err());
    }
}
