//! The whole run against a mock model and a real repo: happy paths, fix loop, failure.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};

async fn happy_path(stream: bool) {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "check.sh"})), stream)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), stream)
        .turn(text("Set status.txt to `fixed` so check.sh passes."), stream);
    let run = run_job(&repo, &job_yaml("happy", &mock.base_url, stream), &[]).await;

    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(run.stdout.starts_with("hone: success commit "), "{}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 1, "stdout is one line: {}", run.stdout);
    let report = run.report();
    assert_eq!(report["status"], "success");
    assert_eq!(report["turns"], 3);
    assert_eq!(report["usage"]["total_tokens"], 360);
    assert_eq!(report["usage"]["cached_prompt_tokens"], 192, "prompt_tokens_details.cached_tokens, summed");
    assert_eq!(
        report["files_changed"],
        json!([{"path": "status.txt", "status": "modified", "added": 1, "removed": 1, "bytes": 13}]),
        "`broken\\n` out, `fixed\\n` in: 13 bytes"
    );
    assert_happy_commit(&repo, &report);
    assert_happy_requests(&mock, stream, &repo);
    mock.assert_pairing();
    run.assert_no_secret(KEY);
    assert_junit_valid(&run.report_dir.join("junit.xml"));
    assert_happy_events(&run, &report);
}

/// The commit is on hone's branch with a message that says what was verified and how to roll
/// back; the user's checkout is back on main, clean and unchanged.
fn assert_happy_commit(repo: &TestRepo, report: &Value) {
    let sha = report["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(repo.git(&["rev-parse", "hone/happy"]), sha);
    assert_eq!(repo.show("hone/happy", "status.txt"), "fixed");
    assert_eq!(repo.head_branch(), "main");
    assert!(repo.is_clean());
    assert_eq!(repo.file("status.txt"), "broken\n");
    let msg = repo.git(&["log", "-1", "--format=%B", "hone/happy"]);
    assert!(msg.starts_with("hone: Set status.txt to `fixed` so check.sh passes."), "{msg}");
    assert!(msg.contains("- check: `sh check.sh`: pass") && msg.contains("Hone-Job: happy"), "{msg}");
    assert!(
        msg.contains("### How it was verified")
            && msg.contains("- `check` (`sh check.sh`): before: fails (exit 1); after: pass"),
        "{msg}"
    );
    assert!(msg.contains("### How to roll back"), "{msg}");
}

/// Three requests, each with the key, the streaming mode and every tool; the read_file result
/// reached the model; the system prompt states the task, the repo root and the checks.
fn assert_happy_requests(mock: &MockModel, stream: bool, repo: &TestRepo) {
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r.body["stream"], stream);
        assert_eq!(r.auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
        let tools: Vec<&str> =
            r.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(
            tools,
            [
                "list_dir",
                "read_file",
                "glob_file_search",
                "grep",
                "write_file",
                "apply_patch",
                "undo_patch",
                "run_cmd",
                "request_clarification",
                "finish"
            ]
        );
        if stream {
            assert_eq!(r.body["stream_options"]["include_usage"], true);
        }
    }
    // The tool result for read_file reached the model.
    let last = reqs[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool");
    assert!(last["content"].as_str().unwrap().contains("grep -qx fixed status.txt"));
    // The system prompt states the task, the repo root and the checks.
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Make check.sh pass.")
            && system.contains("`sh check.sh`")
            && system.contains(repo.path.canonicalize().unwrap().to_str().unwrap())
    );
}

