//! A command's network ends with the command: a commands' proxy cuts what a command opened when
//! it ends, in every state (its head being read, its host being connected to, a tunnel, a
//! plain-HTTP request), records it so before `end` returns, closes what it left queued, and
//! serves nothing while no command runs; a service's proxy is not bound to commands.

use super::serve::ENDED;
use super::*;
use crate::policy::network::Rule;
use std::sync::Mutex;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn proxy(purpose: &str, allow: &[String]) -> Proxy {
    let rules: Vec<Rule> =
        allow.iter().enumerate().map(|(i, t)| Rule::parse(&format!("network.allow[{i}]"), t).unwrap()).collect();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    Proxy::start(l, purpose, &rules, Ledger::new(None)).unwrap()
}

/// A host that accepts every connection, echoes what it reads, and never closes one; counts
/// its connections.
async fn echo() -> (u16, Arc<Mutex<usize>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let count: Arc<Mutex<usize>> = Arc::default();
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            *c.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                std::future::pending::<()>().await;
            });
        }
    });
    (port, count)
}

/// A host whose queue is full (one connection it never accepts, `_first`): a connection to it
/// stays at its first step (SYN sent) until the queue has room.
struct Full {
    listener: TcpListener,
    _first: TcpStream,
    port: u16,
}

async fn full() -> Full {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let port = listener.local_addr().unwrap().port();
    let first = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    Full { listener, _first: first, port }
}

/// Whether a socket on this machine is connecting (SYN sent) to 127.0.0.1:`port`.
fn connecting_to(port: u16) -> bool {
    let want = format!("{:08X}:{port:04X}", u32::from_ne_bytes([127, 0, 0, 1]));
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[2] == want && f[3] == "02"
    })
}

/// Wait until `done` (a test that goes wrong fails here rather than hanging).
async fn until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn ask(p: &Proxy, head: &str) -> TcpStream {
    let mut c = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    c.write_all(head.as_bytes()).await.unwrap();
    c
}

/// Read what the proxy sends until it closes (a reset counts as closed).
async fn until_closed(c: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), c.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the proxy kept the connection open: {}", String::from_utf8_lossy(&got));
    got
}

