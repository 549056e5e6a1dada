//! Google Vertex AI (`provider: vertex`) with the real binary against the stand-ins of
//! `mock_vertex`: Claude (streamed and not) and Gemini runs with tool calls, each kind of
//! Application Default Credentials (a service account key, gcloud's file, workload identity
//! federation, the metadata server), `RESOURCE_EXHAUSTED` retried, tokens fetched again before
//! they expire, and what is refused: a key the token endpoint rejects (exit 3), no credentials or
//! a broken file (exit 2), credentials reached through a link in the checkout (exit 2). No token,
//! key or subject token appears in any output, and the model's commands cannot see the
//! credentials, wherever the file lies.

use crate::common::mock_model::{Turn, call, text};
use crate::common::mock_vertex::{CLAUDE, EMAIL, GEMINI, MockVertex, key};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A place outside the repository: an empty home, and where credentials files go.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Outside { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The environment of a run: this home, `creds` as GOOGLE_APPLICATION_CREDENTIALS, nothing
    /// else of Google's set (a blank variable is unset for hone), then `more`.
    fn env(&self, creds: Option<&Path>, more: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            "GCE_METADATA_HOST",
            "CLOUDSDK_CONFIG",
            "GOOGLE_CLOUD_PROJECT",
            "CLOUDSDK_CORE_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "CLOUD_ML_REGION",
        ]
        .iter()
        .map(|k| (k.to_string(), String::new()))
        .collect();
        env.push(("HOME".into(), self.path("home").display().to_string()));
        env.push(("NO_GCE_CHECK".into(), "True".into()));
        env.push(("GOOGLE_APPLICATION_CREDENTIALS".into(), creds.map(|p| p.display().to_string()).unwrap_or_default()));
        env.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env
    }
}

async fn run_with(repo: &TestRepo, yaml: &str, env: &[(String, String)]) -> Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_job_env(repo, yaml, &env).await
}

/// The job spec for the stand-in: `model` on Vertex, with `more` lines in the model block.
fn yaml(name: &str, mock: &MockVertex, model: &str, stream: bool, more: &str) -> String {
    job_yaml(name, &mock.url, stream)
        .replace("provider: openai-compatible\n  name: mock-model", &format!("provider: vertex\n  name: {model}{more}"))
        .replace("  api_key_env: HONE_TEST_API_KEY\n", "")
}

const REGION: &str = "\n  region: us-east5";
const REGION_PROJECT: &str = "\n  region: us-east5\n  project: hone-test-project";

/// The turns of an ordinary fix: read the check, write the fix, say so.
fn fix(mock: &MockVertex) {
    let read = Turn {
        content: "Reading the check.".into(),
        calls: vec![("read_file".into(), json!({"path": "check.sh"}).to_string())],
    };
    mock.turn(read)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})))
        .turn(text("Fixed status.txt."));
}

/// No access token the stand-in issued, no secret of the identity dance and no line of the
/// private key in any output of the run.
fn assert_no_google_secret(run: &Run, mock: &MockVertex) {
    let mut secrets = mock.tokens();
    secrets.extend(mock.other_secrets());
    secrets.extend(key(true).lines().filter(|l| !l.starts_with("-----")).map(str::to_string));
    for s in secrets {
        run.assert_no_secret(&s);
    }
}

