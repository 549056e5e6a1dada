//! The one place hone builds its HTTP clients (the model's and its identity services', the forge
//! API's, MCP servers'): redirects never followed, a connect timeout, hone's User-Agent, the
//! environment's proxies (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, upper or lower
//! case, as curl and git read them) except for this machine's and link-local addresses, which
//! never go through a proxy, and the CA bundle `SSL_CERT_FILE` names added to the trust store.
//!
//! Why not reqwest's own reading of the environment: it sends `http://127.0.0.1` through
//! `HTTP_PROXY` too, and hone lets a credential travel over plain http only to this machine
//! (`model::http::https_or_loopback`); through a proxy it would cross the network in clear. And on
//! macOS reqwest's verifier (the system's) ignores `SSL_CERT_FILE`; on Linux it reads it too
//! (rustls-native-certs), as the only trust store, like OpenSSL.

use crate::error::{Code, HoneError};
use std::path::PathBuf;
use std::time::Duration;

/// How long a connection (TCP, a proxy's tunnel, TLS) may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
pub const USER_AGENT: &str = concat!("hone/", env!("CARGO_PKG_VERSION"));

/// Never sent to a proxy, whatever `NO_PROXY` says: this machine (a credential may go there over
/// plain http) and link-local addresses (cloud metadata services), which only this machine can
/// reach. In `NO_PROXY` syntax.
pub const DIRECT: &str = "localhost,127.0.0.0/8,::1,169.254.0.0/16,fe80::/10,metadata.google.internal";

/// The largest CA bundle hone reads (the system's whole bundle is about 200 KiB).
const MAX_BUNDLE: u64 = 16 * 1024 * 1024;

/// What the environment says about proxies and trust.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub https_proxy: Option<String>,
    pub http_proxy: Option<String>,
    pub all_proxy: Option<String>,
    /// `NO_PROXY`: hosts, domains (`.example.com` or `example.com`: it and its subdomains), IP
    /// addresses and networks (`10.0.0.0/8`), `*` for all; comma-separated.
    pub no_proxy: String,
    /// `SSL_CERT_FILE`: a PEM bundle whose certificates are trusted too.
    pub ca_file: Option<PathBuf>,
}

impl Settings {
    /// The settings in the variables `get` reads. The upper-case name wins over the lower-case one.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Settings {
        let first = |names: [&str; 2]| names.iter().find_map(|n| get(n).filter(|v| !v.trim().is_empty()));
        Settings {
            https_proxy: first(["HTTPS_PROXY", "https_proxy"]),
            http_proxy: first(["HTTP_PROXY", "http_proxy"]),
            all_proxy: first(["ALL_PROXY", "all_proxy"]),
            no_proxy: first(["NO_PROXY", "no_proxy"]).unwrap_or_default(),
            ca_file: get("SSL_CERT_FILE").filter(|v| !v.trim().is_empty()).map(PathBuf::from),
        }
    }

    /// hone's own environment, read once (the process's: what `RunEnv` holds too).
    pub fn process() -> &'static Settings {
        static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
        SETTINGS.get_or_init(|| Settings::from_vars(|k| std::env::var(k).ok()))
    }

    /// The proxies, each with the variable it came from, in the order reqwest tries them.
    fn proxies(&self) -> [(&'static str, Option<&String>); 3] {
        [
            ("HTTP_PROXY", self.http_proxy.as_ref()),
            ("HTTPS_PROXY", self.https_proxy.as_ref()),
            ("ALL_PROXY", self.all_proxy.as_ref()),
        ]
    }
}

/// A proxy variable's value as a URL: `host:port` means `http://host:port`, as in curl. Only
/// http and https proxies are spoken to. Errors name the variable, never the value (it may hold
/// a password).
pub fn proxy_url(var: &str, value: &str) -> Result<String, HoneError> {
    let value = value.trim();
    let url = if value.contains("://") { value.to_string() } else { format!("http://{value}") };
    let bad = |why: &str| {
        HoneError::new(Code::Spec, format!("`{var}` is not a proxy hone can use: {why}"))
            .hint("set it to http://HOST:PORT (or https://HOST:PORT for a proxy spoken to over TLS), with USER:PASSWORD@ before the host if the proxy asks for them")
    };
    let parsed = reqwest::Url::parse(&url).map_err(|_| bad("it is not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("hone speaks to HTTP proxies only (http:// or https://), not SOCKS"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    Ok(url)
}

/// A client builder for requests to `url` with the process's settings: add what the caller
/// needs (timeouts, headers) and build it.
pub fn builder(url: &str) -> Result<reqwest::ClientBuilder, HoneError> {
    builder_with(url, Settings::process())
}

/// `builder` with the settings `s`.
pub fn builder_with(url: &str, s: &Settings) -> Result<reqwest::ClientBuilder, HoneError> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(USER_AGENT)
        .no_proxy();
    let direct = format!("{DIRECT},{}", s.no_proxy);
    let mut tls_proxy = false;
    for (var, value) in s.proxies() {
        let Some(value) = value else { continue };
        let url = proxy_url(var, value)?;
        tls_proxy |= url.starts_with("https://");
        let proxy = match var {
            "HTTP_PROXY" => reqwest::Proxy::http(&url),
            "HTTPS_PROXY" => reqwest::Proxy::https(&url),
            _ => reqwest::Proxy::all(&url),
        };
        let proxy = proxy
            .map_err(|_| HoneError::new(Code::Spec, format!("`{var}` is not a proxy hone can use: it is not a URL")))?;
        b = b.proxy(proxy.no_proxy(reqwest::NoProxy::from_string(&direct)));
    }
    // A plain http endpoint reached without TLS anywhere needs no trust store: not loading the
    // system's saves ~10 ms, and a client that trusts nothing can make no unverified connection.
    if url.starts_with("http://") && !tls_proxy {
        return Ok(b.tls_certs_only(std::iter::empty()));
    }
    if let Some(path) = &s.ca_file {
        b = b.tls_certs_merge(bundle(path)?);
    }
    Ok(b)
}

/// The bytes of the PEM bundle at `path` (`SSL_CERT_FILE`), read bounded (a regular file or
/// not, at most `MAX_BUNDLE`).
pub fn read_bundle(path: &std::path::Path) -> Result<Vec<u8>, HoneError> {
    use std::io::Read;
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BUNDLE + 1).read_to_end(&mut pem))
        .map_err(|e| bad_bundle(path, format!("cannot be read: {e}")))?;
    if pem.len() as u64 > MAX_BUNDLE {
        return Err(bad_bundle(path, format!("is larger than {} MiB", MAX_BUNDLE >> 20)));
    }
    Ok(pem)
}

