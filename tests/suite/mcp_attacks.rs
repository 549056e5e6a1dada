//! Attacks on MCP support (issue 15, part 3), from an independent review: a server cannot write
//! the work tree or outlive the checks, a secret cannot reach the model through a tool's name or
//! a result split by the cap, a server cannot flood the tool list or every request, one that
//! stops between calls is noticed (and a required one stops the run), and a redirect carries no
//! credential anywhere.

use super::jail_support::{cmd, fix, result_of};
use super::mcp::{HttpServer, SECRET, mcp_record, mcp_repo, offered, policy, spec_with_mcp};
use crate::common::mock_model::{MockModel, call};
use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cannot_write_the_work_tree() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py] }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-ro", &mock, servers), &policy("  allow: ['s/write_repo']\n"));
    mock.turn(call("s__write_repo", json!({"path": "planted.txt"})), false)
        .turn(call("s__write_repo", json!({"path": "src/lib.txt"})), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for turn in 0..2 {
        let r = result_of(&mock, turn);
        assert!(r.contains("E_MCP") && r.contains("cannot write"), "{r}");
    }
    assert_eq!(committed(&repo, "hone/mcp-ro"), ["status.txt"], "only the model's change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_model_through_a_tool_name_or_a_cut_result() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers =
        "    - { name: s, command: python3, args: [tools/mcp_server.py, --secret-name], env: [ISSUES_TOKEN] }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-leaks", &mock, servers), &policy("  allow: ['s/*']\n"));
    // The secret straddles the cut at 15,000 bytes (half of `tools.max_output_bytes`).
    mock.turn(call("s__boundary", json!({"pad": 15_000 - 12})), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent: String = mock.requests().iter().map(|r| r.body.to_string()).collect();
    for piece in [SECRET, &SECRET[..10], &SECRET[SECRET.len() - 10..]] {
        assert!(!sent.contains(piece), "`{piece}` reached the model");
    }
    let cut = result_of(&mock, 0);
    assert!(cut.contains("[REDACTED]") && cut.contains("bytes omitted"), "{}", &cut[14_900..15_100]);
    let rec = mcp_record(&run, 0);
    assert!(rec["skipped"][0].as_str().unwrap().contains("its name holds a secret"), "{rec:#}");
    assert!(!run.read("report.json").contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_lists_and_what_they_add_to_each_request_are_bounded() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: many, command: python3, args: [tools/mcp_server.py, --many, '300', --big-schema] }\n    - { name: pages, command: python3, args: [tools/mcp_server.py, --endless-pages] }\n";
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-bounds", &mock, servers), &policy("  allow: ['*/*']\n"));
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tools = offered(&mock, 0);
    assert!(tools.len() <= 128, "{} tools", tools.len());
    assert_eq!(tools.iter().filter(|t| t.starts_with("many__")).count(), 100);
    let size = mock.requests()[0].body["tools"].to_string().len();
    assert!(size < 200_000, "the tools take {size} bytes of each request");
    let rec = mcp_record(&run, 0);
    let skipped: Vec<&str> = rec["skipped"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(skipped.iter().any(|s| s.starts_with("many/huge: its description and schema take")), "{skipped:?}");
    assert!(skipped.iter().any(|s| s.ends_with("the run offers at most 100 MCP tools")), "{skipped:?}");
    let pages = mcp_record(&run, 1);
    assert_eq!(pages["status"], "failed");
    assert!(pages["error"].as_str().unwrap().contains("past 20 pages"), "{pages:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_between_calls_is_noticed_and_a_required_one_ends_the_run() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    // It exits right after listing its tools; the run finds out before a later request.
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py, --exit-after-list] }\n";
    let mock = MockModel::start().await;
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-gone", &mock, servers), &policy("  allow: ['s/*']\n"));
    mock.turn(cmd("ls"), false).turn(cmd("ls src"), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let last = mock.requests().len() - 1;
    assert!(!offered(&mock, last).iter().any(|t| t.starts_with("s__")), "withdrawn: {:?}", offered(&mock, last));
    assert_eq!(mcp_record(&run, 0)["status"], "stopped");

    let mock = MockModel::start().await;
    let required = servers.replace(" }\n", ", required: true }\n");
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-gone-req", &mock, &required), &policy("  allow: ['s/*']\n"));
    mock.turn(cmd("ls"), false).turn(cmd("ls src"), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(mock.requests().len() <= 2, "{} requests", mock.requests().len());
    let err = &run.report()["errors"][0];
    assert_eq!(err["code"], "E_MCP");
    assert!(err["message"].as_str().unwrap().contains("stopped"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_is_withdrawn_and_a_redirect_carries_no_credential() {
    let repo = mcp_repo();
    let server = HttpServer::with(repo.dir.path(), &[]);
    let mock = MockModel::start().await;
    let servers = format!("    - {{ name: d, url: 'http://127.0.0.1:{}/mcp', required: true }}\n", server.port);
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-http-dies", &mock, &servers), &policy("  allow: ['d/*']\n"));
    mock.turn(call("d__crash", json!({})), false).turn(call("d__lookup_issue", json!({"id": 1})), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 3, "a required server that died ends the run: {}", run.stderr);
    assert_eq!(mock.requests().len(), 1, "it ends before the next request");
    let rec = mcp_record(&run, 0);
    assert_eq!((rec["status"].as_str(), rec["failed_calls"].as_u64()), (Some("stopped"), Some(1)), "{rec:#}");
    assert_eq!(run.report()["errors"][0]["code"], "E_MCP");

    // A server that answers with a redirect: hone does not follow it, so the header with the
    // token goes nowhere else.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("http://127.0.0.1:{}/mcp", elsewhere.local_addr().unwrap().port());
    let redirecting = HttpServer::with(repo.dir.path(), &["--redirect-to", &target]);
    let mock = MockModel::start().await;
    let servers = format!(
        "    - {{ name: r, url: 'http://127.0.0.1:{}/mcp', headers: {{ X-Api-Key: '${{DOCS_TOKEN}}' }} }}\n",
        redirecting.port
    );
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-redirect", &mock, &servers), &policy("  allow: ['r/*']\n"));
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("DOCS_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mcp_record(&run, 0)["status"], "failed");
    elsewhere.set_nonblocking(true).unwrap();
    assert!(elsewhere.accept().is_err(), "hone followed the redirect to another host");
    let seen = std::fs::read_to_string(&redirecting.calls).unwrap();
    assert!(seen.contains(SECRET), "the server it names gets the header: {seen}");
}
