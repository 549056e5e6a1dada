//! The harness itself (issue 11): the default helpers start hone the way users do, the commit
//! check catches what must never be committed, the mock model refuses what real servers refuse
//! and fails a test that did not expect it, and `require!` never lets a test skip silently.
//! Each of these would fail on the old helpers and mocks.

use crate::common::commits::{RunContext, commit_problems, junit_files, patch_targets};
use crate::common::mock_model::{Dialect, MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::require::{Decision, Need, decide, is_waived};
use crate::common::*;
use serde_json::{Value, json};

fn fix(mock: &MockModel) {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
}

/// The old fixtures kept the spec and the reports outside the repository and ran hone on an
/// absolute spec path from elsewhere; the defaults now commit the spec (and the policy) in a
/// repository without `.gitignore`, run `hone run job.yaml` from it, and read the default reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_helpers_run_hone_the_way_users_do() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    fix(&mock);
    let yaml = with_policy(&repo, &job_yaml("layout", &mock.base_url, false), OPEN_POLICY);
    assert!(!yaml.contains("repo:") && !yaml.contains("report:"), "{yaml}");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report_dir, repo.path.join(".hone/reports"));
    let report = run.report();
    assert_eq!(report["repo"].as_str().unwrap(), repo.path.canonicalize().unwrap().to_str().unwrap());
    assert!(run.stdout.contains(".hone/reports"), "{}", run.stdout);
    // The spec and the policy are committed (and pushed), and nothing is ignored.
    let tracked = repo.git(&["ls-files"]);
    assert!(tracked.lines().any(|l| l == "job.yaml") && tracked.lines().any(|l| l == "policy.yaml"), "{tracked}");
    assert!(!repo.path.join(".gitignore").exists());
    assert!(crate::common::repo::git(&repo.origin, &["ls-tree", "--name-only", "main"]).contains("job.yaml"));
    let policy = repo.path.canonicalize().unwrap().join("policy.yaml");
    assert_eq!(report["policy"]["source"], policy.to_str().unwrap(), "the policy committed next to the spec");
    // The reports sit inside the work tree and are still never part of the change.
    assert!(repo.path.join(".hone/reports/events.jsonl").is_file());
    assert_eq!(committed(&repo, "hone/layout"), ["status.txt"]);
    assert!(repo.is_clean());
}

/// A repository whose `main` has status.txt and check.sh, and a fake `success` report whose
/// commit (on `hone/fake`) adds `files` on top of main.
fn fake_success(files: &[(&str, &str)], files_changed: &[&str], tool_calls: Value) -> (TestRepo, Value) {
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH)]);
    let base = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "-b", "hone/fake"]);
    for (name, body) in files {
        let p = repo.path.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "fake"]);
    let sha = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "main"]);
    let changed: Vec<Value> =
        files_changed.iter().map(|p| json!({"path": p, "status": "added", "added": 1, "removed": 0})).collect();
    let report = json!({
        "status": "success", "repo": repo.path.canonicalize().unwrap(), "base_sha": base,
        "commit": {"sha": sha, "branch": "hone/fake", "message": "m"},
        "files_changed": changed, "tool_calls": tool_calls,
    });
    (repo, report)
}

fn wrote(path: &str) -> Value {
    json!({"name": "write_file", "args": json!({"path": path, "content": "x"}).to_string(), "ok": true, "code": null})
}

fn problems(repo: &TestRepo, report: &Value, junit: &[&str]) -> String {
    let ctx = RunContext { junit: junit.iter().map(|s| s.to_string()).collect(), served: None };
    commit_problems(report, &repo.path.join(".hone/reports"), &ctx).join("\n")
}

