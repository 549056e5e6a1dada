//! MCP tools (issue 15, part 3): servers named in the job spec are started (stdio ones in the
//! jail), their tools offered as the policy allows and never otherwise, results capped and
//! redacted, a hanging call cut off, a crashing server withdrawn, and a required server that
//! cannot start stops the run before the first request. The server is `tests/data/mcp_server.py`.

use super::jail_support::{fix, result_of, tool_results};
use crate::common::mock_model::{MockModel, call};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};

pub(super) const SERVER: &str = include_str!("../data/mcp_server.py");
pub(super) const SECRET: &str = "mcp-token-Zq81x0RaW4";

/// `broken_repo` with the test server committed under `tools/`, as a repository's own server is.
pub(super) fn mcp_repo() -> TestRepo {
    TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        ("src/lib.txt", "hello\n"),
        ("tools/mcp_server.py", SERVER),
    ])
}

pub(super) fn spec_with_mcp(name: &str, mock: &MockModel, servers: &str) -> String {
    job_yaml(name, &mock.base_url, false).replace("verify:\n", &format!("mcp:\n  servers:\n{servers}verify:\n"))
}

pub(super) fn policy(mcp: &str) -> String {
    format!("{OPEN_POLICY}mcp:\n{mcp}")
}

/// The tool names request `i` offered the model.
pub(super) fn offered(mock: &MockModel, i: usize) -> Vec<String> {
    let req = &mock.requests()[i].body;
    req["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

pub(super) fn mcp_record(run: &Run, i: usize) -> Value {
    run.report()["mcp"][i].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_tools_are_offered_as_the_policy_allows_with_results_capped_and_redacted() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: issues, command: python3, args: [tools/mcp_server.py], env: [ISSUES_TOKEN] }\n";
    let p = policy(
        "  allow: ['issues/lookup_*', 'issues/echo_env', 'issues/big', 'issues/fail', 'issues/close_*']\n  deny: ['issues/close_*']\n",
    );
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-stdio", &mock, servers), &p);
    mock.turn(call("issues__lookup_issue", json!({"id": 7})), false)
        .turn(call("issues__echo_env", json!({"name": "ISSUES_TOKEN"})), false)
        .turn(call("issues__close_issue", json!({"id": 7})), false)
        .turn(call("issues__big", json!({"bytes": 100_000})), false)
        .turn(call("issues__fail", json!({})), false)
        .turn(call("issues__lookup_issue", json!("not an object")), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let tools = offered(&mock, 0);
    for t in ["issues__lookup_issue", "issues__echo_env", "issues__big", "issues__fail"] {
        assert!(tools.contains(&t.to_string()), "{t} offered: {tools:?}");
    }
    for t in ["issues__close_issue", "issues__hang", "issues__read_file"] {
        assert!(!tools.contains(&t.to_string()), "{t} is not offered: {tools:?}");
    }
    assert_eq!(result_of(&mock, 0), "issue 7: the parser crashes on empty input");
    let sent = mock.requests()[0].body["tools"].to_string();
    assert!(sent.contains("Look up an issue by number (token ") && !sent.contains(SECRET), "descriptions are redacted");
    let env = result_of(&mock, 1);
    assert!(env.starts_with("ISSUES_TOKEN=") && !env.contains(SECRET), "passed through, and redacted: {env}");
    let denied = result_of(&mock, 2);
    assert!(denied.contains("unknown tool `issues__close_issue`"), "a denied tool cannot be called: {denied}");
    let big = result_of(&mock, 3);
    assert!(
        big.len() < 32_000 && big.contains("bytes omitted") && big.contains("ask the tool for less"),
        "capped: {} bytes",
        big.len()
    );
    let failed = result_of(&mock, 4);
    assert!(failed.contains("E_MCP") && failed.contains("the tracker is read-only today"), "{failed}");
    assert!(result_of(&mock, 5).contains("E_INVALID_ARGS"), "{}", result_of(&mock, 5));
    let rec = mcp_record(&run, 0);
    assert_eq!((rec["status"].as_str(), rec["transport"].as_str()), (Some("running"), Some("stdio")), "{rec:#}");
    assert!(rec["denied"].as_array().unwrap().contains(&json!("issues/close_issue")), "{rec:#}");
    assert!(rec["denied"].as_array().unwrap().contains(&json!("issues/hang")), "{rec:#}");
    assert_eq!((rec["calls"].as_u64(), rec["failed_calls"].as_u64()), (Some(5), Some(2)), "{rec:#}");
    let ev: Vec<Value> = run.events().into_iter().filter(|e| e["type"] == "mcp_server").collect();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["status"], "running");
    for sink in [run.stdout.clone(), run.stderr.clone(), run.read("report.json"), run.read("events.jsonl")] {
        assert!(!sink.contains(SECRET));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_is_cut_off_and_a_crashed_server_is_withdrawn_while_the_run_goes_on() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: issues, command: python3, args: [tools/mcp_server.py], timeout: 1s }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-faults", &mock, servers), &policy("  allow: ['issues/*']\n"));
    mock.turn(call("issues__hang", json!({})), false)
        .turn(call("issues__lookup_issue", json!({"id": 1})), false)
        .turn(call("issues__crash", json!({})), false)
        .turn(call("issues__lookup_issue", json!({"id": 2})), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let hang = result_of(&mock, 0);
    assert!(hang.contains("E_TOOL_TIMEOUT") && hang.contains("did not answer within 1s"), "{hang}");
    assert!(result_of(&mock, 1).contains("issue 1:"), "the server still answers after a timeout");
    let crash = result_of(&mock, 2);
    assert!(crash.contains("stopped") && crash.contains("out of cheese"), "{crash}");
    assert!(result_of(&mock, 3).contains("has stopped"), "{}", result_of(&mock, 3));
    assert!(offered(&mock, 2).iter().any(|t| t.starts_with("issues__")));
    assert!(!offered(&mock, 3).iter().any(|t| t.starts_with("issues__")), "withdrawn: {:?}", offered(&mock, 3));
    let rec = mcp_record(&run, 0);
    assert_eq!(rec["status"], "stopped", "{rec:#}");
    assert!(rec["error"].as_str().unwrap().contains("out of cheese"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_are_left_out_unless_required() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: broken, command: python3, args: [tools/mcp_server.py, --fail-start] }\n    - { name: slow, command: python3, args: [tools/mcp_server.py, --hang-start], start_timeout: 1s }\n    - { name: absent, command: no-such-mcp-server }\n    - { name: ok, command: python3, args: [tools/mcp_server.py] }\n";
    let yaml =
        with_policy(&repo, &spec_with_mcp("mcp-optional", &mock, servers), &policy("  allow: ['*/lookup_issue']\n"));
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(offered(&mock, 0).iter().filter(|t| t.contains("__")).collect::<Vec<_>>(), ["ok__lookup_issue"]);
    let report = run.report();
    let status: Vec<&str> = report["mcp"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["failed", "failed", "failed", "running"]);
    let err = |i: usize| report["mcp"][i]["error"].as_str().unwrap().to_string();
    assert!(err(0).contains("cannot open the issue database"), "the stderr tail: {}", err(0));
    assert!(err(1).contains("did not finish starting within 1s"), "{}", err(1));
    assert!(err(2).contains("no-such-mcp-server"), "{}", err(2));

    // The same broken server, required: the run stops before any request.
    let mock = MockModel::start().await;
    let servers =
        "    - { name: broken, command: python3, args: [tools/mcp_server.py, --fail-start], required: true }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-required", &mock, servers), &policy("  allow: ['*/*']\n"));
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(mock.requests().is_empty(), "no request was made");
    let report = run.report();
    assert_eq!(report["errors"][0]["code"], "E_MCP", "{report:#}");
    let msg = report["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("cannot open the issue database") && msg.contains("required"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_is_jailed_like_every_command() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let outside = repo.dir.path().join("outside-secret.txt");
    std::fs::write(&outside, "the host's secret\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mock = MockModel::start().await;
    let servers = "    - { name: issues, command: python3, args: [tools/mcp_server.py] }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-jail", &mock, servers), &policy("  allow: ['issues/*']\n"));
    mock.turn(call("issues__read_file", json!({"path": outside.to_str().unwrap()})), false)
        .turn(call("issues__connect", json!({"port": port})), false)
        .turn(call("issues__echo_env", json!({"name": "HONE_TEST_API_KEY"})), false)
        .turn(call("issues__read_file", json!({"path": "status.txt"})), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let read = result_of(&mock, 0);
    assert!(read.contains("cannot read") && !read.contains("the host's secret"), "{read}");
    assert!(result_of(&mock, 1).contains("cannot connect"), "no network: {}", result_of(&mock, 1));
    assert!(result_of(&mock, 2).ends_with("=<unset>"), "only named variables: {}", result_of(&mock, 2));
    assert_eq!(result_of(&mock, 3), "broken\n", "the repository is what it sees");
    drop(listener);
}

/// The HTTP test server, outside the jail as a remote one would be: its port, and the file its
/// calls are logged to.
pub(super) struct HttpServer {
    child: std::process::Child,
    pub(super) port: u16,
    /// Where it logs: every call, or (redirecting) every request with its headers.
    pub(super) calls: std::path::PathBuf,
}

impl HttpServer {
    pub(super) fn start(dir: &std::path::Path, token: &str) -> HttpServer {
        HttpServer::with(dir, &["--token", token])
    }

    /// The server with `args` after `--http LOG`.
    pub(super) fn with(dir: &std::path::Path, args: &[&str]) -> HttpServer {
        use std::io::BufRead;
        let script = dir.join("mcp_http.py");
        std::fs::write(&script, SERVER).unwrap();
        let calls = dir.join("mcp-calls.jsonl");
        let mut child = std::process::Command::new("python3")
            .arg(&script)
            .args(["--http", calls.to_str().unwrap()])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("the server's port: {line:?}"));
        HttpServer { child, port, calls }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_gets_its_headers_from_the_environment_and_denied_tools_are_never_called() {
    let repo = mcp_repo();
    let server = HttpServer::start(repo.dir.path(), SECRET);
    let mock = MockModel::start().await;
    let servers = format!(
        "    - {{ name: docs, url: 'http://127.0.0.1:{}/mcp', headers: {{ Authorization: 'Bearer ${{DOCS_TOKEN}}' }}, required: true }}\n",
        server.port
    );
    let p = policy("  allow: ['docs/lookup_issue', 'docs/echo_env']\n");
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-http", &mock, &servers), &p);
    mock.turn(call("docs__lookup_issue", json!({"id": 3})), false)
        .turn(call("docs__close_issue", json!({"id": 3})), false)
        .turn(call("docs__echo_env", json!({"name": "X"})), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("DOCS_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(result_of(&mock, 0), "issue 3: the parser crashes on empty input");
    assert!(result_of(&mock, 1).contains("unknown tool"), "{}", result_of(&mock, 1));
    let calls = std::fs::read_to_string(&server.calls).unwrap();
    let names: Vec<String> =
        calls.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["name"].as_str().unwrap().into()).collect();
    assert_eq!(names, ["lookup_issue", "echo_env"], "the server saw only allowed calls");
    assert_eq!(mcp_record(&run, 0)["transport"], "http");
    assert!(!run.read("report.json").contains(SECRET) && !tool_results(&mock, 3).concat().contains(SECRET));

    // A wrong token: the server refuses, and the required server stops the run.
    let mock = MockModel::start().await;
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-http-401", &mock, &servers), &p);
    let run = run_job_env(&repo, &yaml, &[("DOCS_TOKEN", "wrong-token-value")]).await;
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(mock.requests().is_empty());
    assert_eq!(mcp_record(&run, 0)["status"], "failed");
}
