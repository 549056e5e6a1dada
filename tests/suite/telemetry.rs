//! OpenTelemetry: a run exported to a collector stand-in that decodes OTLP/HTTP with the official
//! protobuf definitions: one tree of spans in the GenAI conventions, joined to the CI's
//! `TRACEPARENT`, metrics with the mock model's token counts; nothing secret in any of it, with
//! or without content capture; a collector that hangs or refuses costs at most the flush bound
//! and one warning; off means nothing is sent.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::otlp::{self, Receiver, attr, hex};
use crate::common::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// The mock's three turns that fix `broken_repo`: a read, a write, the answer.
fn fixing(mock: &MockModel) {
    mock.turn(call("read_file", json!({"path": "check.sh"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to `fixed` so check.sh passes."), false);
}

fn collector_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", url.to_string()),
        ("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")),
        ("OTEL_SERVICE_NAME", "hone-ci".into()),
        ("OTEL_RESOURCE_ATTRIBUTES", "team=payments".into()),
    ]
}

async fn run_with(repo: &repo::TestRepo, yaml: &str, env: &[(&'static str, String)]) -> Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_job_env(repo, yaml, &env).await
}

#[tokio::test]
async fn a_run_is_one_trace_under_the_ci_span_with_metrics_of_its_tokens() {
    let got = Receiver::start().await;
    let mock = MockModel::start().await;
    fixing(&mock);
    let repo = broken_repo();
    let run = run_with(&repo, &job_yaml("traced", &mock.base_url, false), &collector_env(&got.url)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["trace"]["trace_id"], PARENT_TRACE, "the report names the trace");
    let spans = got.spans();
    let by_id: HashMap<String, &opentelemetry_proto::tonic::trace::v1::Span> =
        spans.iter().map(|(s, _)| (hex(&s.span_id), s)).collect();
    let names = |parent: &str| -> Vec<String> {
        let mut n: Vec<String> =
            spans.iter().filter(|(s, _)| hex(&s.parent_span_id) == parent).map(|(s, _)| s.name.clone()).collect();
        n.sort();
        n
    };
    // One trace, the CI's; one root under the CI's span; every other span under one of the run's.
    assert!(spans.iter().all(|(s, _)| hex(&s.trace_id) == PARENT_TRACE));
    let roots: Vec<_> = spans.iter().filter(|(s, _)| hex(&s.parent_span_id) == PARENT_SPAN).collect();
    assert_eq!(roots.len(), 1, "{:?}", names(PARENT_SPAN));
    let (root, resource) = roots[0];
    assert_eq!(root.name, "invoke_agent hone");
    assert_eq!(hex(&root.span_id), report["trace"]["span_id"].as_str().unwrap());
    for (s, _) in &spans {
        assert!(s == root || by_id.contains_key(&hex(&s.parent_span_id)), "{} has no parent in the trace", s.name);
    }
    let a = |k: &str| attr(&root.attributes, k);
    assert_eq!(a("gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(a("gen_ai.request.model").as_deref(), Some("mock-model"));
    assert_eq!(a("hone.status").as_deref(), Some("success"));
    assert_eq!(a("gen_ai.usage.input_tokens").as_deref(), Some("300"), "3 turns of 100");
    assert_eq!(a("gen_ai.usage.output_tokens").as_deref(), Some("60"));
    assert_eq!(a("gen_ai.usage.cache_read.input_tokens").as_deref(), Some("192"));
    assert_eq!(attr(resource, "service.name").as_deref(), Some("hone-ci"));
    assert_eq!(attr(resource, "team").as_deref(), Some("payments"));
    assert_eq!(attr(resource, "hone.job").as_deref(), Some("traced"));
    assert_stages_and_turns(&spans, &hex(&root.span_id));
    assert_eq!(got.total("gen_ai.client.token.usage", &[("gen_ai.token.type", "input")]), 300.0);
    assert_eq!(got.total("gen_ai.client.token.usage", &[("gen_ai.token.type", "output")]), 60.0);
    assert_eq!(got.total("hone.runs", &[("hone.status", "success")]), 1.0);
    assert_eq!(got.total("hone.checks", &[("hone.check.verdict", "pass")]), 1.0, "the final check passed");
    assert_eq!(got.total("hone.checks", &[("hone.check.verdict", "fail")]), 1.0, "the baseline failed");
    assert_eq!(
        got.total("hone.tool.calls", &[("gen_ai.tool.name", "write_file"), ("hone.tool.decision", "allowed")]),
        1.0
    );
    assert!(!report["warnings"].to_string().contains("telemetry"), "{}", report["warnings"]);
}

type Spans = [(opentelemetry_proto::tonic::trace::v1::Span, Vec<opentelemetry_proto::tonic::common::v1::KeyValue>)];

/// Under the root: intake and the stages; the baseline in the environment; three turns in the
/// session, each with its chat request, two with their tool call; the verification round.
fn assert_stages_and_turns(spans: &Spans, root: &str) {
    let under = |parent: &str, name: &str| -> Vec<&opentelemetry_proto::tonic::trace::v1::Span> {
        spans.iter().map(|(s, _)| s).filter(|s| hex(&s.parent_span_id) == parent && s.name == name).collect()
    };
    for stage in ["intake", "environment", "session", "land", "ship"] {
        assert_eq!(under(root, stage).len(), 1, "{stage}");
    }
    let env = hex(&under(root, "environment")[0].span_id);
    let baseline = under(&env, "baseline");
    assert_eq!(baseline.len(), 1);
    let check = under(&hex(&baseline[0].span_id), "execute_tool check");
    assert_eq!(check.len(), 1);
    assert_eq!(attr(&check[0].attributes, "hone.check.verdict").as_deref(), Some("fail"));
    let session = hex(&under(root, "session")[0].span_id);
    let turns = under(&session, "turn");
    assert_eq!(turns.len(), 3);
    let mut tools = HashSet::new();
    for t in &turns {
        let id = hex(&t.span_id);
        let chat = under(&id, "chat mock-model");
        assert_eq!(chat.len(), 1, "one request per turn");
        assert_eq!(attr(&chat[0].attributes, "gen_ai.usage.input_tokens").as_deref(), Some("100"));
        assert_eq!(chat[0].kind, 3, "a client span");
        for name in ["execute_tool read_file", "execute_tool write_file"] {
            if !under(&id, name).is_empty() {
                tools.insert(name);
            }
        }
    }
    assert_eq!(tools.len(), 2, "each tool call under its turn");
    let verify = under(&session, "verify");
    assert_eq!(verify.len(), 1);
    assert_eq!(under(&hex(&verify[0].span_id), "execute_tool check").len(), 1);
}

/// The model writes the key into a file and says it; a command prints it. Nowhere in what the
/// collector receives, with content capture or without.
async fn canary(capture: bool) {
    let got = Receiver::start().await;
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": format!("fixed {KEY}\n")})), false)
        .turn(call("run_cmd", json!({"command": "cat status.txt"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text(&format!("Done; the key was {KEY}.")), false);
    let repo = broken_repo();
    let mut yaml = with_policy(&repo, &job_yaml("canary", &mock.base_url, false), OPEN_POLICY);
    if capture {
        yaml.push_str("telemetry: { capture_content: true }\n");
    }
    let run = run_with(&repo, &yaml, &collector_env(&got.url)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent = got.all_text();
    assert!(sent.contains("execute_tool run_cmd"), "the trace arrived");
    if capture {
        assert!(
            sent.contains("gen_ai.tool.call.result") && sent.contains("gen_ai.output.messages"),
            "content captured"
        );
        assert!(sent.contains("cat status.txt"), "a tool call's arguments are content");
    } else {
        assert!(!sent.contains("gen_ai.output.messages") && !sent.contains("cat status.txt"), "no content by default");
    }
    assert!(!sent.contains(KEY), "the key reached the collector (capture: {capture})");
    assert!(!sent.contains(&KEY[..KEY.len() - 1]), "a part of the key reached the collector");
    run.assert_no_secret(KEY);
}

#[tokio::test]
async fn no_secret_reaches_the_collector_without_content_capture() {
    canary(false).await;
}

#[tokio::test]
async fn no_secret_reaches_the_collector_with_content_capture() {
    canary(true).await;
}

/// The time a run of `yaml` took beyond its own (`duration_ms`): the process's start, the reports
/// and, with a collector, the export.
async fn beyond(yaml: &str, env: &[(&'static str, String)]) -> (repo::TestRepo, Run, u64) {
    let mock = MockModel::start().await;
    fixing(&mock);
    let repo = broken_repo();
    let started = Instant::now();
    let run = run_with(&repo, &yaml.replace("MOCK_URL", &mock.base_url), env).await;
    let wall = started.elapsed().as_millis() as u64;
    let own = run.report()["duration_ms"].as_u64().unwrap();
    (repo, run, wall.saturating_sub(own))
}

/// A collector that accepts connections and never answers: the run ends as it would have, one
/// warning, and its wall time grows by at most the flush bound (3 s here), measured against the
/// same run with telemetry off in the same test (with two seconds of slack for a loaded machine;
/// an exporter that waited twice, as one did, adds 6 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_costs_at_most_the_flush_bound() {
    let (url, _hold) = otlp::silent().await;
    let yaml = format!("{}telemetry: {{ flush_timeout: 3s }}\n", job_yaml("hung", "MOCK_URL", false));
    let (_, _, quiet) = beyond(&yaml, &[]).await;
    let (_repo, run, hung) = beyond(&yaml, &collector_env(&url)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "success", "the outcome is the same");
    assert!(report.get("trace").is_none(), "no trace reached the collector");
    let warnings: Vec<String> = serde_json::from_value(report["warnings"].clone()).unwrap();
    let ours: Vec<&String> = warnings.iter().filter(|w| w.starts_with("telemetry:")).collect();
    assert_eq!(ours.len(), 1, "{warnings:?}");
    assert!(ours[0].contains("did not answer"), "{}", ours[0]);
    let added = hung.saturating_sub(quiet);
    eprintln!("the silent collector added {added} ms");
    assert!(added < 3000 + 2000, "the silent collector added {added} ms (flush bound 3000 ms)");
}

#[tokio::test]
async fn a_collector_that_refuses_is_one_warning_and_the_same_outcome() {
    let url = otlp::refusing().await;
    let mock = MockModel::start().await;
    fixing(&mock);
    let repo = broken_repo();
    let run = run_with(&repo, &job_yaml("refused", &mock.base_url, false), &collector_env(&url)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "success");
    let warnings = report["warnings"].as_array().unwrap();
    let ours: Vec<_> = warnings.iter().filter(|w| w.as_str().unwrap().starts_with("telemetry:")).collect();
    assert_eq!(ours.len(), 1, "{warnings:?}");
}

/// `OTEL_SDK_DISABLED=true`, or no endpoint: nothing is sent and no exporter is built (the
/// report names no trace).
#[tokio::test]
async fn off_means_nothing_is_sent() {
    let got = Receiver::start().await;
    for env in [
        vec![("OTEL_EXPORTER_OTLP_ENDPOINT", got.url.clone()), ("OTEL_SDK_DISABLED", "true".into())],
        vec![("OTEL_SERVICE_NAME", "hone".into()), ("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"))],
    ] {
        let mock = MockModel::start().await;
        fixing(&mock);
        let repo = broken_repo();
        let run = run_with(&repo, &job_yaml("quiet", &mock.base_url, false), &env).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.report().get("trace").is_none(), "{env:?}");
    }
    let g = got.got.lock().unwrap();
    assert!(g.traces.is_empty() && g.metrics.is_empty(), "nothing was sent");
}

/// A run that fails at intake (a spec that does not parse) is still a trace and a counted run, so
/// a dashboard sees the broken job.
#[tokio::test]
async fn a_run_that_fails_at_intake_is_still_counted() {
    let got = Receiver::start().await;
    let repo = broken_repo();
    let run = run_with(&repo, "version: 1\nname: broken\nmodel: 7\n", &collector_env(&got.url)).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.report()["trace"]["trace_id"], PARENT_TRACE);
    let spans = got.spans();
    let root: Vec<_> = spans.iter().filter(|(s, _)| s.name == "invoke_agent hone").collect();
    assert_eq!(root.len(), 1);
    assert_eq!(attr(&root[0].0.attributes, "hone.status").as_deref(), Some("invalid_input"));
    assert_eq!(got.total("hone.runs", &[("hone.status", "invalid_input")]), 1.0);
}
