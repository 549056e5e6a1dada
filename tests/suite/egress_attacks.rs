//! Attacks on network by name (issue 23) from inside the jail: ways around hone's proxy (other
//! addresses, IPv6 loopback, UDP, the host's abstract Unix sockets, an MCP server's proxy), and a
//! run cancelled mid-download, whose report must still show the download. Only listed
//! addresses are used, so no name needs the harness's resolver.

use super::jail_support::{cmd, fix, result_of, write};
use crate::common::mock_model::{MockModel, call};
use crate::common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A server that counts its connections and, on each, answers an HTTP head of a large body,
/// sends 64 KiB of it, and then holds the connection open without a byte more (a stalled
/// download).
async fn stalled() -> (u16, Arc<Mutex<usize>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count: Arc<Mutex<usize>> = Arc::default();
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            *c.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n").await;
                let _ = s.write_all(&[b'x'; 65536]).await;
                // Held open, silent, until the test ends.
                tokio::time::sleep(Duration::from_secs(600)).await;
            });
        }
    });
    (port, count)
}

/// Tries every way out of a jail whose one way out is the proxy; prints one line a try.
const PROBE: &str = r#"import os, socket, sys
sink = int(sys.argv[1])
own = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])
print('INTERFACES', sorted(n for _, n in socket.if_nameindex()))
def attempt(label, family, kind, addr, payload=None):
    s = socket.socket(family, kind)
    s.settimeout(3)
    try:
        if payload is None:
            s.connect(addr)
        else:
            s.sendto(payload, addr)
        print(label, 'OPEN')
    except OSError as e:
        print(label, 'blocked', type(e).__name__)
    finally:
        s.close()
attempt('DIRECT', socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', sink))
attempt('V6 LOOPBACK', socket.AF_INET6, socket.SOCK_STREAM, ('::1', sink))
attempt('PRIVATE', socket.AF_INET, socket.SOCK_STREAM, ('10.255.255.1', 80))
attempt('METADATA', socket.AF_INET, socket.SOCK_STREAM, ('169.254.169.254', 80))
attempt('UDP DNS', socket.AF_INET, socket.SOCK_DGRAM, ('8.8.8.8', 53), b'x')
attempt('ABSTRACT', socket.AF_UNIX, socket.SOCK_STREAM, '\0' + sys.argv[2])
# Every port of the jail's loopback: only its own proxy listens (no MCP server's, no setup's).
listening = []
for family, host in [(socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')]:
    for port in range(1, 65536):
        s = socket.socket(family, socket.SOCK_STREAM)
        # (A connection to itself, from the same ephemeral port, is no listener.)
        if s.connect_ex((host, port)) == 0 and s.getsockname()[:2] != s.getpeername()[:2]:
            listening.append(f'{host}:{port}')
        s.close()
print('LISTENING', listening == [f'127.0.0.1:{own}'], listening)
def via(target):
    s = socket.create_connection(('127.0.0.1', own), 5)
    s.sendall(f'CONNECT {target} HTTP/1.1\r\n\r\n'.encode())
    return s.recv(4096).split(b'\r\n')[0].decode()
print('VIA PROXY', via(f'127.0.0.1:{sink}'))
print('PROXY ITSELF', via(f'127.0.0.1:{own}'))
print('OTHER PORT', via(f'127.0.0.1:{sink + 1 if sink < 65535 else sink - 1}'))
"#;

/// The model's commands (under an allow-list of one address and port) find no way out but the
/// proxy: no other interface, no direct or IPv6 loopback connection, no UDP, none of the host's
/// abstract Unix sockets, no listener but its own proxy (an MCP server's is in its own network
/// namespace); and the proxy itself refuses its own port
/// and other ports of the listed address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_is_the_only_way_out_of_a_jail_with_a_list() {
    require!(Need::UserNamespaces);
    let (sink, count) = stalled().await;
    // An abstract socket on the host: a jail in its own network namespace cannot see it.
    let name = super::jail_support::unique("hone-egress-abstract");
    let addr =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(&name).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let repo = super::mcp::mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py] }\n";
    let yaml = super::mcp::spec_with_mcp("egress-around", &mock, servers);
    let listed = format!("\"127.0.0.1:{sink}\"");
    let policy = format!(
        "{OPEN_POLICY}network:\n  allow: [{listed}]\nmcp:\n  allow: ['s/*']\n  network:\n    allow: [{listed}]\n"
    );
    let yaml = with_policy(&repo, &yaml, &policy);
    mock.turn(call("s__echo_env", json!({"name": "HTTPS_PROXY"})), false)
        .turn(write("probe.py", PROBE), false)
        .turn(cmd(&format!("python3 probe.py {sink} {name}; rm -f probe.py")), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    let mcp_said = result_of(&mock, 0);
    assert!(mcp_said.starts_with("HTTPS_PROXY=http://127.0.0.1:"), "{mcp_said}");
    let said = result_of(&mock, 2);
    assert!(said.contains("INTERFACES ['lo']"), "{said}");
    assert!(said.contains("LISTENING True"), "{said}");
    for label in ["DIRECT", "V6 LOOPBACK", "PRIVATE", "METADATA", "UDP DNS", "ABSTRACT"] {
        assert!(said.contains(&format!("{label} blocked")), "{label}: {said}");
    }
    assert!(!said.contains(" OPEN"), "{said}");
    assert!(said.contains("VIA PROXY HTTP/1.1 200 Connection established"), "{said}");
    assert!(said.contains("PROXY ITSELF HTTP/1.1 403 "), "{said}");
    assert!(said.contains("OTHER PORT HTTP/1.1 403 "), "{said}");
    assert!(abstract_listener.accept().is_err(), "a jailed command reached the host's abstract socket");
    assert_eq!(*count.lock().unwrap(), 1, "only the connection through the proxy reaches the server");
}

/// Downloads through the proxy: a plain-HTTP GET, read until the server closes.
const DOWNLOAD: &str = r#"import os, socket, sys
own = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])
s = socket.create_connection(('127.0.0.1', own), 10)
s.sendall(f'GET http://127.0.0.1:{sys.argv[1]}/big HTTP/1.1\r\n\r\n'.encode())
while s.recv(65536):
    pass