async fn claude(stream: bool) {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    fix(&mock);
    // No project in the spec: the service account file's `project_id` is used.
    let run = run_with(&repo, &yaml("vclaude", &mock, CLAUDE, stream, REGION), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let method = if stream { "streamRawPredict" } else { "rawPredict" };
    for r in &reqs {
        assert_eq!(r.path, format!("{CLAUDE}:{method}"));
        assert!(r.token.starts_with("ya29.sa-"), "the service account's token: {}", r.token);
        assert!(r.body.get("model").is_none() && r.body["anthropic_version"] == "vertex-2023-10-16", "{}", r.body);
        assert_eq!(r.body["system"][0]["cache_control"]["type"], "ephemeral");
    }
    let results = &reqs[1].body["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(results[0]["type"], "tool_result", "{results}");
    assert_eq!(mock.identity_log(), ["token: service account granted"], "one token for the run: it lives an hour");
    let report = run.report();
    assert_eq!((report["provider"].as_str(), report["model"].as_str()), (Some("vertex"), Some(CLAUDE)));
    assert_eq!(report["usage"]["prompt_tokens"], 300);
    assert_eq!(repo.show("hone/vclaude", "status.txt"), "fixed");
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_on_vertex_streamed_with_a_service_account() {
    claude(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_on_vertex_not_streamed() {
    claude(false).await;
}

async fn gemini(stream: bool) {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    // Two parallel calls, which Gemini streams whole and both at `index: 0`.
    let both = Turn {
        content: "Looking at both.".into(),
        calls: vec![
            ("read_file".into(), json!({"path": "check.sh"}).to_string()),
            ("read_file".into(), json!({"path": "status.txt"}).to_string()),
        ],
    };
    mock.turn(both)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})))
        .turn(text("Fixed status.txt."));
    let y = yaml("vgemini", &mock, GEMINI, stream, REGION_PROJECT);
    let run = run_with(&repo, &y, &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the stand-in refused none (thought signatures came back): {:?}", mock.refusals());
    for r in &reqs {
        assert_eq!(
            (r.body["model"].as_str(), r.body["stream"].as_bool()),
            (Some("google/gemini-2.5-pro"), Some(stream))
        );
        assert_eq!(r.body["tools"][0]["type"], "function");
    }
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    let asked = msgs.iter().rev().find(|m| m["role"] == "assistant").unwrap();
    let calls = asked["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "two calls, not one with joined arguments: {asked}");
    assert_eq!(calls[1]["function"]["arguments"], json!({"path": "status.txt"}).to_string());
    assert!(calls[0].pointer("/extra_content/google/thought_signature").is_some(), "{asked}");
    assert_eq!(msgs.iter().filter(|m| m["role"] == "tool").count(), 2);
    let report = run.report();
    assert_eq!(report["usage"]["prompt_tokens"], 300);
    assert_eq!(repo.show("hone/vgemini", "status.txt"), "fixed");
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_through_the_openai_compatible_endpoint_streamed() {
    gemini(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_through_the_openai_compatible_endpoint_not_streamed() {
    gemini(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_identity_federation_with_impersonation() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.external_account_file(&out.path("runner-temp/_github_home/gha-creds-1.json"));
    fix(&mock);
    let run = run_with(&repo, &yaml("vwif", &mock, CLAUDE, true, REGION_PROJECT), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.identity_log(), ["oidc: served", "sts: exchanged", "iam: impersonated"]);
    assert!(mock.requests().iter().all(|r| r.token.starts_with("ya29.iam-")), "the service account's token, not STS's");
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gclouds_file_when_no_variable_names_one() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    mock.authorized_user_file(&out.path("home/.config/gcloud/application_default_credentials.json"));
    fix(&mock);
    // The project is the file's `quota_project_id`; the region comes from the environment.
    let y = yaml("vgcloud", &mock, GEMINI, true, "");
    let run = run_with(&repo, &y, &out.env(None, &[("GOOGLE_CLOUD_LOCATION", "us-east5")])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.identity_log(), ["token: refresh token granted"]);
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_server_when_there_is_no_file() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    fix(&mock);
    let env =
        out.env(None, &[("GCE_METADATA_HOST", &mock.metadata_host()), ("GOOGLE_CLOUD_PROJECT", "hone-test-project")]);
    let run = run_with(&repo, &yaml("vgce", &mock, CLAUDE, false, REGION), &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.identity_log(), ["metadata: granted"], "asked with Metadata-Flavor: Google");
    assert!(mock.requests().iter().all(|r| r.token.starts_with("ya29.gce-")));
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_exhausted_is_retried_then_the_run_succeeds() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    mock.exhaust(2);
    fix(&mock);
    let run = run_with(&repo, &yaml("vquota", &mock, CLAUDE, true, REGION_PROJECT), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 5, "two refused for quota, then the three turns");
    assert_eq!(run.report()["faults"]["rate_limited"], 2);
    let retries: Vec<Value> = run.events().into_iter().filter(|e| e["type"] == "model_retry").collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0]["delay_ms"], 1000, "Retry-After is honoured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_fetched_again_before_they_expire() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    // Four minutes to live is less than hone's five-minute margin: every request needs a new one.
    mock.token_lifetime(240);
    fix(&mock);
    let run =
        run_with(&repo, &yaml("vrefresh", &mock, GEMINI, true, REGION_PROJECT), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let used: std::collections::BTreeSet<String> = mock.requests().into_iter().map(|r| r.token).collect();
    assert_eq!((mock.identity_log().len(), used.len()), (3, 3), "a fresh token for each of the three requests");
    assert_no_google_secret(&run, &mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_token_endpoint_refuses_is_an_auth_error_exit_3() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), false);
    fix(&mock);
    let run =
        run_with(&repo, &yaml("vrefused", &mock, CLAUDE, true, REGION_PROJECT), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(mock.requests().is_empty(), "no model request without a token");
    assert_eq!(mock.identity_log().len(), 1, "refused once, not retried: {:?}", mock.identity_log());
    let report = run.report();
    let message = report["errors"][0]["message"].as_str().unwrap_or_default().to_string();
    for part in ["`service_account`", "refused", "Invalid JWT Signature", "not deleted or disabled"] {
        assert!(message.contains(part), "{part} not in: {message}");
    }
    for line in key(false).lines().filter(|l| !l.starts_with("-----")) {
        run.assert_no_secret(line);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credentials_or_a_broken_file_is_exit_2_naming_the_variable() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let y = yaml("vnone", &mock, CLAUDE, true, REGION_PROJECT);
    let run = run_with(&repo, &y, &out.env(None, &[])).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("GOOGLE_APPLICATION_CREDENTIALS is not set"), "{}", run.stderr);
    assert_eq!(run.report()["status"], "invalid_input");
    let broken = out.path("keys/broken.json");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, "{\"type\": \"service_account\", \"private_key\": ").unwrap();
    let run = run_with(&repo, &y, &out.env(Some(&broken), &[])).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("GOOGLE_APPLICATION_CREDENTIALS") && run.stderr.contains("is not JSON"),
        "{}",
        run.stderr
    );
    assert!(mock.identity_log().is_empty() && mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_actions_credentials_file_in_the_checkout_is_used_and_hidden() {
    require!(Need::UserNamespaces);
    let repo =
        TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "gha-creds-*.json\n")]);
    let (out, mock) = (Outside::new(), MockVertex::start().await);
    // Where older google-github-actions/auth releases write it: the workspace, the checkout.
    let creds = mock.service_account_file(&repo.path.join("gha-creds-0123.json"), true);
    mock.turn(call("read_file", json!({"path": "gha-creds-0123.json"})));
    fix(&mock);
    let run =
        run_with(&repo, &yaml("vcheckout", &mock, CLAUDE, true, REGION_PROJECT), &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = claude_results(&mock, 1);
    assert!(!seen.contains(EMAIL) && !seen.contains("PRIVATE KEY"), "the model read the credentials: {seen}");
    assert_eq!(mock.identity_log(), ["token: service account granted"]);
    assert!(!repo.git(&["log", "-p", "--all"]).contains(EMAIL), "never committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_in_the_checkout_to_credentials_is_refused() {
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    let link = repo.path.join("creds.json");
    std::os::unix::fs::symlink(&creds, &link).unwrap();
    let y = yaml("vlink", &mock, CLAUDE, true, REGION_PROJECT);
    let run = run_with(&repo, &y, &out.env(Some(&link), &[])).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("inside the repository's work tree"), "{}", run.stderr);
    assert!(mock.identity_log().is_empty(), "the key was never used");
}

/// The tool results the last message of Claude request `i` carried.
fn claude_results(mock: &MockVertex, i: usize) -> String {
    let reqs = mock.requests();
    let last = reqs[i].body["messages"].as_array().unwrap().last().unwrap().clone();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_never_get_the_credentials_variable() {
    require!(Need::UserNamespaces);
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("keys/sa.json"), true);
    mock.turn(call("run_cmd", json!({"command": "env"})));
    fix(&mock);
    let y = with_policy(&repo, &yaml("venv", &mock, CLAUDE, true, REGION_PROJECT), OPEN_POLICY);
    let run = run_with(&repo, &y, &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let env = claude_results(&mock, 1);
    assert!(env.contains("PATH="), "env ran: {env}");
    assert!(!env.contains("GOOGLE_APPLICATION_CREDENTIALS") && !env.contains("sa.json"), "{env}");
}

/// On a GitHub runner `$RUNNER_TEMP` (where google-github-actions/auth writes the credentials
/// file) is under `$HOME`, which the jail shows through its overlay: the file itself is masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_cannot_read_the_credentials_file_in_the_home() {
    require!(Need::UserNamespaces);
    let (repo, out, mock) = (broken_repo(), Outside::new(), MockVertex::start().await);
    let creds = mock.service_account_file(&out.path("home/work/_temp/_github_home/gha-creds-1.json"), true);
    let probe = format!("test -s '{}' && echo 'READ''ABLE' || echo 'HID''DEN'", creds.display());
    mock.turn(call("run_cmd", json!({"command": probe})));
    fix(&mock);
    let y = with_policy(&repo, &yaml("vfile", &mock, CLAUDE, true, REGION_PROJECT), OPEN_POLICY);
    let run = run_with(&repo, &y, &out.env(Some(&creds), &[])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = claude_results(&mock, 1);
    assert!(seen.contains("HIDDEN"), "a command read the service account key at {}: {seen}", creds.display());
    assert!(!seen.contains(EMAIL));
}
