//! Network by name (issue 23): a policy's allow-list is kept by hone's proxy, the jail's one way
//! out. A local package index and a second local server stand in for the internet; the test
//! harness maps names to them with `HONE_TEST_RESOLVE` (read by debug builds only, never from a
//! policy or a job).

use super::jail_support::{cmd, fix, result_of, write};
use crate::common::mock_model::MockModel;
use crate::common::*;
use std::sync::{Arc, Mutex};

/// A PEP 503 package index serving one wheel (`hone-probe`), recording every request line.
struct Index {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Index {
    async fn start() -> Index {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("hone_probe-1.0-py3-none-any.whl");
        let made = std::process::Command::new("python3").arg("-c").arg(WHEEL).arg(&wheel).status().unwrap();
        assert!(made.success(), "the test wheel could not be built");
        let wheel = Arc::new(std::fs::read(&wheel).unwrap());
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (w, s) = (wheel.clone(), seen.clone());
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (w, s) = (w.clone(), s.clone());
            async move {
                let path = req.uri().path().to_string();
                let host = req.headers().get("host").and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
                s.lock().unwrap().push(format!("{} {path} (Host: {host})", req.method()));
                let html = |body: &'static str| {
                    let mut r = axum::response::Response::new(axum::body::Body::from(body));
                    r.headers_mut().insert("content-type", axum::http::HeaderValue::from_static("text/html"));
                    r
                };
                match path.as_str() {
                    "/simple/" => html("<html><body><a href=\"hone-probe/\">hone-probe</a></body></html>"),
                    "/simple/hone-probe/" => html(
                        "<html><body><a href=\"../../files/hone_probe-1.0-py3-none-any.whl\">hone_probe-1.0-py3-none-any.whl</a></body></html>",
                    ),
                    "/files/hone_probe-1.0-py3-none-any.whl" => {
                        axum::response::Response::new(axum::body::Body::from(w.as_ref().clone()))
                    }
                    _ => {
                        let mut r = axum::response::Response::new(axum::body::Body::from("not found"));
                        *r.status_mut() = axum::http::StatusCode::NOT_FOUND;
                        r
                    }
                }
            }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Index { port, seen }
    }
}

/// Builds a wheel of one module, `hone_probe`, whose `VALUE` is `installed-by-name`.
const WHEEL: &str = r#"import sys, zipfile, hashlib, base64
files = {
    "hone_probe/__init__.py": b"VALUE = 'installed-by-name'\n",
    "hone_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: hone-probe\nVersion: 1.0\n",
    "hone_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hone-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{name},sha256={digest},{len(data)}\n"
record += "hone_probe-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("hone_probe-1.0.dist-info/RECORD", record)
"#;

/// A server that counts the connections it accepts (it should get none).
async fn bystander() -> (u16, Arc<Mutex<usize>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count: Arc<Mutex<usize>> = Arc::default();
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = listener.accept().await {
            *c.lock().unwrap() += 1;
        }
    });
    (port, count)
}

/// The names the harness maps to this machine's loopback, as if they were public hosts.
const RESOLVE: &str = "pypi.test=127.0.0.1,other.test=127.0.0.1";

fn spec_with_setup(name: &str, mock: &MockModel, setup: &str) -> String {
    job_yaml(name, &mock.base_url, false).replace("verify:\n", &format!("setup:\n{setup}verify:\n"))
}

