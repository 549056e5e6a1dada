//! Where the forge token may go: the forge's own host, over HTTPS, and nowhere else. One pure
//! decision ([`token_may_go`]) for every git process hone starts with a token (push, fetch,
//! ls-remote, fleet clones), the git config that holds git to it (a credential helper scoped to
//! the forge's URL that checks the host it is asked for; no redirects), and the scrubbing of
//! credentials out of URLs hone shows.

use crate::env::RunEnv;
use std::fmt;

/// The forge: the one host the token goes to. It comes from the trusted environment only
/// (`GITHUB_SERVER_URL`, else the server of `GITHUB_API_URL`), never from a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forge {
    /// The lower-case host, with `:port` unless it is 443.
    authority: String,
}

impl Forge {
    /// `GITHUB_SERVER_URL`, else the server of `GITHUB_API_URL` (github.com for
    /// api.github.com, else the API's own host, as on GitHub Enterprise Server). None when that
    /// is not an HTTPS URL with a plain host name: then the token goes nowhere.
    pub fn from_env(env: &RunEnv) -> Option<Forge> {
        if let Some(server) = env.var("GITHUB_SERVER_URL") {
            return Forge::from_url(server);
        }
        let api = Forge::from_url(&super::github::api::of(env).ok()?)?;
        Some(if api.authority == "api.github.com" { Forge { authority: "github.com".into() } } else { api })
    }

    /// The forge at `url`, when it is a plain HTTPS URL (its path is ignored).
    pub fn from_url(url: &str) -> Option<Forge> {
        match https_authority(url) {
            Ok((authority, _)) => Some(Forge { authority }),
            Err(_) => None,
        }
    }

    /// `https://host[:port]`.
    pub fn url(&self) -> String {
        format!("https://{}", self.authority)
    }

    /// `host[:port]`, lower case, without `:443`.
    pub fn authority(&self) -> &str {
        &self.authority
    }
}

/// A forge token, where it came from and the user name git presents it with. Its `Debug` does
/// not show it.
#[derive(Clone)]
pub struct Token {
    secret: String,
    /// The variable it came from (or how it was made), for messages.
    pub var: String,
    /// `x-access-token` (GitHub), `oauth2` (GitLab access tokens), `gitlab-ci-token` (GitLab's
    /// job token): fixed names, never from input.
    pub user: &'static str,
}

impl Token {
    pub fn new(secret: impl Into<String>, var: impl Into<String>, user: &'static str) -> Token {
        Token { secret: secret.into(), var: var.into(), user }
    }

    pub fn secret(&self) -> &str {
        &self.secret
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(from {}, user {})", self.var, self.user)
    }
}

/// Why the token was not offered to a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Withheld {
    /// The environment names no HTTPS forge.
    NoForge,
    /// Not HTTPS: plain http, ssh, git, a file or a local path.
    NotHttps,
    /// The URL carries a user or password of its own.
    Userinfo,
    /// HTTPS, but another host or port.
    OtherHost(String),
    /// Not a plain URL hone can vouch for (IPv6 literal, percent-encoding, backslash,
    /// whitespace, non-ASCII, a bad port).
    Malformed,
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Withheld::NoForge => write!(
                f,
                "no HTTPS forge server is known (GITHUB_SERVER_URL or GITHUB_API_URL on GitHub; CI_SERVER_URL or `forge.url` on GitLab)"
            ),
            Withheld::NotHttps => write!(f, "it is not HTTPS"),
            Withheld::Userinfo => write!(f, "it carries credentials of its own"),
            Withheld::OtherHost(h) => write!(f, "`{h}` is not the forge's host"),
            Withheld::Malformed => write!(f, "it is not a plain https://host/path URL"),
        }
    }
}

/// The lower-case authority (`:443` dropped) and the rest of a plain `https://host[:port]/…`
/// URL: ASCII, no whitespace or control characters, no backslash, no user or password, a host
/// of letters, digits, dots and dashes, and a numeric port.
fn https_authority(url: &str) -> Result<(String, &str), Withheld> {
    if !url.bytes().all(|b| b.is_ascii_graphic()) || url.contains('\\') {
        return Err(Withheld::Malformed);
    }
    let rest = url.strip_prefix("https://").ok_or(Withheld::NotHttps)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(Withheld::Userinfo);
    }
    let (host, port) = match authority.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let port_ok = port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    if !host_ok || !port_ok || port.is_some_and(|p| p.parse::<u16>().is_err()) {
        return Err(Withheld::Malformed);
    }
    let host = host.to_ascii_lowercase();
    let authority = match port {
        Some(p) if p != "443" => format!("{host}:{}", p.parse::<u16>().unwrap_or(0)),
        _ => host,
    };
    Ok((authority, tail))
}

/// The one decision: may the forge token be sent to `url`? Only when it is HTTPS to the forge's
/// exact host and port, with no credentials of its own. Returns the URL to give git, with the
/// host in lower case (so git asks the credential helper for exactly the forge's host).
pub fn token_may_go(url: &str, forge: Option<&Forge>) -> Result<String, Withheld> {
    let forge = forge.ok_or(Withheld::NoForge)?;
    let (authority, tail) = https_authority(url)?;
    if authority != forge.authority {
        return Err(Withheld::OtherHost(authority));
    }
    Ok(format!("https://{authority}{tail}"))
}

