//! The transcript and `hone replay` (issue 16, part 1): a run writes `transcript.jsonl`, and
//! replaying it (with no model server and no key) does what the run did, or names the first
//! request where it differs.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

async fn replay(dir: &std::path::Path, cwd: &std::path::Path) -> Run {
    run_in(cwd, &["replay", dir.to_str().unwrap()], &[], cwd.join("unused-replay")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_leaves_a_transcript_that_replays_without_the_model_or_its_key() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "check.sh"})), false)
        .turn(call("run_cmd", json!({"command": "sh check.sh"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let yaml = with_policy(&repo, &job_yaml("rec", &mock.base_url, false), OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let t = lines(&run.report_dir.join("transcript.jsonl"));
    assert_eq!((t[0]["type"].as_str(), t[0]["version"].as_u64()), (Some("header"), Some(1)));
    let kinds: Vec<&str> = t.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "request").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "response").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "tool_result").count(), 3);
    assert_eq!(kinds[1], "check", "the baseline comes first");
    let second = t.iter().filter(|e| e["type"] == "request").nth(1).unwrap();
    assert_eq!(second["messages"].as_array().unwrap().len(), 2, "only what is new: the answer and its result");
    assert!(t.iter().any(|e| e["type"] == "tool_result" && e["content"].as_str().unwrap().contains("grep -qx fixed")));
    run.assert_no_secret(KEY);
    assert!(!std::fs::read_to_string(run.report_dir.join("transcript.jsonl")).unwrap().contains(KEY));
    drop(mock);

    // No model server, no key: the answers come from the transcript. The spec is the one the
    // run had (read from the clone, at the base), not what the checkout holds now.
    let spec = repo.path.join("job.yaml");
    let kept = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, "not: a job spec\n").unwrap();
    let r = replay(&run.report_dir, repo.dir.path()).await;
    std::fs::write(&spec, kept).unwrap();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with(
            "hone replay: the run did what the recorded one did (4 request(s), 3 tool result(s)); it ended success"
        ),
        "{}",
        r.stdout
    );
    assert!(repo.is_clean() && repo.head_branch() == "main", "the replay works in a clone");

    // A result that is not what the recorded run saw: the first divergence, by request.
    let path = run.report_dir.join("transcript.jsonl");
    let edited = std::fs::read_to_string(&path).unwrap().replace("grep -qx fixed", "grep -qx FIXED");
    std::fs::write(&path, edited).unwrap();
    let r = replay(&run.report_dir, repo.dir.path()).await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with("hone replay: diverged: request 2: the result of call call_1_0 differs"),
        "{}",
        r.stdout
    );
    let (recorded, now) = r.stdout.split_once("\n  now:").unwrap();
    assert!(recorded.contains("recorded:") && recorded.contains("grep -qx FIXED status.txt"), "{}", r.stdout);
    assert!(now.contains("grep -qx fixed status.txt"), "{}", r.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_from_another_version_or_none_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = replay(dir.path(), dir.path()).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("transcript.jsonl"), "{}", r.stderr);
    std::fs::write(dir.path().join("transcript.jsonl"), "{\"type\":\"header\",\"version\":9,\"hone_version\":\"9\",\"job\":\"j\",\"task\":\"t\",\"run_id\":\"r\",\"spec\":\"s\",\"repo\":\"r\",\"base_sha\":\"b\",\"provider\":\"p\",\"model\":\"m\"}\n").unwrap();
    let r = replay(dir.path(), dir.path()).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("transcript version 9; this hone reads version 1"), "{}", r.stderr);
}