/// Setup installs a package by name from the index its allow-list names, through the proxy;
/// the model's commands after it (no network) neither have a proxy nor reach setup's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_installs_a_package_by_name_from_the_allowed_index() {
    require!(Need::UserNamespaces);
    require!(Need::Pip);
    let index = Index::start().await;
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let pip = format!(
        "/usr/bin/python3 -m pip install --no-cache-dir --disable-pip-version-check --no-input --index-url http://pypi.test:{}/simple/ --trusted-host pypi.test --target .deps hone-probe && echo ${{HTTPS_PROXY##*:}} > .port",
        index.port
    );
    let setup = format!("  - {{ name: deps, run: \"{pip}\", timeout: 120s }}\n");
    let yaml = spec_with_setup("egress-setup", &mock, &setup);
    let probe = "import os, socket, sys\nsys.path.insert(0, '.deps')\nimport hone_probe\nprint('VALUE', hone_probe.VALUE)\nprint('PROXY', os.environ.get('HTTPS_PROXY'))\nport = int(open('.port').read())\ntry:\n    socket.create_connection(('127.0.0.1', port), 5)\n    print('REACHED SETUP PROXY')\nexcept OSError as e:\n    print('NO SETUP PROXY', e)\n";
    mock.turn(write("probe.py", probe), false).turn(cmd("python3 probe.py; rm -f probe.py"), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}network: false\nsetup:\n  network:\n    allow: [\"pypi.test\"]\n");
    let yaml = with_policy(&repo, &yaml, &policy);
    // The model learns setup's proxy port from setup's output, as an attacker could.
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", RESOLVE)]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    let tail = report["setup"][0]["output_tail"].as_str().unwrap();
    assert!(tail.contains("Successfully installed hone-probe-1.0"), "{tail}");
    let seen = index.seen.lock().unwrap().clone();
    assert!(seen.iter().any(|s| s.starts_with("GET /files/hone_probe-1.0-py3-none-any.whl")), "{seen:?}");
    assert!(seen.iter().all(|s| s.contains(&format!("(Host: pypi.test:{})", index.port))), "{seen:?}");
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    let row = hosts.iter().find(|h| h["host"] == "pypi.test").unwrap_or_else(|| panic!("{hosts:?}"));
    assert_eq!((row["purpose"].as_str(), row["allowed"].as_bool()), (Some("setup"), Some(true)), "{row}");
    assert_eq!(row["rule"], "setup.network.allow[0] `pypi.test`");
    assert!(row["bytes_received"].as_u64().unwrap() > 500, "{row}");
    assert_eq!(report["policy"]["network"]["setup"], "allow-list");
    assert_eq!(report["policy"]["network"]["commands"], "off");
    let said = result_of(&mock, 1);
    assert!(said.contains("VALUE installed-by-name"), "{said}");
    assert!(said.contains("PROXY None"), "commands without network were given a proxy: {said}");
    assert!(said.contains("NO SETUP PROXY"), "setup's proxy port was reached from the commands' jail: {said}");
    // Setup's proxy is closed when setup ends, before the model's first turn.
    let closed = run.stderr.find("egress proxy for setup (port ").expect("setup's proxy was never closed");
    let first_turn = run.stderr.find("turn 1:").expect("the model had a turn");
    assert!(closed < first_turn, "setup's proxy outlived setup: {}", run.stderr);
    let summary = std::fs::read_to_string(run.report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("pypi.test"), "{summary}");
}