/// The token, granted for the forge. Its `Debug` does not show it.
pub struct Credential {
    forge: Forge,
    token: Token,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({})", self.forge.url())
    }
}

/// What a git process gets for one URL.
#[derive(Debug)]
pub struct Access {
    /// The URL to give git.
    pub url: String,
    /// The token, when `url` is the forge's.
    pub credential: Option<Credential>,
    /// Why a token there was not offered, and the forge it is kept for.
    pub withheld: Option<(Withheld, Option<Forge>)>,
}

impl Access {
    /// Decide for `url`, with `token` (if any) for `forge` (the place's server: `place.rs`).
    pub fn decide(url: &str, forge: Option<&Forge>, token: Option<&Token>) -> Access {
        let Some(token) = token else {
            return Access { url: url.to_string(), credential: None, withheld: None };
        };
        // A user and password of the URL's own (GitLab's runner writes its job token there)
        // are dropped for the forge's token: they cannot change the host the decision sees.
        match token_may_go(&drop_userinfo(url), forge) {
            Ok(url) => {
                let credential = forge.map(|forge| Credential { forge: forge.clone(), token: token.clone() });
                Access { url, credential, withheld: None }
            }
            Err(why) => Access { url: url.to_string(), credential: None, withheld: Some((why, forge.cloned())) },
        }
    }

    /// The git config for the process: no credential helper or askpass program but hone's
    /// helper, which is scoped to the forge's URL and answers only for `protocol=https` and the
    /// forge's host; redirects are never followed (so the token cannot ride one elsewhere).
    pub fn git_config(&self) -> Vec<(String, String)> {
        let mut cfg: Vec<(String, String)> = [
            ("credential.helper", ""),
            ("credential.interactive", "false"),
            ("core.askPass", ""),
            ("http.followRedirects", "false"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        if let Some(c) = &self.credential {
            cfg.push((format!("credential.{}.helper", c.forge.url()), helper(&c.forge.authority, c.token.user)));
        }
        cfg
    }

    /// The variable the process gets for the helper: the token, when granted.
    pub fn git_env(&self) -> Option<(&'static str, &str)> {
        self.credential.as_ref().map(|c| (TOKEN_VAR, c.token.secret()))
    }

    /// Why a push or fetch without the token (from `token_env`) may have failed, for its error
    /// message.
    pub fn explain(&self, token_env: &str) -> Option<String> {
        let (why, forge) = self.withheld.as_ref()?;
        // A local repository needs no token: nothing to explain.
        if ["/", "./", "../", "file://"].iter().any(|p| self.url.starts_with(p)) {
            return None;
        }
        let to = forge.as_ref().map_or("no server".to_string(), Forge::url);
        Some(format!(
            "the token in `{token_env}` was not offered to `{}`: {why}. It goes only to the forge over HTTPS ({to}): point the remote there (its url or pushurl, as any `insteadOf` rule rewrites it), or give git its own credentials for that server",
            without_userinfo(&self.url)
        ))
    }
}

/// The variable the one-shot helper reads the token from.
const TOKEN_VAR: &str = "HONE_GIT_TOKEN";

/// The one-shot credential helper for `authority` (letters, digits, `.`, `-`, `:` only): it
/// answers `get` for `protocol=https` and exactly that host, with `user` (one of hone's fixed
/// names) and the token from its environment, and says nothing otherwise.
fn helper(authority: &str, user: &str) -> String {
    debug_assert!(authority.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b)));
    debug_assert!(user.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    format!(
        "!f() {{ test \"$1\" = get || return 0; p=; h=; while IFS= read -r l; do case \"$l\" in \
         protocol=https) p=1 ;; \"host={authority}\") h=1 ;; esac; done; test \"$p$h\" = 11 || return 0; \
         echo username={user}; echo \"password=${TOKEN_VAR}\"; }}; f"
    )
}

/// An `https://` URL without its user and password (everything in the authority up to its last
/// `@`); any other URL as it is.
fn drop_userinfo(url: &str) -> String {
    let Some(rest) = url.strip_prefix("https://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("https://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// `text` with the user and password taken out of every `scheme://user:pass@host` in it.
pub fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, after) = rest.split_at(i + 3);
        out.push_str(head);
        let end = after.find(|c: char| c == '/' || c.is_whitespace() || "'\"`<>()[]{}|".contains(c));
        let authority = &after[..end.unwrap_or(after.len())];
        match authority.rfind('@') {
            Some(at) => rest = &after[at + 1..],
            None => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// The secrets a URL carries in its userinfo, as written and percent-decoded: the password of
/// `user:password@`, or the whole of `token@` over http(s), where a bare user is often a token.
pub fn url_secrets(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else { return vec![] };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some((userinfo, _)) = authority.rsplit_once('@') else { return vec![] };
    let secret = match userinfo.split_once(':') {
        Some((_, password)) => password,
        None if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http") => userinfo,
        None => return vec![],
    };
    let decoded = percent_encoding::percent_decode_str(secret).decode_utf8_lossy().into_owned();
    let mut out = vec![secret.to_string()];
    if decoded != secret {
        out.push(decoded);
    }
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
#[path = "credential_tests.rs"]
mod tests;