fn bad_bundle(path: &std::path::Path, why: String) -> HoneError {
    HoneError::new(Code::Spec, format!("SSL_CERT_FILE `{}` {why}", path.display())).hint(
        "point SSL_CERT_FILE at a PEM file of CA certificates (the system's bundle with your CA added), or unset it",
    )
}

/// The certificates of the PEM bundle at `path` (`SSL_CERT_FILE`).
fn bundle(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, HoneError> {
    let pem = read_bundle(path)?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| bad_bundle(path, format!("is not a PEM bundle: {e}")))?;
    if certs.is_empty() {
        return Err(bad_bundle(path, "holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// When `e` failed because the server's certificate was refused: why, in rustls's words.
pub fn untrusted_certificate(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        // An `io::Error` hides the error it carries from `source()`: look inside it too.
        let inner =
            err.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).map(|i| i as &dyn std::error::Error);
        for candidate in [Some(err), inner].into_iter().flatten() {
            if let Some(tls @ rustls::Error::InvalidCertificate(_)) = candidate.downcast_ref::<rustls::Error>() {
                return Some(tls.to_string());
            }
        }
        cur = err.source();
    }
    None
}

/// The message for a refused certificate: what to do about it.
pub fn untrusted_message(at: &str, why: &str) -> String {
    format!(
        "the TLS certificate of {at} is not trusted ({why}): if a proxy that inspects TLS or a private CA signed it, point SSL_CERT_FILE at a PEM bundle that holds that CA (docs/network.md)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Settings {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn settings_come_from_either_case_upper_first() {
        let s = vars(&[("https_proxy", "http://low:1"), ("HTTPS_PROXY", "http://up:1"), ("http_proxy", "p:3")]);
        assert_eq!(s.https_proxy.as_deref(), Some("http://up:1"));
        assert_eq!(s.http_proxy.as_deref(), Some("p:3"));
        let s = vars(&[("no_proxy", ".corp"), ("ALL_PROXY", "http://a:1"), ("SSL_CERT_FILE", "/ca.pem")]);
        assert_eq!((s.no_proxy.as_str(), s.all_proxy.as_deref()), (".corp", Some("http://a:1")));
        assert_eq!(s.ca_file, Some(PathBuf::from("/ca.pem")));
        assert_eq!(vars(&[("HTTPS_PROXY", " ")]), Settings::default(), "a blank value is no value");
    }

    #[test]
    fn proxy_values_are_http_urls_and_errors_never_show_them() {
        assert_eq!(proxy_url("HTTPS_PROXY", "proxy.corp:3128").unwrap(), "http://proxy.corp:3128");
        assert_eq!(proxy_url("HTTPS_PROXY", "https://u:p@proxy:443").unwrap(), "https://u:p@proxy:443");
        for bad in ["socks5://u:secretpw@proxy:1080", "http://", "http://u:secretpw@[::1"] {
            let e = proxy_url("ALL_PROXY", bad).unwrap_err();
            assert!(e.message.contains("`ALL_PROXY`"), "{}", e.message);
            assert!(!e.message.contains("secretpw") && !e.message.contains("proxy:1080"), "{}", e.message);
        }
        let e = builder_with("https://x", &vars(&[("HTTPS_PROXY", "socks5h://h:1")])).err().unwrap();
        assert!(e.message.contains("not SOCKS"), "{}", e.message);
    }

    #[test]
    fn a_bad_ca_bundle_is_named_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for (path, why) in [(empty, "holds no PEM certificate"), (dir.path().join("missing.pem"), "cannot be read")] {
            let s = Settings { ca_file: Some(path), ..Settings::default() };
            let e = builder_with("https://api.example", &s).expect_err("refused");
            assert!(e.message.contains("SSL_CERT_FILE") && e.message.contains(why), "{}", e.message);
        }
    }
}