/// The events run from `run_started` to `run_completed` through every kind a run goes through,
/// the summary says success, and the states go INTAKE to DONE.
fn assert_happy_events(run: &Run, report: &Value) {
    let types: Vec<String> = run.events().iter().map(|e| e["type"].as_str().unwrap().to_string()).collect();
    assert_eq!(types.first().map(String::as_str), Some("run_started"));
    assert_eq!(types.last().map(String::as_str), Some("run_completed"));
    for t in [
        "turn_started",
        "turn_completed",
        "tool_call_started",
        "tool_call_completed",
        "verify_started",
        "verify_completed",
        "commit",
    ] {
        assert!(types.iter().any(|x| x == t), "missing event {t}: {types:?}");
    }
    assert!(run.read("summary.md").contains("✅ hone: `happy` — success"));
    assert_eq!(states(report), ["INTAKE", "CONTEXT_BUILDING", "EXECUTING", "VERIFYING", "SUMMARIZING", "DONE"]);
    let changes: Vec<String> = run
        .events()
        .iter()
        .filter(|e| e["type"] == "state_changed")
        .map(|e| e["to"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(changes, ["CONTEXT_BUILDING", "EXECUTING", "VERIFYING", "SUMMARIZING", "DONE"]);
}

fn states(report: &serde_json::Value) -> Vec<String> {
    report["states"].as_array().unwrap().iter().map(|s| s["state"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_streamed() {
    happy_path(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_not_streamed() {
    happy_path(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_fails_then_the_model_fixes_it() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "almost\n"})), true)
        .turn(text("Done."), true)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true)
        .turn(text("Fixed for real."), true);
    let run = run_job(&repo, &job_yaml("fixloop", &mock.base_url, true), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["fix_attempts"], 1);
    let verify: Vec<(u64, bool)> = report["verify"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["attempt"].as_u64().unwrap(), v["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(verify, [(1, false), (2, true)]);
    assert_eq!(
        states(&report),
        [
            "INTAKE",
            "CONTEXT_BUILDING",
            "EXECUTING",
            "VERIFYING",
            "RECOVERING",
            "EXECUTING",
            "VERIFYING",
            "SUMMARIZING",
            "DONE"
        ]
    );
    // The third request carries the failure as a user turn: the check, the command and its output.
    let reqs = mock.requests();
    let fb = reqs[2].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(fb["role"], "user");
    let fb = fb["content"].as_str().unwrap();
    assert!(
        fb.contains("## check `check` exited with 1")
            && fb.contains("$ sh check.sh")
            && fb.contains("status.txt says 'almost'"),
        "{fb}"
    );
    mock.assert_pairing();
    assert_junit_valid(&run.report_dir.join("junit.xml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_still_failing_after_the_fix_attempts_fail_the_run_without_a_commit() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "nope\n"})), false)
        .turn(text("Done."), false)
        .turn(text("Still done."), false);
    let yaml = job_yaml("stillfail", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 1");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.starts_with("hone: failed"), "{}", run.stdout);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert!(report["commit"].is_null());
    assert_eq!(report["errors"][0]["code"], "E_BUILD_FAIL");
    assert_eq!(states(&report).last().map(String::as_str), Some("FAILED"));
    assert!(states(&report).contains(&"SUMMARIZING".to_string()));
    // No commit anywhere on a branch; the work is saved on a private ref; the checkout is restored.
    assert_eq!(repo.git(&["rev-parse", "main"]), report["base_sha"].as_str().unwrap(), "main did not move");
    assert!(repo.git(&["branch", "--list", "hone/stillfail"]).is_empty(), "no branch is left behind");
    assert_eq!(report["saved_ref"], "refs/hone/stillfail/failed");
    assert_eq!(repo.show("refs/hone/stillfail/failed", "status.txt"), "nope");
    assert!(repo.is_clean() && repo.head_branch() == "main");
    let junit = run.read("junit.xml");
    assert!(junit.contains("<failure") && junit.contains("check (attempt 2)"), "{junit}");
    assert_junit_valid(&run.report_dir.join("junit.xml"));
    let summary = run.read("summary.md");
    assert!(summary.contains("❌"));
    assert!(
        summary.contains("### What blocked the run") && summary.contains("Run `sh check.sh` and fix what fails"),
        "{summary}"
    );
    assert!(summary.contains("git checkout -b wip refs/hone/stillfail/failed"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dirty_work_tree_is_refused() {
    let repo = broken_repo();
    std::fs::write(repo.path.join("status.txt"), "uncommitted\n").unwrap();
    let mock = MockModel::start().await;
    let run = run_job(&repo, &job_yaml("dirty", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("uncommitted changes") && run.stderr.contains("status.txt"), "{}", run.stderr);
    assert!(mock.requests().is_empty());
    assert_eq!(repo.file("status.txt"), "uncommitted\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_flag_streams_events_on_stdout() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true).turn(text("ok"), true);
    let run = run_job(&repo, &job_yaml("jsonout", &mock.base_url, true), &["--json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<serde_json::Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is JSONL only")).collect();
    assert_eq!(lines.len(), run.events().len());
    assert_eq!(lines.last().unwrap()["type"], "run_completed");
    assert_eq!(lines.last().unwrap()["exit_code"], 0);
}

/// A spec kept outside the repository (in a separate config checkout) names the repository with
/// `repo.path` and keeps its reports next to it: the run works on the repository it names, and
/// neither the spec nor the reports reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_outside_the_repository_works_on_the_repository_it_names() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("ok"), false);
    let run = run_job_outside(&repo, &job_yaml("outside", &mock.base_url, false), &[], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report_dir, repo.dir.path().join("reports"));
    assert_eq!(run.report()["status"], "success");
    assert_eq!(committed(&repo, "hone/outside"), ["status.txt"]);
    assert!(!repo.path.join(".hone/reports").exists(), "the reports went into the repository");
    assert!(repo.is_clean() && repo.head_branch() == "main");
}

/// The README's first command: the bundled offline example, run on a copy of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_quickstart_fixes_its_bug() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart");
    let dir = tempfile::tempdir().unwrap();
    for f in ["job.yaml", "script.yaml", "repo/calc.py", "repo/test_calc.py"] {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(f), &to).unwrap();
    }
    // As the README runs it: a relative spec path, from the directory above it.
    let run = run_in(dir.path(), &["run", "job.yaml"], &[], dir.path().join(".hone/reports")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("hone: success commit "), "{}", run.stdout);
    let scratch = dir.path().join(".hone/scratch/quickstart");
    let fixed = crate::common::repo::git(&scratch, &["show", "hone/quickstart:calc.py"]);
    assert!(fixed.contains("return a + b"), "{fixed}");
    assert_junit_valid(&run.report_dir.join("junit.xml"));
}
