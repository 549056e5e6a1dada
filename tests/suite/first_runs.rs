//! First runs the way users start: a fresh clone with no `.gitignore`, the spec committed inside
//! the repository (at its root or under `.github/`), hone run from the repository with a relative
//! spec path and the default report dir. The commit holds the model's change and nothing else.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

fn fix(mock: &MockModel) {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
}

/// Tracked files are as they were and HEAD is back on main.
fn assert_restored(repo: &TestRepo) {
    assert_eq!(repo.head_branch(), "main");
    assert_eq!(repo.git(&["status", "--porcelain", "--untracked-files=no"]), "");
    assert_eq!(repo.file("status.txt"), "broken\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_run_in_a_fresh_clone_commits_only_the_models_change_and_a_second_run_works() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("first", &mock.base_url), &[]);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/first"), ["status.txt"]);
    let report = run.report();
    assert_eq!(report["status"], "success");
    assert_eq!(report["files_changed"].as_array().unwrap().len(), 1);
    for f in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
        assert!(repo.path.join(".hone/reports").join(f).is_file(), "{f} is missing");
    }
    assert_restored(&repo);
    // The reports left in .hone/ do not make the next run refuse the repository as dirty.
    fix(&mock);
    let again = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(again.code, 0, "stdout: {}\nstderr: {}", again.stdout, again.stderr);
    assert_eq!(committed(&repo, "hone/first"), ["status.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_relative_report_dir_inside_the_repo_is_never_committed() {
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", &user_spec("explicit", &mock.base_url), &[]);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml", "--report-dir", ".hone/reports"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/explicit"), ["status.txt"]);
    // An absolute report dir elsewhere in the repository, too.
    fix(&mock);
    let abs = repo.path.join("out/reports");
    let run = run_in(&repo.path, &["run", "job.yaml", "--report-dir", abs.to_str().unwrap()], &[], abs.clone()).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/explicit"), ["status.txt"]);
    assert!(abs.join("report.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junit_file_a_check_writes_inside_the_repo_is_never_committed() {
    let mock = MockModel::start().await;
    let check = "sh check.sh; code=$?; if [ $code = 0 ]; then t='<testcase name=\"t\"/>'; else t='<testcase name=\"t\"><failure/></testcase>'; fi; echo \"<testsuite>$t</testsuite>\" > unit-junit.xml; exit $code";
    let spec = user_spec("junit", &mock.base_url).replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        "  - { name: check, run: \"sh unit.sh\", junit: unit-junit.xml, timeout: 30s }",
    );
    let repo = user_repo("job.yaml", &spec, &[("unit.sh", check)]);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/junit"), ["status.txt"]);
    assert_eq!(run.report()["verify"][0]["failing_tests"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_under_dot_github_uses_the_repository_that_contains_it() {
    let mock = MockModel::start().await;
    let repo = user_repo(".github/hone/job.yaml", &user_spec("nested", &mock.base_url), &[]);
    fix(&mock);
    let run = run_user(&repo, &["run", ".github/hone/job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/nested"), ["status.txt"]);
    assert!(repo.path.join(".hone/reports/report.json").is_file(), "the default report dir is at the repository root");
    assert_restored(&repo);
    // From a subdirectory, with the spec given relative to it.
    fix(&mock);
    let sub = repo.path.join(".github");
    let run = run_in(&sub, &["run", "hone/job.yaml"], &[], repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_flag_satisfies_a_missing_task() {
    let mock = MockModel::start().await;
    let spec = user_spec("notask", &mock.base_url).replace("task: Make check.sh pass.\n", "");
    let repo = user_repo("job.yaml", &spec, &[]);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml", "--task", "Make check.sh pass, please."]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let system = mock.requests()[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("Make check.sh pass, please."), "{system}");
    // Without either, the error names both ways to give one.
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("missing required key `task`") && run.stderr.contains("--task"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_job_needs_no_spec_file() {
    let mock = MockModel::start().await;
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH)]);
    // A one-off job has the spec defaults: streamed answers.
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), true)
        .turn(text("Set status.txt to fixed."), true);
    let args = ["run", "--task", "Make check.sh pass.", "--model", "mock-model", "--verify", "sh check.sh"];
    let env = [("OPENAI_BASE_URL", mock.base_url.as_str())];
    let run = run_in(&repo.path, &args, &env, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let report = run.report();
    let branch = report["branch"].as_str().unwrap().to_string();
    assert_eq!(branch, "hone/make-check-sh-pass");
    assert_eq!(committed(&repo, &branch), ["status.txt"]);
    assert_eq!(report["verify"][0]["command"], "sh check.sh");
    assert_eq!(mock.requests()[0].body["model"], "mock-model");
}

/// A first run (open policy) whose model runs `cmd`, then fixes the check; the run must succeed.
async fn run_command_then_fix(name: &str, cmd: &str) -> (Run, TestRepo) {
    let mock = MockModel::start().await;
    let spec = format!("{}policy: policy.yaml\n", user_spec(name, &mock.base_url));
    let repo = user_repo("job.yaml", &spec, &[("policy.yaml", OPEN_POLICY)]);
    mock.turn(call("run_cmd", json!({"command": cmd})), false);
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    (run, repo)
}

/// What is in `dir`.
fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir).unwrap().filter_map(Result::ok).map(|e| e.path()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_are_never_written_through_a_symlink_or_into_a_fifo() {
    let outside = tempfile::tempdir().unwrap();
    let cmd = format!(
        "mkfifo .hone/reports/summary.md.fifo && ln -sf {o}/stolen.json .hone/reports/report.json && mv .hone/reports/summary.md.fifo .hone/reports/summary.md && ln -s {o} .hone/reports/junit.xml",
        o = outside.path().display()
    );
    let (run, repo) = run_command_then_fix("symlinks", &cmd).await;
    let leaked = entries(outside.path());
    assert!(leaked.is_empty(), "reports were written outside the report dir: {leaked:?}");
    let dir = repo.path.join(".hone/reports");
    for f in ["report.json", "summary.md", "junit.xml", "events.jsonl"] {
        let m = std::fs::symlink_metadata(dir.join(f)).unwrap();
        assert!(m.file_type().is_file(), "{f} is not a regular file: {:?}", m.file_type());
    }
    assert!(run.read("summary.md").contains("success"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_dir_replaced_by_a_symlink_is_replaced_not_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let cmd = format!("rm -rf .hone/reports && ln -s {} .hone/reports", outside.path().display());
    let (run, repo) = run_command_then_fix("dirlink", &cmd).await;
    let leaked = entries(outside.path());
    assert!(leaked.is_empty(), "reports were written through the symlink: {leaked:?}");
    let dir = repo.path.join(".hone/reports");
    assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
    assert_eq!(run.report()["status"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ending_writes_the_reports_and_clears_old_ones() {
    // An invalid spec: exit 2, and the reports say so.
    let mock = MockModel::start().await;
    let spec = user_spec("bad", &mock.base_url).replace("max_turns: 10", "max_turn: 10");
    let repo = user_repo("job.yaml", &spec, &[]);
    let dir = repo.path.join(".hone/reports");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pr.md"), "stale").unwrap();
    std::fs::write(dir.join("report.json"), "{\"status\": \"success\"}").unwrap();
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "invalid_input");
    assert_eq!(report["exit_code"], 2);
    assert_eq!(report["errors"][0]["code"], "E_SPEC");
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("max_turn"), "{report}");
    assert!(!dir.join("pr.md").exists(), "a report from an earlier run was left");
    assert!(run.read("summary.md").contains("invalid_input"));
    assert_junit_valid(&dir.join("junit.xml"));
    assert!(run.stdout.contains("E_SPEC"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_model_ends_with_reports_that_say_why() {
    let spec = user_spec("unreachable", "http://127.0.0.1:9/v1").replace("plan: false\n", "");
    let repo = user_repo("job.yaml", &spec, &[]);
    let run = run_user(&repo, &["run", "job.yaml"]).await;
    assert_eq!(run.code, 3, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("bug in hone"), "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "error");
    assert_eq!(report["errors"][0]["code"], "E_MODEL");
    assert!(run.stdout.contains("E_MODEL") && run.stdout.contains("connect"), "{}", run.stdout);
    assert_junit_valid(&repo.path.join(".hone/reports/junit.xml"));
    assert_restored(&repo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intake_failure_under_actions_still_sets_the_outputs_and_annotates() {
    let mock = MockModel::start().await;
    let spec = user_spec("actionsbad", &mock.base_url).replace("max_turns: 10", "max_turn: 10");
    let repo = user_repo("job.yaml", &spec, &[]);
    let (out, summary) = (repo.dir.path().join("gh-output"), repo.dir.path().join("gh-summary"));
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", out.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let run = run_in(&repo.path, &["run", "job.yaml"], &env, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let outputs = std::fs::read_to_string(&out).expect("GITHUB_OUTPUT was written");
    assert!(outputs.contains("invalid_input") && outputs.contains("report.json"), "{outputs}");
    assert!(std::fs::read_to_string(&summary).unwrap_or_default().contains("invalid_input"));
    assert!(run.stdout.lines().any(|l| l.starts_with("::error title=hone%3A invalid_input::E_SPEC")), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_line_mistakes_are_refused_and_create_nothing() {
    let mock = MockModel::start().await;
    let spec = user_spec("cli", &mock.base_url).replace("  name: mock-model\n", "");
    let repo = user_repo("job.yaml", &spec, &[]);
    // --verify belongs to one-off jobs.
    let run = run_user(&repo, &["run", "job.yaml", "--model", "mock-model", "--verify", "false"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("`--verify` is for a one-off job"), "{}", run.stderr);
    // A mistyped --repo creates no directory.
    let typo = repo.dir.path().join("typo-dir");
    let run = run_user(&repo, &["run", "job.yaml", "--model", "mock-model", "--repo", typo.to_str().unwrap()]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("does not exist"), "{}", run.stderr);
    assert!(!typo.exists(), "a directory was made for a mistyped --repo");
    // --model gives the spec the model name it lacks.
    fix(&mock);
    let run = run_user(&repo, &["run", "job.yaml", "--model", "mock-model"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.requests()[0].body["model"], "mock-model");
}
