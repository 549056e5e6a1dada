//! The transport settings hone's git processes get from the user: they read no config but
//! hone's (`GIT_CONFIG_GLOBAL=/dev/null`, no system file), so a proxy or a CA bundle set in the
//! user's global or system git config (`http.proxy`, `http.sslCAInfo`, and their `http.<url>.`
//! forms) is carried over from there, by a fixed list, and never from a repository's config,
//! which its author writes. `SSL_CERT_FILE` becomes git's CA bundle too (git's TLS library may
//! not read it), below git's own settings; and this machine's addresses are added to
//! `NO_PROXY`, as hone's own HTTP clients never send them to a proxy (`crate::net::DIRECT`).

use super::user_config::Entry;
use crate::env::RunEnv;

/// Variables a git process may see: what transports need (proxies, CA bundles, an SSH agent).
const ENV_PASS: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "SSH_AUTH_SOCK",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The environment of a git process hone runs: the variables of `env` it may see, `NO_PROXY`
/// with this machine's addresses, and the carried settings as `GIT_CONFIG_*` variables.
pub fn process_env(env: &RunEnv) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> =
        ENV_PASS.iter().filter_map(|k| env.var(k).map(|v| (k.to_string(), v.to_string()))).collect();
    let no_proxy = no_proxy(env.var("NO_PROXY").or(env.var("no_proxy")));
    out.extend(["NO_PROXY", "no_proxy"].map(|k| (k.to_string(), no_proxy.clone())));
    let user = super::user_config::read(env);
    out.extend(as_env(&carried(env.var("SSL_CERT_FILE"), &user)));
    out
}

/// The `http.*` keys carried over (lower case, as libgit2 names them): proxies and TLS trust.
/// Not `sslVerify`: hone never sends a token over TLS it does not verify. Not the
/// password-protected forms: git could not ask for the password.
const KEYS: &[&str] = &[
    "proxy",
    "proxyauthmethod",
    "proxysslcainfo",
    "proxysslcert",
    "proxysslkey",
    "sslcainfo",
    "sslcapath",
    "sslcert",
    "sslkey",
    "sslbackend",
];

/// Whether the setting `name` (`http.KEY` or `http.URL.KEY`) is one hone carries over.
pub fn is_carried(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("http.") else { return false };
    let key = rest.rsplit_once('.').map_or(rest, |(_, k)| k);
    KEYS.contains(&key) && !rest.contains('\n')
}

/// The settings hone's git processes get, in order (a later one wins): git's CA bundle from
/// `SSL_CERT_FILE`, then the user's carried settings as git read them.
pub fn carried(ssl_cert_file: Option<&str>, user: &[Entry]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> =
        ssl_cert_file.map(|f| ("http.sslCAInfo".to_string(), f.to_string())).into_iter().collect();
    out.extend(user.iter().filter(|e| is_carried(&e.name)).map(|e| (e.name.clone(), e.value.clone())));
    out
}

/// The addresses git never sends to a proxy: this machine's (curl's `NO_PROXY` syntax).
const LOOPBACK: &str = "localhost,127.0.0.1,::1";

/// `NO_PROXY` for git: the user's, and this machine's addresses.
pub fn no_proxy(user: Option<&str>) -> String {
    match user.map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => format!("{u},{LOOPBACK}"),
        None => LOOPBACK.to_string(),
    }
}

/// `settings` as the variables that hand config to git without a command line (where other
/// users could read a proxy's password): `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
/// `GIT_CONFIG_VALUE_<n>`.
pub fn as_env(settings: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = vec![("GIT_CONFIG_COUNT".to_string(), settings.len().to_string())];
    for (i, (k, v)) in settings.iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{i}"), k.clone()));
        out.push((format!("GIT_CONFIG_VALUE_{i}"), v.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, value: &str) -> Entry {
        Entry { name: name.into(), value: value.into() }
    }

    #[test]
    fn only_the_listed_transport_settings_are_carried() {
        for yes in [
            "http.proxy",
            "http.sslcainfo",
            "http.sslcapath",
            "http.sslcert",
            "http.sslkey",
            "http.proxyauthmethod",
            "http.proxysslcainfo",
            "http.https://git.corp.example/.proxy",
            "http.https://git.corp.example/.sslcainfo",
            "http.https://*.corp.example.sslcainfo",
        ] {
            assert!(is_carried(yes), "{yes}");
        }
        for no in [
            "http.sslverify",
            "http.https://git.corp.example/.sslverify",
            "http.followredirects",
            "http.extraheader",
            "http.https://github.com/.extraheader",
            "http.sslcertpasswordprotected",
            "https.proxy",
            "core.sshcommand",
            "credential.helper",
            "url.https://evil/.insteadof",
            "remote.origin.proxy",
            "safe.directory",
        ] {
            assert!(!is_carried(no), "{no}");
        }
    }

    #[test]
    fn the_users_settings_come_after_ssl_cert_file_and_win() {
        let user =
            [e("http.sslcainfo", "/corp/ca.pem"), e("http.sslverify", "false"), e("http.proxy", "http://p:3128")];
        let got = carried(Some("/etc/ssl/bundle.pem"), &user);
        let want = [
            ("http.sslCAInfo", "/etc/ssl/bundle.pem"),
            ("http.sslcainfo", "/corp/ca.pem"),
            ("http.proxy", "http://p:3128"),
        ];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert!(carried(None, &[]).is_empty());
    }

    #[test]
    fn git_never_proxies_this_machine_and_gets_config_through_its_environment() {
        assert_eq!(no_proxy(None), "localhost,127.0.0.1,::1");
        assert_eq!(no_proxy(Some(" .corp ")), ".corp,localhost,127.0.0.1,::1");
        let env = as_env(&[("http.proxy".into(), "http://u:pw@p:1".into())]);
        let want =
            [("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "http.proxy"), ("GIT_CONFIG_VALUE_0", "http://u:pw@p:1")];
        assert_eq!(env, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }
}