/// The first-runs bugs the old suite let through: reports and JUnit files committed, a commit
/// that is not what the report says, a `success` with nothing in it. Each is caught.
#[test]
fn the_commit_check_catches_what_must_never_be_committed() {
    // Right: the model wrote status.txt, and that is the commit.
    let (repo, report) = fake_success(&[("status.txt", "fixed\n")], &["status.txt"], json!([wrote("status.txt")]));
    assert_eq!(problems(&repo, &report, &[]), "");

    // The reports, committed along with the change (and listed, so only the exclusion sees it).
    let (repo, report) = fake_success(
        &[("status.txt", "fixed\n"), (".hone/reports/events.jsonl", "{}\n")],
        &["status.txt", ".hone/reports/events.jsonl"],
        json!([wrote("status.txt"), {"name": "run_cmd", "args": "{\"command\":\"true\"}", "ok": true, "code": null}]),
    );
    let p = problems(&repo, &report, &[]);
    assert!(p.contains("hone's own directory was committed: .hone/reports/events.jsonl"), "{p}");
    assert!(p.contains("the report dir (.hone/reports) was committed"), "{p}");

    // A check's JUnit file.
    let (repo, report) = fake_success(
        &[("status.txt", "fixed\n"), ("unit-junit.xml", "<testsuite/>\n")],
        &["status.txt", "unit-junit.xml"],
        json!([wrote("status.txt"), {"name": "run_cmd", "args": "{\"command\":\"true\"}", "ok": true, "code": null}]),
    );
    let spec = "verify:\n  - { name: check, run: \"sh unit.sh\", junit: unit-junit.xml, timeout: 30s }\n";
    let junit = junit_files(spec);
    assert_eq!(junit, ["unit-junit.xml"]);
    assert!(
        problems(&repo, &report, &["unit-junit.xml"]).contains("a check's JUnit file was committed: unit-junit.xml")
    );

    // A file no tool wrote, while the model ran no command (a check's leftover), and a report
    // that does not list it.
    let (repo, report) = fake_success(
        &[("status.txt", "fixed\n"), ("check.log", "ran\n")],
        &["status.txt"],
        json!([wrote("status.txt"), {"name": "run_cmd", "args": "{\"command\":\"curl x\"}", "ok": false, "code": "E_POLICY_DENIED"}]),
    );
    let p = problems(&repo, &report, &[]);
    assert!(p.contains("are not report.json's files_changed"), "{p}");
    assert!(p.contains("[\"check.log\"] were never written by the model's tools"), "{p}");

    // An empty `success` commit.
    let (repo, report) = fake_success(&[], &[], json!([]));
    assert!(problems(&repo, &report, &[]).contains("changes nothing against the base"));

    // A `success` without a commit.
    let (repo, mut report) = fake_success(&[("status.txt", "fixed\n")], &["status.txt"], json!([]));
    report["commit"] = Value::Null;
    assert!(problems(&repo, &report, &[]).contains("`success` without a commit"));

    // apply_patch targets count as written; a patch's paths are read without a/ and b/.
    assert_eq!(patch_targets("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"), ["x.py", "x.py"]);
    assert_eq!(patch_targets("--- /dev/null\n+++ b/new.txt\n"), ["new.txt"]);
    let patch = json!({"patch": "--- /dev/null\n+++ b/status.txt\n@@ -0,0 +1 @@\n+x\n"}).to_string();
    let (repo, report) = fake_success(
        &[("status.txt", "fixed\n")],
        &["status.txt"],
        json!([{"name": "apply_patch", "args": patch, "ok": true, "code": null}]),
    );
    assert_eq!(problems(&repo, &report, &[]), "");
}

/// The mock refuses, as OpenAI and llama-server do, a body that is not JSON, arguments that are
/// not JSON (500), a tool message that answers no open call and a call left without its result
/// (400); a valid history gets the scripted answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_strict_openai_mock_refuses_what_real_servers_refuse() {
    let mock = MockModel::start().await;
    mock.turn(text("hello"), false);
    let url = format!("{}/chat/completions", mock.base_url);
    let client = reqwest::Client::new();
    let post = |body: String| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let r = client.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let call = |id: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": "list_dir", "arguments": args}});
    let sys = json!({"role": "system", "content": "s"});
    let user = json!({"role": "user", "content": "u"});
    let orphan = json!({"messages": [sys, user, {"role": "tool", "tool_call_id": "call_9", "content": "x"}]});
    let unanswered = json!({"messages": [sys, user, {"role": "assistant", "content": null, "tool_calls": [call("a", "{}"), call("b", "{}")]},
                                          {"role": "tool", "tool_call_id": "a", "content": "x"}, {"role": "user", "content": "go on"}]});
    let bad_args = json!({"messages": [sys, user, {"role": "assistant", "content": null, "tool_calls": [call("a", "{\"path\": ")]},
                                        {"role": "tool", "tool_call_id": "a", "content": "x"}]});
    let good = json!({"messages": [sys, user, {"role": "assistant", "content": null, "tool_calls": [call("a", "{}")]},
                                    {"role": "tool", "tool_call_id": "a", "content": "x"}]});
    let (code, body) = post("{\"messages\": [".into()).await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = post(orphan.to_string()).await;
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("role 'tool' must be a response to a preceding message with 'tool_calls'"), "{body}");
    assert!(body.contains("orphan tool message at 2"), "{body}");
    let (code, body) = post(unanswered.to_string()).await;
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("have no result"), "{body}");
    let (code, body) = post(bad_args.to_string()).await;
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("Failed to parse tool call arguments as JSON"), "{body}");
    assert_eq!(mock.remaining(), 1, "a refused request consumes no scripted answer");
    let (code, body) = post(good.to_string()).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(mock.rejected(), 4);
    mock.expect_rejections(4);
}

