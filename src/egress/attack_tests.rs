//! Attacks on the proxy by a hostile client (a command, a setup script, an MCP server): ways
//! past the list, around the record, or into hone's memory; each must fail.

use super::*;
use crate::policy::network::Rule;
use crate::policy::network::{Target, address_allowed};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn rules(texts: &[&str]) -> Vec<Rule> {
    texts.iter().enumerate().map(|(i, t)| Rule::parse(&format!("network.allow[{i}]"), t).unwrap()).collect()
}

fn proxy(allow: &[&str]) -> Proxy {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = Proxy::start(l, "commands", &rules(allow), Ledger::new(None)).unwrap();
    // A command that runs for the whole test: the proxy serves its connections.
    std::mem::forget(p.command());
    p
}

/// A server on 127.0.0.1 that keeps everything each connection sends (one entry a connection,
/// grown as bytes arrive) and answers nothing until the client closes.
struct Sink {
    port: u16,
    got: Arc<Mutex<Vec<Vec<u8>>>>,
}

async fn sink() -> Sink {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let got: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let g = got.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let g = g.clone();
            let i = {
                let mut v = g.lock().unwrap();
                v.push(Vec::new());
                v.len() - 1
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    g.lock().unwrap()[i].extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    Sink { port, got }
}

impl Sink {
    fn connections(&self) -> usize {
        self.got.lock().unwrap().len()
    }
    /// Wait until the server has received `n` bytes in all.
    async fn until_received(&self, n: usize) {
        while self.got.lock().unwrap().iter().map(Vec::len).sum::<usize>() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Send `head` and return the status line the proxy answers (empty if it closes first).
async fn status(p: &Proxy, head: &str) -> (String, TcpStream) {
    let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    c.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n") {
        match c.read(&mut byte).await {
            Ok(1) => got.push(byte[0]),
            _ => break,
        }
    }
    (String::from_utf8_lossy(&got).trim_end().to_string(), c)
}

#[tokio::test]
async fn a_listed_address_limited_to_a_port_is_not_reached_by_name_on_another() {
    let s = sink().await;
    // `127.0.0.1:1` lists the address for port 1 only; `localhost` resolves to it.
    let p = proxy(&["localhost", "127.0.0.1:1"]);
    let (line, _c) = status(&p, &format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", s.port)).await;
    // The first loopback address the system gives for the name (`::1` first where /etc/hosts
    // lists it, as a container's does) is the one the refusal names.
    let first = tokio::net::lookup_host(("localhost", s.port)).await.unwrap().next().unwrap().ip();
    assert!(line.starts_with(&format!("HTTP/1.1 403 localhost resolves to {first} (loopback)")), "{line}");
    assert_eq!(s.connections(), 0, "the server was reached on a port the list does not give");
    // Listed for that port (or for any), the same name reaches it.
    let p = proxy(&["localhost", &format!("127.0.0.1:{}", s.port)]);
    let (line, _c) = status(&p, &format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", s.port)).await;
    assert_eq!(line, "HTTP/1.1 200 Connection established");
}

#[tokio::test]
async fn addresses_spelled_as_names_are_refused() {
    let s = sink().await;
    // Rules that would name the spellings if they were names are refused too.
    for rule in ["*.1", "*.0.0.1", "*.0x1", "127.1", "0x7f.1:80"] {
        let e = Rule::parse("k", rule).unwrap_err().to_string();
        assert!(e.contains("IPv4 address in a spelling hone does not take"), "{rule}: {e}");
    }
    let p = proxy(&["pypi.org"]);
    for host in ["127.1", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1", "127.0.0x1", "2130706433"] {
        let (line, _c) = status(&p, &format!("CONNECT {host}:{} HTTP/1.1\r\n\r\n", s.port)).await;
        assert!(line.starts_with("HTTP/1.1 400 "), "{host}: {line}");
    }
    for host in ["2130706433", "0x7f000001", "017700000001", "127.1", "0x7f.1", "1.2.3.04"] {
        assert!(Target::parse(host).is_err(), "{host} is taken as a name");
        assert!(Rule::parse("k", host).is_err(), "{host} is taken as a name in a rule");
    }
    // Names with digits stay names.
    assert!(Target::parse("1password.com").is_ok() && Target::parse("a.b-1.io").is_ok());
    assert_eq!(s.connections(), 0);
}

#[tokio::test]
async fn the_bytes_of_a_plain_request_head_are_counted() {
    let s = sink().await;
    let p = proxy(&[&format!("127.0.0.1:{}", s.port)]);
    // 12 KB smuggled out in a header, then the request's end.
    let head = format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\nX-Data: {}\r\n\r\n", s.port, "a".repeat(12_000));
    let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    c.write_all(head.as_bytes()).await.unwrap();
    s.until_received(12_000).await;
    drop(c);
    let forwarded = s.got.lock().unwrap()[0].len() as u64;
    let ledger = p.ledger().clone();
    p.stop().await;
    let rows = ledger.tally();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].bytes_sent, forwarded, "bytes sent to the server: {forwarded}; {rows:?}");
}

#[tokio::test]
async fn a_connection_still_open_is_in_the_record_and_one_cut_by_the_proxy_s_end_too() {
    let s = sink().await;
    let p = proxy(&[&format!("127.0.0.1:{}", s.port)]);
    let (line, mut c) = status(&p, &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", s.port)).await;
    assert_eq!(line, "HTTP/1.1 200 Connection established");
    c.write_all(b"\r\nsecret").await.unwrap();
    s.until_received(8).await;
    let ledger = p.ledger().clone();
    // While it is open (a report written now shows it).
    let rows = ledger.tally();
    assert_eq!(rows.len(), 1, "an open connection is missing from the record: {rows:?}");
    assert!(rows[0].allowed && rows[0].connections == 1, "{rows:?}");
    // Dropped with its jail: the connection ends, and stays in the record with what it moved.
    drop(p);
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest).await;
    let rows = ledger.tally();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].connections, rows[0].bytes_sent), (1, 8), "{rows:?}");
    assert!(rows[0].reason.as_deref().is_some_and(|r| r.contains("proxy stopped")), "{rows:?}");
}