"#;

/// SIGTERM while a command's download through the proxy is stalled: the run ends at once (not
/// after the proxy's idle timeout), with its reports, and the report shows the download and
/// what it moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_mid_download_ends_promptly_and_reports_the_download() {
    require!(Need::UserNamespaces);
    let (port, count) = stalled().await;
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(write("dl.py", DOWNLOAD), false).turn(cmd(&format!("python3 dl.py {port}")), false);
    let policy = format!("{OPEN_POLICY}network:\n  allow: [\"127.0.0.1:{port}\"]\n");
    let yaml = with_policy(&repo, &job_yaml("egress-cancel", &mock.base_url, false), &policy);
    commit_spec(&repo, &yaml);
    let child = spawn_job(std::path::Path::new(env!("CARGO_BIN_EXE_hone")), &repo.path);
    let waited = Instant::now();
    while *count.lock().unwrap() == 0 {
        assert!(waited.elapsed() < Duration::from_secs(60), "the download never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the first 64 KiB through the proxy.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let signalled = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let took = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(took < Duration::from_secs(30), "the run took {took:?} to end after SIGTERM");
    let run = Run { code: 130, stdout: String::new(), stderr, report_dir: repo.path.join(".hone/reports") };
    let report = run.report();
    assert_eq!(report["status"], "cancelled");
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    let row = hosts
        .iter()
        .find(|h| h["port"] == port)
        .unwrap_or_else(|| panic!("the download is not in the report: {hosts:#?}"));
    assert_eq!((row["host"].as_str(), row["allowed"].as_bool()), (Some("127.0.0.1"), Some(true)), "{row}");
    assert!(row["bytes_received"].as_u64().unwrap() >= 65536, "{row}");
    assert!(row["bytes_sent"].as_u64().unwrap() > 0, "{row}");
}