async fn tunnel(p: &Proxy, port: u16) -> TcpStream {
    let mut c = ask(p, &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n")).await;
    let mut got = vec![0u8; http::TUNNEL_OPEN.len()];
    c.read_exact(&mut got).await.unwrap();
    assert_eq!(got, http::TUNNEL_OPEN);
    c
}

fn row(p: &Proxy, port: u16) -> HostTally {
    let rows = p.ledger().tally();
    rows.iter().find(|r| r.port == port).cloned().unwrap_or_else(|| panic!("no row for {port}: {rows:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_command_opened_is_cut_when_it_ends_in_every_state() {
    let (silent, reached) = echo().await;
    let stalled = full().await;
    let p = proxy("commands", &[format!("127.0.0.1:{silent}"), format!("127.0.0.1:{}", stalled.port)]);
    let command = p.command();
    let mut head = ask(&p, &format!("CONNECT 127.0.0.1:{silent} HTTP/1.1\r\n")).await;
    let mut connecting = ask(&p, &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", stalled.port)).await;
    until("the proxy connects to the stalled host", || connecting_to(stalled.port)).await;
    let mut idle = tunnel(&p, silent).await;
    let mut plain = ask(&p, &format!("GET http://127.0.0.1:{silent}/ HTTP/1.1\r\n\r\n")).await;
    until("both reach the silent host", || *reached.lock().unwrap() == 2).await;
    // The plain request went through: the host echoes the request it was sent.
    let mut echoed = vec![0u8; b"GET / HTTP/1.1\r\n".len()];
    plain.read_exact(&mut echoed).await.unwrap();
    assert_eq!(echoed, b"GET / HTTP/1.1\r\n");
    command.end().await;
    // Recorded by the time `end` returns.
    let (s, f) = (row(&p, silent), row(&p, stalled.port));
    assert_eq!((s.connections, s.allowed, s.reason.as_deref()), (2, true, Some(ENDED)), "{s:?}");
    assert_eq!((f.connections, f.allowed, f.reason.as_deref()), (1, true, Some(ENDED)), "{f:?}");
    assert_eq!(p.ledger().tally().len(), 2, "the unfinished head is no request");
    for c in [&mut head, &mut connecting, &mut idle] {
        assert_eq!(until_closed(c).await, b"", "the proxy answered");
    }
    // And then it is cut too (whatever of the echo was still under way).
    until_closed(&mut plain).await;
}

/// 64 tunnels (every slot) to a host that never answers and 3 more queued, then the command
/// ends: the queued ones are closed unread, and the next command has every slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cannot_hold_the_proxy_against_the_next() {
    let (silent, reached) = echo().await;
    let p = proxy("commands", &[format!("127.0.0.1:{silent}")]);
    let first = p.command();
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        held.push(tunnel(&p, silent).await);
    }
    let mut queued = Vec::new();
    for _ in 0..3 {
        queued.push(ask(&p, &format!("CONNECT 127.0.0.1:{silent} HTTP/1.1\r\n\r\n")).await);
    }
    first.end().await;
    let second = p.command();
    for c in held.iter_mut().chain(queued.iter_mut()) {
        assert_eq!(until_closed(c).await, b"");
    }
    let mut next = tunnel(&p, silent).await;
    next.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    next.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping");
    assert_eq!(*reached.lock().unwrap(), MAX_CONNECTIONS + 1, "a queued request was served");
    second.end().await;
    let r = row(&p, silent);
    assert_eq!((r.connections, r.reason.as_deref()), (MAX_CONNECTIONS as u64 + 1, Some(ENDED)), "{r:?}");
    assert_eq!(until_closed(&mut next).await, b"");
}

#[tokio::test]
async fn a_commands_proxy_serves_nothing_while_no_command_runs() {
    let (silent, reached) = echo().await;
    let p = proxy("commands", &[format!("127.0.0.1:{silent}")]);
    let mut c = ask(&p, &format!("CONNECT 127.0.0.1:{silent} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(until_closed(&mut c).await, b"");
    p.command().end().await;
    let mut c = ask(&p, &format!("CONNECT 127.0.0.1:{silent} HTTP/1.1\r\n\r\n")).await;
    assert_eq!(until_closed(&mut c).await, b"");
    assert_eq!(*reached.lock().unwrap(), 0);
    assert!(p.ledger().tally().is_empty());
}

/// A connection made while two commands run is theirs both: it lasts until the last ends.
#[tokio::test]
async fn a_connection_ends_with_the_last_command_it_may_be_of() {
    let (port, _) = echo().await;
    let p = proxy("commands", &[format!("127.0.0.1:{port}")]);
    let (a, b) = (p.command(), p.command());
    let mut t = tunnel(&p, port).await;
    a.end().await;
    t.write_all(b"still").await.unwrap();
    let mut back = [0u8; 5];
    t.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"still");
    b.end().await;
    assert_eq!(until_closed(&mut t).await, b"");
    assert_eq!(row(&p, port).reason.as_deref(), Some(ENDED));
}

/// An MCP server's proxy serves its one long-lived process, command or none.
#[tokio::test]
async fn a_services_connections_live_as_long_as_its_proxy() {
    let (port, _) = echo().await;
    let p = proxy("mcp:s", &[format!("127.0.0.1:{port}")]);
    let mut t = tunnel(&p, port).await;
    p.command().end().await;
    t.write_all(b"alive").await.unwrap();
    let mut back = [0u8; 5];
    t.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"alive");
    p.close();
    assert_eq!(until_closed(&mut t).await, b"");
}

/// While the proxy connects: a tunnel's client that closes has gone (its slot is freed, and
/// recorded so); a plain-HTTP client that only stops sending after its request is served; what
/// either sends meanwhile is sent on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_while_its_host_is_reached_is_noticed() {
    let stalled = full().await;
    let p = proxy("commands", &[format!("127.0.0.1:{}", stalled.port)]);
    let command = p.command();
    let gone = ask(&p, &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", stalled.port)).await;
    until("the proxy connects to the stalled host", || connecting_to(stalled.port)).await;
    drop(gone);
    until("the client's going is recorded", || !p.ledger().tally().is_empty()).await;
    let r = row(&p, stalled.port);
    assert_eq!(r.reason.as_deref(), Some("the client went away before its tunnel was open"), "{r:?}");
    let mut plain = ask(&p, &format!("POST http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", stalled.port)).await;
    until("the proxy connects to the stalled host", || connecting_to(stalled.port)).await;
    plain.write_all(b"body").await.unwrap();
    plain.shutdown().await.unwrap();
    // Room in the host's queue: the proxy's next try gets through.
    let (mut first, _) = stalled.listener.accept().await.unwrap();
    drop(first.shutdown().await);
    let (mut server, _) = stalled.listener.accept().await.unwrap();
    let mut got = Vec::new();
    server.read_to_end(&mut got).await.unwrap();
    let got = String::from_utf8_lossy(&got).into_owned();
    assert!(got.starts_with("POST / HTTP/1.1\r\n") && got.ends_with("\r\n\r\nbody"), "{got}");
    server.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.unwrap();
    drop(server);
    assert_eq!(until_closed(&mut plain).await, b"HTTP/1.1 204 No Content\r\n\r\n");
    command.end().await;
}
