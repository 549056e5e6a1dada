//! The proxy served on a host socket (the jail's listener is tested by the integration tests):
//! what it allows, refuses and records, and that it is gone once stopped.

use super::*;
use crate::policy::network::Rule;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn rules(texts: &[String]) -> Vec<Rule> {
    texts.iter().enumerate().map(|(i, t)| Rule::parse(&format!("network.allow[{i}]"), t).unwrap()).collect()
}

/// A server that answers each connection with what it read first, after `seen: `.
async fn server() -> (u16, tokio::task::JoinHandle<()>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let _ = s.write_all(format!("seen: {}", String::from_utf8_lossy(&buf[..n])).as_bytes()).await;
            });
        }
    });
    (port, task)
}

fn proxy(allow: &[String]) -> Proxy {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = Proxy::start(l, "commands", &rules(allow), Ledger::new(None)).unwrap();
    // A command that runs for the whole test: the proxy serves its connections.
    std::mem::forget(p.command());
    p
}

/// Send `head`, then (once a tunnel is open) `then`; return everything the proxy sends back
/// until it closes.
async fn ask(p: &Proxy, head: &str, then: &[u8]) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    c.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while http::head_end(&got).is_none() {
        let n = c.read(&mut chunk).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&chunk[..n]);
    }
    if got.starts_with(b"HTTP/1.1 200 ") {
        c.write_all(then).await.unwrap();
    }
    c.read_to_end(&mut got).await.unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn a_listed_address_is_reached_through_a_tunnel_and_recorded() {
    let (port, _s) = server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")]);
    let got = ask(&p, &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"), b"ping").await;
    assert_eq!(got, "HTTP/1.1 200 Connection established\r\n\r\nseen: ping");
    let ledger = p.ledger().clone();
    p.stop().await;
    let rows = ledger.tally();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert!(r.allowed && r.rule.as_deref() == Some(&format!("network.allow[0] `127.0.0.1:{port}`")[..]), "{r:?}");
    assert_eq!((r.bytes_sent, r.bytes_received), (4, 10));
}

#[tokio::test]
async fn plain_http_is_forwarded_one_request_at_a_time() {
    let (port, _s) = server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")]);
    let got = ask(&p, &format!("GET http://127.0.0.1:{port}/simple/?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Authorization: x\r\n\r\n"), b"").await;
    assert!(
        got.starts_with(&format!("seen: GET /simple/?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close")),
        "{got}"
    );
    assert!(!got.contains("Proxy-Authorization"), "{got}");
}

#[tokio::test]
async fn hosts_no_rule_names_are_refused_with_the_rule_that_would_allow_them() {
    let (port, _s) = server().await;
    let p = proxy(&["pypi.org".to_string()]);
    let got = ask(&p, &format!("CONNECT evil.example:{port} HTTP/1.1\r\n\r\n"), b"").await;
    assert!(
        got.starts_with(&format!("HTTP/1.1 403 evil.example:{port} is not in the policy's network.allow")),
        "{got}"
    );
    assert!(got.contains("add `evil.example` (or `evil.example:"), "{got}");
    // An address is never matched by a name's rule, whatever it is.
    for target in [format!("127.0.0.1:{port}"), "169.254.169.254:80".into(), "[::1]:80".into()] {
        let got = ask(&p, &format!("CONNECT {target} HTTP/1.1\r\n\r\n"), b"").await;
        assert!(got.starts_with("HTTP/1.1 403 ") && got.contains("addresses are reached only when listed"), "{got}");
    }
    let got = ask(&p, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n", b"").await;
    assert!(got.starts_with("HTTP/1.1 403 169.254.169.254:80 is not in"), "{got}");
    let ledger = p.ledger().clone();
    p.stop().await;
    let rows = ledger.tally();
    // The metadata address, asked for twice, is one row of two connections.
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.connections).sum::<u64>(), 5);
    assert!(rows.iter().all(|r| !r.allowed && r.rule.is_none() && r.bytes_sent == 0), "{rows:?}");
    assert_eq!(ledger.refused_since(0, "commands").1, 5);
}

#[tokio::test]
async fn a_listed_name_that_resolves_to_loopback_is_refused() {
    let (port, _s) = server().await;
    let p = proxy(&["localhost".to_string()]);
    let got = ask(&p, &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"), b"ping").await;
    assert!(got.starts_with("HTTP/1.1 403 localhost resolves to ") && got.contains("(loopback)"), "{got}");
    assert!(!got.contains("seen:"), "{got}");
}

#[tokio::test]
async fn bad_requests_are_answered_and_not_forwarded() {
    let p = proxy(&["pypi.org".to_string()]);
    let got = ask(&p, "GET https://pypi.org/ HTTP/1.1\r\n\r\n", b"").await;
    assert!(got.starts_with("HTTP/1.1 400 ") && got.contains("use CONNECT"), "{got}");
    let long = format!("GET http://pypi.org/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let got = ask(&p, &long, b"").await;
    assert!(got.starts_with("HTTP/1.1 431 "), "{got}");
    let ledger = p.ledger().clone();
    p.stop().await;
    assert!(ledger.tally().is_empty());
}

#[tokio::test]
async fn a_stopped_proxy_accepts_nothing() {
    let p = proxy(&["pypi.org".to_string()]);
    let port = p.port();
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_ok());
    p.stop().await;
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
}