/// A transcript recorded elsewhere (the quickstart's, in `tests/data/transcripts/`) is a
/// regression test: replayed on a repository with the same files, the run must do what it did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_transcript_is_a_regression_test() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let quick = root.join("examples/quickstart");
    let read = |f: &str| std::fs::read_to_string(quick.join("repo").join(f)).unwrap();
    let repo =
        crate::common::repo::TestRepo::new(&[("calc.py", &read("calc.py")), ("test_calc.py", &read("test_calc.py"))]);
    let dir = root.join("tests/data/transcripts/quickstart");
    let job = quick.join("job.yaml");
    let args = ["replay", dir.to_str().unwrap(), "--job", job.to_str().unwrap(), "--repo", repo.path.to_str().unwrap()];
    let r = run_in(repo.dir.path(), &args, &[], repo.dir.path().join("unused")).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("did what the recorded one did (3 request(s), 5 tool result(s)); it ended success"),
        "{}",
        r.stdout
    );
}

/// A request the provider refused as too long (hone compacted and asked again) replays in step;
/// and a replay inside a CI step is no CI step: no autofix, no workflow outputs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_replays_in_step_and_ci_variables_change_nothing() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "check.sh"})), false);
    mock.push(crate::common::mock_model::Reply::Status {
        code: 400,
        headers: vec![],
        body: r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#.into(),
    });
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let run = run_job(&repo, &job_yaml("long", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    drop(mock);
    let event = repo.dir.path().join("event.json");
    std::fs::write(&event, r#"{"number": 7, "pull_request": {"number": 7}}"#).unwrap();
    let output = repo.dir.path().join("actions_output");
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
    ];
    let args = ["replay", run.report_dir.to_str().unwrap()];
    let r = run_in(repo.dir.path(), &args, &env, repo.dir.path().join("unused")).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("(4 request(s), 2 tool result(s))"), "{}", r.stdout);
    assert!(!output.exists(), "no workflow outputs");
}

/// A transcript without the spec's digest (an older hone's) or with its spec outside its
/// repository (the quickstart's) replays only with the job named on the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_without_a_verifiable_spec_replays_with_a_named_job() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let quick = root.join("tests/data/transcripts/quickstart");
    let repo = broken_repo();
    let args = ["replay", quick.to_str().unwrap(), "--repo", repo.path.to_str().unwrap()];
    let r = run_in(repo.dir.path(), &args, &[], repo.dir.path().join("unused")).await;
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is outside the recorded repository") && r.stderr.contains("--job"), "{}", r.stderr);

    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let run = run_job(&repo, &job_yaml("old", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    drop(mock);
    let path = run.report_dir.join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(first).unwrap();
    assert_eq!(header["spec_sha256"].as_str().map(str::len), Some(64), "{header}");
    assert!(header.get("policy_sha256").is_none(), "the built-in policy has no file: {header}");
    header.as_object_mut().unwrap().remove("spec_sha256");
    std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
    let r = replay(&run.report_dir, repo.dir.path()).await;
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("records no digest of its job spec") && r.stderr.contains("--job"), "{}", r.stderr);
    let spec = repo.path.join("job.yaml");
    let args = ["replay", run.report_dir.to_str().unwrap(), "--job", spec.to_str().unwrap()];
    let r = run_in(repo.dir.path(), &args, &[], repo.dir.path().join("unused")).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&format!("hone replay: the job {} on commit", spec.display())), "{}", r.stderr);
}

/// A job whose policy turns the jail off replays only when the command line allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_off_replays_only_with_the_flag_that_allows_it() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let yaml = with_policy(&repo, &job_yaml("off", &mock.base_url, false), "version: 1\nsandbox: off\n");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    drop(mock);
    let r = replay(&run.report_dir, repo.dir.path()).await;
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("turns the jail off (`sandbox: off`)"), "{}", r.stderr);
    let args = ["replay", run.report_dir.to_str().unwrap(), "--allow-sandbox-off"];
    let r = run_in(repo.dir.path(), &args, &[], repo.dir.path().join("unused")).await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("hone replay: --allow-sandbox-off: the policy"), "{}", r.stderr);
    assert!(repo.is_clean() && repo.head_branch() == "main");
}