/// Anthropic answers 400 `invalid_request_error` to a `tool_use.input` that is not an object, a
/// `tool_result` that answers nothing, a `tool_use` left unanswered, results after other
/// content, and roles that do not alternate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_strict_anthropic_mock_refuses_what_anthropic_refuses() {
    let mock = MockModel::start_as(Dialect::Anthropic).await;
    mock.turn(text("hello"), false);
    let url = format!("{}/v1/messages", mock.base_url);
    let client = reqwest::Client::new();
    let use_ = |input: Value| json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "list_dir", "input": input}]});
    let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "x"});
    let user = json!({"role": "user", "content": "u"});
    let cases = [
        json!({"messages": [user, use_(json!("{\"path\": ")), {"role": "user", "content": [result("t1")]}]}),
        json!({"messages": [user, use_(json!({})), {"role": "user", "content": [result("t2")]}]}),
        json!({"messages": [user, use_(json!({})), {"role": "user", "content": [{"type": "text", "text": "go on"}]}]}),
        json!({"messages": [user, use_(json!({})), {"role": "user", "content": [{"type": "text", "text": "go on"}, result("t1")]}]}),
        json!({"messages": [user, user]}),
    ];
    for (i, c) in cases.iter().enumerate() {
        let r = client.post(&url).json(c).send().await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        assert_eq!(status, 400, "case {i}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "case {i}: {body}");
    }
    let good = json!({"messages": [user, use_(json!({"path": "."})), {"role": "user", "content": [result("t1"), {"type": "text", "text": "more"}]}]});
    let r = client.post(&url).json(&good).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    mock.expect_rejections(cases.len());
}

/// A rejection the test did not declare fails the test when the mock goes away; a declared one
/// does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_rejection_fails_the_test() {
    let client = reqwest::Client::new();
    let undeclared = MockModel::start().await;
    client.post(format!("{}/chat/completions", undeclared.base_url)).body("not json").send().await.unwrap();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(undeclared)));
    let msg = dropped.expect_err("dropping a mock with an undeclared rejection must fail the test");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("refused 1 request(s)") && msg.contains("declared 0"), "{msg}");
    let declared = MockModel::start().await;
    declared.expect_rejections(1);
    client.post(format!("{}/chat/completions", declared.base_url)).body("not json").send().await.unwrap();
    drop(declared);
}

/// `require!` goes on when the capability is there, fails the test naming what is missing, and
/// returns only when the capability is waived by name.
#[test]
fn require_fails_unless_waived_by_name() {
    assert_eq!(decide("t", Need::Root, Ok(()), None), Decision::GoOn);
    assert_eq!(
        decide("t", Need::Root, Ok(()), Some("root")),
        Decision::GoOn,
        "a waiver never skips a test that can run"
    );
    assert_eq!(decide("t", Need::Landlock, Err("ABI 0".into()), Some("root, landlock")), Decision::Waived);
    assert!(is_waived(Need::UserNamespaces, Some("root,userns")));
    assert!(!is_waived(Need::UserNamespaces, Some("root")));
    assert!(!is_waived(Need::UserNamespaces, None));
    let Decision::Fail(msg) = decide("t", Need::Landlock, Err("ABI 0".into()), Some("root")) else {
        panic!("a missing capability that is not waived must fail the test");
    };
    assert!(
        msg.contains("t needs landlock") && msg.contains("ABI 0") && msg.contains("HONE_TEST_WAIVE=landlock"),
        "{msg}"
    );
    // And this machine has what the suite's own checks need, or says which it lacks.
    for need in [Need::Root, Need::UserNamespaces, Need::Landlock, Need::Xmllint, Need::Mermaid] {
        if let Err(why) = need.check() {
            assert!(!why.is_empty(), "{need:?}");
        }
    }
}

/// A secret check on reports that do not exist used to pass (the missing file read as empty):
/// now a missing or empty report fails it.
#[test]
fn the_secret_check_fails_when_a_report_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let run = Run { code: 0, stdout: String::new(), stderr: String::new(), report_dir: dir.path().join("reports") };
    let missing = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.assert_no_secret(KEY)));
    assert!(missing.is_err(), "no reports at all passed the secret check");
    std::fs::create_dir_all(&run.report_dir).unwrap();
    for f in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
        std::fs::write(run.report_dir.join(f), "{}\n").unwrap();
    }
    run.assert_no_secret(KEY);
    std::fs::write(run.report_dir.join("summary.md"), "").unwrap();
    let empty = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.assert_no_secret(KEY)));
    assert!(empty.is_err(), "an empty summary.md passed the secret check");
}