#[tokio::test]
async fn a_pipelined_second_request_goes_to_the_first_request_s_server_only() {
    let allowed = sink().await;
    let other = sink().await;
    let p = proxy(&[&format!("127.0.0.1:{}", allowed.port)]);
    let two = format!(
        "GET http://127.0.0.1:{a}/ HTTP/1.1\r\n\r\nGET http://127.0.0.1:{o}/ HTTP/1.1\r\nHost: 127.0.0.1:{o}\r\n\r\n",
        a = allowed.port,
        o = other.port
    );
    let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    c.write_all(two.as_bytes()).await.unwrap();
    allowed.until_received(60).await;
    drop(c);
    assert_eq!(other.connections(), 0, "a second request on the connection reached another server");
    assert_eq!(allowed.connections(), 1);
}

#[test]
fn addresses_that_carry_or_route_to_internal_ones_are_special() {
    let none = rules(&["pypi.org"]);
    for ip in [
        "64:ff9b:1::a9fe:a9fe", // local-use NAT64 (RFC 8215) of the metadata address
        "64:ff9b::a9fe:a9fe",
        "::ffff:0:a9fe:a9fe", // IPv4-translated (SIIT)
        "fec0::1",            // site-local
        "2002:7f00:1::1",
        "::7f00:1",
        "::ffff:a9fe:a9fe",
    ] {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        assert!(address_allowed(&none, ip, 443).is_err(), "{ip} may be reached by name");
    }
}

/// What a target may print as (in events, the report, summary.md, messages to the model).
fn printable(t: &Target) -> bool {
    t.to_string().bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b))
}

proptest::proptest! {
    #[test]
    fn any_request_head_is_parsed_without_panic_and_forwarded_as_one_head(
        head in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
        line in "(GET|CONNECT|connect|POST) [ -~]{0,40} HTTP/1\\.[01]\r\n(Host: [ -~]{0,30}\r\n)?\r\n",
    ) {
        for bytes in [&head[..], line.as_bytes()] {
            if let Ok(r) = http::parse(bytes) {
                proptest::prop_assert!(printable(&r.target), "{}", r.target);
                if !r.tunnel {
                    // Exactly one head: a server reads no second request from it.
                    proptest::prop_assert_eq!(http::head_end(&r.forward), Some(r.forward.len()));
                }
            }
        }
    }

    #[test]
    fn any_host_or_rule_text_is_parsed_without_panic(text in "[ -~\u{80}-\u{10ffff}]{0,60}") {
        if let Ok(t) = Target::parse(&text) {
            proptest::prop_assert!(printable(&t), "{}", t);
        }
        let _ = Rule::parse("k", &text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_recorded_before_the_client_hears_it() {
    let p = proxy(&["pypi.org"]);
    for i in 0..200 {
        let (line, _c) = status(&p, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n").await;
        assert!(line.starts_with("HTTP/1.1 403 "), "{line}");
        // What a command's result says right after the command read its answer.
        assert_eq!(p.ledger().refused_since(0, "commands").1, i + 1, "the model would not be told");
    }
}

#[tokio::test(start_paused = true)]
async fn slow_heads_hold_a_slot_for_the_head_timeout_only() {
    let p = proxy(&["pypi.org"]);
    let mut slow = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        c.write_all(b"CONNECT pypi.org:443 HTTP/1.1\r\nX: ").await.unwrap();
        slow.push(c);
    }
    // Every slot is held by a head that never ends; the next client waits, then is served once
    // the head timeout closes them (the clock is Tokio's, advanced while all wait).
    let (line, _c) = status(&p, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n").await;
    assert!(line.starts_with("HTTP/1.1 403 "), "{line}");
    for mut c in slow {
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).await.unwrap(), 0, "a slow head was answered");
    }
}
