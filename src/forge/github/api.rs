//! Which GitHub REST API a GitHub token goes to: `GITHUB_API_URL`, else the API of the server
//! `GITHUB_SERVER_URL` names (github.com's `api.github.com`, GHE.com's `api.SUB.ghe.com`, a
//! GitHub Enterprise Server's `/api/v3`), else github.com's when neither is set. A token issued
//! by one server never goes to the public API by default: a pair that would send it there is
//! refused with the variable to set. Pure: decided from the two variables alone.

use crate::env::RunEnv;
use crate::error::{Code, HoneError};

/// github.com's REST API, for a token github.com issued (neither variable set).
pub const PUBLIC_API: &str = "https://api.github.com";

/// Why no GitHub API may be used with this environment's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUnknown {
    pub why: String,
    pub hint: String,
}

impl ApiUnknown {
    pub fn error(&self) -> HoneError {
        HoneError::new(Code::Forge, self.why.clone()).hint(self.hint.clone())
    }
}

/// The API for `env`'s GitHub: `GITHUB_API_URL` and `GITHUB_SERVER_URL` as the process has them.
pub fn of(env: &RunEnv) -> Result<String, ApiUnknown> {
    decide(env.var("GITHUB_API_URL"), env.var("GITHUB_SERVER_URL"))
}

/// The lower-case host of an `http(s)://host[:port]/…` URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url.trim().split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(h, p)| if p.bytes().all(|b| b.is_ascii_digit()) { h } else { authority });
    // A name with DNS's trailing dot is the same host.
    let host = host.trim_end_matches('.');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The public GitHub's hosts: its server, its API and every other name under github.com.
fn is_public(host: &str) -> bool {
    host == "github.com" || host.ends_with(".github.com")
}

/// The API for an explicit `api` and a `server`; pure, for tests.
pub fn decide(api: Option<&str>, server: Option<&str>) -> Result<String, ApiUnknown> {
    let api = api.map(|a| a.trim().trim_end_matches('/').to_string());
    let server = server.map(|s| s.trim().trim_end_matches('/').to_string());
    let server_host = server.as_deref().and_then(host_of);
    let Some(api) = api else {
        return match (&server, &server_host) {
            (None, _) => Ok(PUBLIC_API.into()),
            (Some(_), Some(h)) if h == "github.com" => Ok(PUBLIC_API.into()),
            (Some(_), Some(h)) if h.ends_with(".ghe.com") => Ok(format!("https://api.{h}")),
            (Some(s), Some(_)) => Ok(format!("{s}/api/v3")),
            (Some(s), None) => Err(ApiUnknown {
                why: format!("GITHUB_SERVER_URL `{s}` is not a server's URL, so GitHub's API for its token is unknown"),
                hint: "set GITHUB_SERVER_URL to https://HOST, or GITHUB_API_URL to the API (https://HOST/api/v3)"
                    .into(),
            }),
        };
    };
    let api_host = host_of(&api);
    match (&server_host, &api_host) {
        (Some(s), Some(a)) if !is_public(s) && is_public(a) => Err(ApiUnknown {
            why: format!(
                "GITHUB_API_URL is github.com's API but GITHUB_SERVER_URL names `{s}`: that server's token would go to api.github.com"
            ),
            hint: format!("set GITHUB_API_URL to the server's API (https://{s}/api/v3 on GitHub Enterprise Server)"),
        }),
        _ => Ok(api),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_is_the_servers_own_never_github_com_for_another_server() {
        assert_eq!(decide(None, None).unwrap(), PUBLIC_API);
        assert_eq!(decide(None, Some("https://github.com")).unwrap(), PUBLIC_API);
        assert_eq!(decide(None, Some("https://ghe.corp.example/")).unwrap(), "https://ghe.corp.example/api/v3");
        assert_eq!(
            decide(None, Some("https://ghe.corp.example:8443")).unwrap(),
            "https://ghe.corp.example:8443/api/v3"
        );
        assert_eq!(decide(None, Some("https://acme.ghe.com")).unwrap(), "https://api.acme.ghe.com");
        assert_eq!(decide(Some("https://x.test/api/v3/"), Some("https://y.test")).unwrap(), "https://x.test/api/v3");
        assert_eq!(decide(Some("http://127.0.0.1:9/"), Some("https://github.com")).unwrap(), "http://127.0.0.1:9");
        let e = decide(Some("https://api.github.com"), Some("https://ghe.corp.example")).unwrap_err();
        assert!(e.why.contains("ghe.corp.example") && e.hint.contains("GITHUB_API_URL"), "{e:?}");
        let e = decide(None, Some("ghe.corp.example")).unwrap_err();
        assert!(e.hint.contains("GITHUB_SERVER_URL"), "{e:?}");
    }

    #[test]
    fn github_coms_api_in_another_spelling_is_still_github_coms() {
        for api in ["https://api.github.com./", "https://API.GitHub.com.:443", "https://uploads.github.com"] {
            let e = decide(Some(api), Some("https://ghe.corp.example"));
            assert!(e.is_err(), "{api}: {e:?}");
        }
        assert_eq!(decide(None, Some("https://github.com.")).unwrap(), PUBLIC_API);
    }

    #[test]
    fn hosts_are_read_without_user_port_or_path() {
        assert_eq!(host_of("https://u:p@GHE.example:8443/x").as_deref(), Some("ghe.example"));
        assert_eq!(host_of("https://github.com").as_deref(), Some("github.com"));
        assert_eq!(host_of("github.com"), None);
    }
}
