//! A fleet of three repositories exported to the collector stand-in: one trace under the CI's
//! `TRACEPARENT`, a `hone fleet` span, a `repository` span per repository with its run's spans
//! under it, metrics for the three runs; and the campaign's spend summed in `fleet.json`.

use crate::common::otlp::{Receiver, attr, hex};
use crate::common::*;
use std::collections::HashMap;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CI_SPAN: &str = "b7ad6b7169203331";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_three_is_one_trace() {
    let got = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..3 {
        let origin = dir.path().join(format!("origins/t{i}.git"));
        origin_with(dir.path(), &dir.path().join(format!("src{i}")), &origin, "broken\n", CHECK_SH);
        lines.push(format!("  - url: {}", origin.display()));
    }
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: traced-fleet\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nplan: false\npr: { enabled: false }\ngit: { push: false }\n",
    )
    .unwrap();
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nworkspace: ws\nconcurrency: 3\n", lines.join("\n")),
    )
    .unwrap();
    let traceparent = format!("00-{TRACE}-{CI_SPAN}-01");
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", got.url.as_str()), ("TRACEPARENT", traceparent.as_str())];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    let spans = got.spans();
    assert!(spans.iter().all(|(s, _)| hex(&s.trace_id) == TRACE), "one trace, the CI's");
    let named = |name: &str| spans.iter().filter(|(s, _)| s.name == name).map(|(s, _)| s).collect::<Vec<_>>();
    let fleet_span = named("hone fleet");
    assert_eq!(fleet_span.len(), 1);
    assert_eq!(hex(&fleet_span[0].parent_span_id), CI_SPAN);
    let fleet_id = hex(&fleet_span[0].span_id);
    let repos = named("repository");
    assert_eq!(repos.len(), 3);
    assert!(repos.iter().all(|r| hex(&r.parent_span_id) == fleet_id));
    let runs = named("invoke_agent hone");
    assert_eq!(runs.len(), 3);
    let repo_ids: HashMap<String, String> =
        repos.iter().map(|r| (hex(&r.span_id), attr(&r.attributes, "vcs.repository.name").unwrap())).collect();
    let mut under: Vec<String> = runs.iter().map(|r| repo_ids[&hex(&r.parent_span_id)].clone()).collect();
    under.sort();
    under.dedup();
    assert_eq!(under.len(), 3, "each run under its own repository's span");
    let ids: std::collections::HashSet<String> = spans.iter().map(|(s, _)| hex(&s.span_id)).collect();
    for (s, _) in &spans {
        assert!(s.name == "hone fleet" || ids.contains(&hex(&s.parent_span_id)), "{} is outside the tree", s.name);
    }

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    assert_eq!(report["trace"]["trace_id"], TRACE);
    let per_repo: u64 =
        report["repos"].as_array().unwrap().iter().map(|r| r["spend"]["input_tokens"].as_u64().unwrap()).sum();
    assert!(per_repo > 0);
    assert_eq!(report["spend"]["input_tokens"].as_u64().unwrap(), per_repo, "the campaign's sum");
    assert_eq!(got.total("hone.runs", &[("hone.status", "success")]), 3.0);
    assert_eq!(got.total("gen_ai.client.token.usage", &[("gen_ai.token.type", "input")]), per_repo as f64);
}

/// OTLP over gRPC or HTTP, the way a corporate network has it: through the environment's proxy
/// (a CONNECT tunnel to a name only the proxy resolves), over TLS signed by a CA only
/// `SSL_CERT_FILE` names, with the header the variables give (a key) as metadata or header.
async fn through_the_proxy(grpc: bool) {
    use crate::common::connect_proxy::{ConnectProxy, Pki, tls_front, tls_front_h2};
    let got = if grpc { crate::common::otlp_grpc::start().await } else { Receiver::start().await };
    let addr: std::net::SocketAddr = got.url.trim_start_matches("http://").parse().unwrap();
    let pki = Pki::new(&["otel.test"]);
    let (front, _front) = if grpc { tls_front_h2(&pki, addr).await } else { tls_front(&pki, addr).await };
    let proxy = ConnectProxy::start(&[("otel.test:4317", front)]).await;
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "proxied", "pr: { enabled: false }\ngit: { push: false }\n");
    let ca = pki.ca_pem().display().to_string();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.test:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", if grpc { "grpc" } else { "http/protobuf" }),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=payments"),
        ("HTTPS_PROXY", proxy.url.as_str()),
        ("SSL_CERT_FILE", ca.as_str()),
    ];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    assert!(report.get("warnings").is_none(), "{report:#}");
    assert!(proxy.saw_host("otel.test"), "{:?}", proxy.seen());
    let names: Vec<String> = got.spans().into_iter().map(|(s, _)| s.name).collect();
    assert!(names.contains(&"hone fleet".to_string()) && names.contains(&"invoke_agent hone".to_string()), "{names:?}");
    assert_eq!(got.total("hone.runs", &[("hone.status", "success")]), 1.0);
    let headers = got.got.lock().unwrap().headers.clone();
    assert!(headers.iter().all(|h| h.get("x-team").map(String::as_str) == Some("payments")), "{headers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_goes_through_the_proxy_over_tls_with_its_headers() {
    through_the_proxy(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_goes_through_the_proxy_over_tls_with_its_headers() {
    through_the_proxy(false).await;
}
