//! What a client asks hone's proxy: the request head of `CONNECT host:port` (a tunnel, for TLS)
//! or of a plain HTTP request to `http://host/...` (forwarded with its head rewritten), and the
//! answers the proxy gives. Pure: bytes in, values out.

use crate::policy::network::Target;

/// The most a request head may take.
pub const MAX_HEAD: usize = 16 * 1024;

/// A request the proxy can act on.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub target: Target,
    pub port: u16,
    /// `CONNECT`: a tunnel. Otherwise plain HTTP, sent on as `forward`.
    pub tunnel: bool,
    /// For plain HTTP, the head to send the server: origin-form, the proxy's headers removed,
    /// `Host` the target's, and `Connection: close` (one request per connection, so that a
    /// second request on it cannot name another host).
    pub forward: Vec<u8>,
}

/// Why a request head cannot be acted on (answered 400, or 431 when too long).
#[derive(Debug, PartialEq, Eq)]
pub enum BadRequest {
    Incomplete,
    TooLong,
    Malformed(String),
}

/// The end of the head in `buf` (just past the blank line), if it is all there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parse the head `buf[..end]`.
pub fn parse(head: &[u8]) -> Result<Request, BadRequest> {
    if head.len() > MAX_HEAD {
        return Err(BadRequest::TooLong);
    }
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(BadRequest::Incomplete),
        Err(e) => return Err(BadRequest::Malformed(e.to_string())),
    }
    let bad = |m: &str| BadRequest::Malformed(m.to_string());
    let (method, path) = (req.method.ok_or_else(|| bad("no method"))?, req.path.ok_or_else(|| bad("no target"))?);
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(path, None)?;
        return Ok(Request { target: host, port, tunnel: true, forward: Vec::new() });
    }
    let (target, port, origin) = match path.strip_prefix("http://") {
        Some(rest) => {
            let (auth, origin) = rest.find(['/', '?']).map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
            let (t, p) = authority(auth, Some(80))?;
            (t, p, if origin.starts_with('?') { format!("/{origin}") } else { origin.to_string() })
        }
        None if path.starts_with('/') => {
            // Origin-form: the server is the one `Host` names.
            let host = req.headers.iter().find(|h| h.name.eq_ignore_ascii_case("host"));
            let host = host.and_then(|h| std::str::from_utf8(h.value).ok()).ok_or_else(|| bad("no Host header"))?;
            let (t, p) = authority(host.trim(), Some(80))?;
            (t, p, path.to_string())
        }
        None => return Err(bad("only `http://` URLs are forwarded; use CONNECT (HTTPS_PROXY) for TLS")),
    };
    let mut out = format!("{method} {origin} HTTP/1.1\r\n").into_bytes();
    let host = if port == 80 { target.to_string() } else { format!("{target}:{port}") };
    out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    const DROPPED: [&str; 6] = ["host", "connection", "proxy-connection", "proxy-authorization", "keep-alive", "te"];
    for h in req.headers.iter().filter(|h| !DROPPED.iter().any(|d| h.name.eq_ignore_ascii_case(d))) {
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request { target, port, tunnel: false, forward: out })
}

/// `host:port`, `[v6]:port`, or (with a default port) `host`.
fn authority(auth: &str, default: Option<u16>) -> Result<(Target, u16), BadRequest> {
    let bad = |m: String| BadRequest::Malformed(m);
    if auth.contains('@') {
        return Err(bad("a user name in the URL is not forwarded".into()));
    }
    let (host, port) = match auth.rfind(':').filter(|i| !auth[*i..].contains(']')) {
        Some(i) => (&auth[..i], Some(&auth[i + 1..])),
        None => (auth, None),
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("a bad port".into()))?,
        None => default.ok_or_else(|| bad("CONNECT needs `host:port`".into()))?,
    };
    Ok((Target::parse(host).map_err(|e| bad(e.to_string()))?, port))
}

/// The answer that opens a tunnel.
pub const TUNNEL_OPEN: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

/// An answer that ends the request: `status` with a one-line reason (shown by pip, git and
/// others as the proxy's error) and `body` (shown by curl and browsers).
pub fn answer(status: u16, reason: &str, body: &str) -> Vec<u8> {
    let reason: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Hone-Proxy: refused\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(text: &str) -> Result<Request, BadRequest> {
        parse(text.as_bytes())
    }

    #[test]
    fn connect_names_the_host_and_port_of_a_tunnel() {
        let r = req("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert_eq!((r.target, r.port, r.tunnel), (Target::Name("pypi.org".into()), 443, true));
        let r = req("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((r.target.to_string(), r.port), ("[2001:db8::1]".into(), 8443));
        assert!(matches!(req("CONNECT pypi.org HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
        assert!(matches!(req("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
        assert!(matches!(req("CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
    }

    #[test]
    fn plain_http_is_forwarded_in_origin_form_for_one_request() {
        let r = req("GET http://Files.Example.com:8080/simple/x/?a=1 HTTP/1.1\r\nHost: files.example.com:8080\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n").unwrap();
        assert_eq!((r.target.to_string(), r.port, r.tunnel), ("files.example.com".into(), 8080, false));
        let text = String::from_utf8(r.forward).unwrap();
        assert_eq!(
            text,
            "GET /simple/x/?a=1 HTTP/1.1\r\nHost: files.example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let r = req("GET http://example.com HTTP/1.1\r\n\r\n").unwrap();
        assert!(String::from_utf8(r.forward).unwrap().starts_with("GET / HTTP/1.1\r\nHost: example.com\r\n"));
    }

    #[test]
    fn the_host_header_decides_only_when_the_request_names_no_host() {
        // An absolute URL wins: the Host header it came with is replaced by the URL's host.
        let r = req("GET http://allowed.org/ HTTP/1.1\r\nHost: other.org\r\n\r\n").unwrap();
        assert_eq!(r.target, Target::Name("allowed.org".into()));
        assert!(!String::from_utf8(r.forward).unwrap().contains("other.org"));
        let r = req("GET /x HTTP/1.1\r\nHost: other.org:81\r\n\r\n").unwrap();
        assert_eq!((r.target, r.port), (Target::Name("other.org".into()), 81));
        assert!(matches!(req("GET /x HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
    }

    #[test]
    fn what_cannot_be_acted_on_is_refused() {
        assert!(
            matches!(req("GET https://example.com/ HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(m)) if m.contains("CONNECT"))
        );
        assert!(matches!(req("GET ftp://example.com/ HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
        assert!(matches!(req("GET http://exa mple.com/ HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
        assert!(matches!(req("GET http://evil.com%0d%0aX:1/ HTTP/1.1\r\n\r\n"), Err(BadRequest::Malformed(_))));
        assert_eq!(req("GET http://a.org/ HTTP/1.1\r\n"), Err(BadRequest::Incomplete));
        let long = format!("GET http://a.org/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(req(&long), Err(BadRequest::TooLong));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
    }

    #[test]
    fn answers_keep_to_one_line_of_reason() {
        let a = String::from_utf8(answer(403, "no\r\nX-Evil: 1", "why")).unwrap();
        assert!(a.starts_with("HTTP/1.1 403 no  X-Evil: 1\r\n"), "{a}");
        assert!(a.ends_with("\r\n\r\nwhy"));
    }
}
