//! A command's network ends with the command (issue 40): what a command opened through hone's
//! proxy to a listed host that accepts and never answers (CONNECT tunnels, plain-HTTP requests,
//! requests still queued for the proxy) is cut when the command ends, and recorded so before its
//! result; the run's next command has all of the proxy's slots. The names are the harness's
//! (`HONE_TEST_RESOLVE`), standing for public hosts.

use super::jail_support::{cmd, fix, result_of, write};
use crate::common::mock_model::MockModel;
use crate::common::*;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A listed host that accepts every connection and never answers or closes one. Counts them.
async fn silent() -> (u16, Arc<Mutex<usize>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count: Arc<Mutex<usize>> = Arc::default();
    let c = count.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            *c.lock().unwrap() += 1;
            held.push(s);
        }
    });
    (port, count)
}

const RESOLVE: &str = "silent.test=127.0.0.1,answers.test=127.0.0.1";

/// `flood PORT`: as many connections to the proxy for the silent host as it serves at once (64;
/// every tenth a plain-HTTP request, the rest CONNECT tunnels, each answer read to its end, as a
/// client waiting for the server does), then 6 more that wait in the proxy's queue; it exits with
/// every connection open. `fetch PORT`: a plain-HTTP request and a request through a tunnel to the
/// answering host.
const NET: &str = r#"import os, socket, sys, urllib.request
own = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])
def ask(i, port):
    s = socket.create_connection(('127.0.0.1', own), 10)
    if i % 10 == 9:
        s.sendall(f'GET http://silent.test:{port}/ HTTP/1.1\r\nHost: silent.test\r\n\r\n'.encode())
    else:
        s.sendall(f'CONNECT silent.test:{port} HTTP/1.1\r\nHost: silent.test:{port}\r\n\r\n'.encode())
    return s
if sys.argv[1] == 'flood':
    port = sys.argv[2]
    served = [ask(i, port) for i in range(64)]
    opened = 0
    for i, s in enumerate(served):
        if i % 10 != 9:
            s.settimeout(60)
            if s.recv(4096) == b'HTTP/1.1 200 Connection established\r\n\r\n':
                opened += 1
    queued = [ask(0, port) for _ in range(6)]
    print('ASKED', len(served) + len(queued), 'OPENED', opened)
else:
    port = sys.argv[2]
    try:
        r = urllib.request.urlopen(f'http://answers.test:{port}/', timeout=15)
        print('PLAIN', r.status, r.read().decode())
    except Exception as e:
        print('PLAIN FAILED', e)
    try:
        s = socket.create_connection(('127.0.0.1', own), 15)
        s.settimeout(15)
        s.sendall(f'CONNECT answers.test:{port} HTTP/1.1\r\n\r\n'.encode())
        status = s.recv(4096).split(b'\r\n')[0].decode()
        s.sendall(b'GET / HTTP/1.1\r\nHost: answers.test\r\n\r\n')
        body = b''
        while True:
            b = s.recv(4096)
            if not b: break
            body += b
        print('TUNNEL', status, body.endswith(b'answered'))
    except Exception as e:
        print('TUNNEL FAILED', e)
"#;

/// What the proxy is asked for comes from a hostile command: 70 connections to a listed host that
/// never answers, more than the proxy serves at once, left open as the command ends. They are
/// cut when it ends and recorded so before its result, and the next command's requests to a
/// listed host that answers go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_tunnels_end_with_it_and_the_next_command_has_the_network() {
    require!(Need::UserNamespaces);
    let (silent, reached) = silent().await;
    let answers = crate::common::answer::answering().await;
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(write("net.py", NET), false)
        .turn(cmd(&format!("python3 net.py flood {silent}")), false)
        .turn(cmd(&format!("python3 net.py fetch {answers}; rm -f net.py")), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}network:\n  allow: [\"silent.test\", \"answers.test\"]\n");
    let yaml = with_policy(&repo, &job_yaml("egress-tunnels", &mock.base_url, false), &policy);
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", RESOLVE)]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    let flood = result_of(&mock, 1);
    assert!(flood.contains("ASKED 70 OPENED 58"), "{flood}");
    let fetch = result_of(&mock, 2);
    assert!(fetch.contains("PLAIN 200 answered"), "the next command had no network: {fetch}");
    assert!(fetch.contains("TUNNEL HTTP/1.1 200 Connection established True"), "{fetch}");
    // Every connection the proxy served for the flood was recorded as cut by its end, before its
    // result; the 6 still queued were closed unserved.
    let events = run.events();
    let flood_done = events
        .iter()
        .position(|e| e["type"] == "tool_call_completed" && e["tool"] == "run_cmd")
        .expect("the flood command completed");
    let silent_events: Vec<(usize, &Value)> =
        events.iter().enumerate().filter(|(_, e)| e["type"] == "egress" && e["host"] == "silent.test").collect();
    assert_eq!(silent_events.len(), 64, "{silent_events:#?}");
    for (i, e) in &silent_events {
        assert!(*i < flood_done, "recorded after the command's result: {e}");
        assert_eq!(e["allowed"], true, "{e}");
        assert_eq!(e["reason"], "cut when the command that opened it ended", "{e}");
    }
    // (A plain request may have been cut before the proxy reached the host.)
    assert!(*reached.lock().unwrap() <= 64, "a queued request reached the host");
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    let row = |h: &str| hosts.iter().find(|r| r["host"] == h).unwrap_or_else(|| panic!("{h}: {hosts:#?}"));
    assert_eq!(row("silent.test")["connections"].as_u64(), Some(silent_events.len() as u64));
    assert_eq!(
        (row("answers.test")["connections"].as_u64(), row("answers.test")["allowed"].as_bool()),
        (Some(2), Some(true))
    );
    assert!(hosts.iter().all(|r| r["reason"] != "still open when this was written"), "{hosts:#?}");
}