/// The model's commands under an allow-list: the listed name is reached over CONNECT and plain
/// HTTP; another server, raw addresses, the metadata address and a listed name that resolves to
/// loopback are refused, recorded, and told to the model; nothing reaches the other server, and
/// no way around the proxy exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_only_the_listed_hosts() {
    require!(Need::UserNamespaces);
    let index = Index::start().await;
    let (other, other_count) = bystander().await;
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let script = format!(
        r#"import os, socket, urllib.request
proxy = os.environ['HTTPS_PROXY'].rsplit(':', 1)
addr = (proxy[0].split('//')[1], int(proxy[1]))
def connect(target, then=b''):
    s = socket.create_connection(addr, 10)
    s.sendall(f'CONNECT {{target}} HTTP/1.1\r\nHost: {{target}}\r\n\r\n'.encode())
    status = s.recv(4096).split(b'\r\n')[0].decode()
    body = b''
    if ' 200 ' in status and then:
        s.sendall(then)
        while True:
            b = s.recv(4096)
            if not b: break
            body += b
    return status, body
status, body = connect('pypi.test:{ip}', b'GET /simple/ HTTP/1.1\r\nHost: pypi.test\r\nConnection: close\r\n\r\n')
print('TUNNEL', status, b'hone-probe' in body)
print('PLAIN', urllib.request.urlopen('http://pypi.test:{ip}/simple/hone-probe/', timeout=10).status)
for target in ['other.test:{op}', '127.0.0.1:{op}', '169.254.169.254:80', 'localhost:{op}']:
    print('TRY', target, connect(target)[0])
try:
    urllib.request.urlopen('http://other.test:{op}/', timeout=10)
except Exception as e:
    print('PLAIN OTHER', e)
try:
    socket.create_connection(('127.0.0.1', {op}), 5)
    print('AROUND THE PROXY: CONNECTED')
except OSError as e:
    print('AROUND THE PROXY: refused', e)
"#,
        ip = index.port,
        op = other
    );
    mock.turn(write("net.py", &script), false).turn(cmd("python3 net.py; rm -f net.py"), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}network:\n  allow: [\"pypi.test\", \"localhost\"]\n");
    let yaml = with_policy(&repo, &job_yaml("egress-cmds", &mock.base_url, false), &policy);
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", RESOLVE)]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    let said = result_of(&mock, 1);
    assert!(said.contains("TUNNEL HTTP/1.1 200 Connection established True"), "{said}");
    assert!(said.contains("PLAIN 200"), "{said}");
    for (target, why) in [
        (format!("other.test:{other}"), format!("other.test:{other} is not in the policy's network.allow")),
        (format!("127.0.0.1:{other}"), format!("127.0.0.1:{other} is not in the policy's network.allow")),
        ("169.254.169.254:80".into(), "169.254.169.254:80 is not in the policy's network.allow".into()),
        // (::1 or 127.0.0.1, whichever the resolver gives first)
        (format!("localhost:{other}"), "localhost resolves to ".into()),
    ] {
        assert!(said.contains(&format!("TRY {target} HTTP/1.1 403 {why}")), "{target}: {said}");
    }
    assert!(said.contains("(loopback), which is reached only when listed"), "{said}");
    assert!(said.contains("PLAIN OTHER HTTP Error 403"), "{said}");
    assert!(said.contains("AROUND THE PROXY: refused"), "{said}");
    // What the model is told, after the command's output.
    assert!(said.contains("hone's network proxy refused 5 connection(s) during this command:"), "{said}");
    assert_eq!(*other_count.lock().unwrap(), 0, "the unlisted server was reached");
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    let allowed: Vec<&serde_json::Value> = hosts.iter().filter(|h| h["allowed"] == true).collect();
    assert_eq!(allowed.len(), 1, "{hosts:#?}");
    assert_eq!((allowed[0]["host"].as_str(), allowed[0]["connections"].as_u64()), (Some("pypi.test"), Some(2)));
    let refused: Vec<&str> =
        hosts.iter().filter(|h| h["allowed"] == false).map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(refused.len(), 4, "{hosts:#?}");
    for h in ["other.test", "127.0.0.1", "169.254.169.254", "localhost"] {
        assert!(refused.contains(&h), "{h} not recorded as refused: {hosts:#?}");
    }
    let events: Vec<serde_json::Value> = run.events().into_iter().filter(|e| e["type"] == "egress").collect();
    assert_eq!(events.len(), 7, "{events:#?}");
    assert!(events.iter().all(|e| e["purpose"] == "commands"));
}

/// A stdio MCP server under `mcp.network`'s list reaches the listed index by name through a
/// proxy of its own, and nothing else; the model's commands (no network) can reach neither the
/// index nor the server's proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_reaches_only_its_own_list() {
    use crate::common::mock_model::call;
    use serde_json::json;
    require!(Need::UserNamespaces);
    let index = Index::start().await;
    let (other, other_count) = bystander().await;
    let repo = super::mcp::mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py] }\n";
    let yaml = super::mcp::spec_with_mcp("egress-mcp", &mock, servers);
    let policy =
        format!("{OPEN_POLICY}network: false\nmcp:\n  allow: ['s/*']\n  network:\n    allow: [\"pypi.test\"]\n");
    let yaml = with_policy(&repo, &yaml, &policy);
    mock.turn(call("s__fetch", json!({"url": format!("http://pypi.test:{}/simple/", index.port)})), false)
        .turn(call("s__fetch", json!({"url": format!("http://other.test:{other}/")})), false)
        .turn(call("s__echo_env", json!({"name": "HTTPS_PROXY"})), false)
        .turn(cmd("python3 -c \"import os; print('PROXY', os.environ.get('HTTPS_PROXY'))\""), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", RESOLVE)]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    assert!(
        result_of(&mock, 0).contains("status 200: <html><body><a href=\"hone-probe/\">"),
        "{}",
        result_of(&mock, 0)
    );
    let refused = result_of(&mock, 1);
    assert!(refused.contains("403") && refused.contains("is not in the policy's mcp.network.allow"), "{refused}");
    assert!(result_of(&mock, 2).starts_with("HTTPS_PROXY=http://127.0.0.1:"), "{}", result_of(&mock, 2));
    assert!(result_of(&mock, 3).contains("PROXY None"), "{}", result_of(&mock, 3));
    assert_eq!(*other_count.lock().unwrap(), 0);
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{hosts:#?}");
    assert!(hosts.iter().all(|h| h["purpose"] == "mcp:s"), "{hosts:#?}");
    assert_eq!(report["policy"]["network"]["mcp"], "allow-list");
}

/// Tools that read `HTTPS_PROXY` work unchanged: `git clone` and `curl` over HTTPS reach a real
/// TLS server (the HTTPS git server stand-in, certificate for `localhost`) through a CONNECT
/// tunnel, verifying its certificate end to end. `localhost` is loopback, so the client is told
/// not to go around the proxy for it (`NO_PROXY=`), and the harness's resolver answers for it
/// like a public name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_and_curl_over_https_go_through_the_tunnel() {
    use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "app.git", &repo.origin);
    let server = GitHttp::start_tls(served.path(), Mode::Open).await;
    // (`*.pem` is read-denied by default: the jail would show it empty.)
    std::fs::copy(test_ca(), repo.path.join("test-ca.crt")).unwrap();
    repo.git(&["add", "test-ca.crt"]);
    repo.git(&["commit", "-qm", "the test CA"]);
    let mock = MockModel::start().await;
    let script = format!(
        "export NO_PROXY= no_proxy= GIT_SSL_CAINFO=$PWD/test-ca.crt\n\
         git clone -q {base}/app.git /tmp/app && echo \"CLONED $(cat /tmp/app/status.txt)\"\n\
         curl -sS --cacert test-ca.crt {base}/app.git/HEAD && echo CURL-OK\n",
        base = server.base
    );
    mock.turn(write("net.sh", &script), false).turn(cmd("sh net.sh; rm -f net.sh"), false);
    fix(&mock);
    let policy = "version: 1\ncommands:\n  default: allow\nnetwork:\n  allow: [\"localhost\"]\n";
    let yaml = with_policy(&repo, &job_yaml("egress-tls", &mock.base_url, false), policy);
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", "localhost=127.0.0.1")]).await;
    let report = run.report();
    assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
    let said = result_of(&mock, 1);
    assert!(said.contains("CLONED broken"), "{said}");
    assert!(said.contains("ref: refs/heads/main") && said.contains("CURL-OK"), "{said}");
    let hosts = report["policy"]["network"]["hosts"].as_array().unwrap();
    assert!(hosts.iter().all(|h| h["host"] == "localhost" && h["allowed"] == true), "{hosts:#?}");
    assert!(hosts.iter().map(|h| h["connections"].as_u64().unwrap()).sum::<u64>() >= 2, "{hosts:#?}");
    assert!(!server.seen().is_empty(), "the server saw nothing");
}
