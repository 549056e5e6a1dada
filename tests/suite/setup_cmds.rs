//! The job's setup commands (issue 15, part 1): they run before the baseline in a jail of their
//! own (network only with the policy's `setup.network`), what they make is never the change and
//! is protected from the model's commands, and a failing one stops the run before any model
//! request, named, with its output.

use super::jail_support::{cmd, fix, result_of, write};
use crate::common::mock_model::MockModel;
use crate::common::*;

/// A spec with `setup` (YAML list lines) inserted before `verify:`, and `check` as its check.
fn spec_with_setup(name: &str, mock: &MockModel, setup: &str, check: &str) -> String {
    job_yaml(name, &mock.base_url, false)
        .replace("verify:\n", &format!("setup:\n{setup}verify:\n"))
        .replace(r#"run: "sh check.sh""#, &format!("run: \"{check}\""))
}

/// The port the mock listens on.
fn port(mock: &MockModel) -> String {
    mock.base_url.split(':').nth(2).unwrap_or_default().chars().take_while(char::is_ascii_digit).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_runs_first_and_what_it_makes_is_never_the_change() {
    require!(Need::UserNamespaces);
    // A fresh clone without .gitignore: setup's .venv and node_modules are untracked, not ignored.
    let repo = broken_repo();
    let mock = MockModel::start().await;
    // It also rewrites a tracked file, as `npm install` rewrites a lockfile.
    let setup = "  - { name: deps, run: \"mkdir -p .venv/bin node_modules && echo tool > .venv/bin/tool && echo pkg > node_modules/pkg.js && echo locked >> src/lib.txt\", timeout: 30s }\n";
    // The check needs what setup installed.
    let yaml = spec_with_setup("setup-ok", &mock, setup, "test -f .venv/bin/tool && sh check.sh");
    // The model's writes there land in the jail's overlay, never in the work tree or the change.
    let tamper = "echo evil > node_modules/pkg.js; echo new > node_modules/new.js; echo tampered\n";
    mock.turn(write("t.sh", tamper), false).turn(cmd("sh t.sh; rm -f t.sh"), false);
    fix(&mock);
    let yaml = with_policy(&repo, &yaml, OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(committed(&repo, "hone/setup-ok"), ["status.txt"], "setup's files are not the change");
    assert!(result_of(&mock, 1).contains("tampered"));
    let report = run.report();
    assert_eq!(report["setup"][0]["name"], "deps");
    assert_eq!(report["setup"][0]["passed"], true);
    assert_eq!(report["baseline"][0]["passed"], false, "the baseline ran after setup: {report:#}");
    let junit = std::fs::read_to_string(run.report_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("name=\"hone.setup-ok.setup\""), "{junit}");
    let summary = std::fs::read_to_string(run.report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("### Setup") && summary.contains("| `deps` | pass |"), "{summary}");
    assert!(run.events().iter().any(|e| e["type"] == "setup_completed" && e["name"] == "deps"));
    // The checkout is as it was: what setup made was removed with the run's other leftovers.
    assert!(!repo.path.join("node_modules").exists() && !repo.path.join(".venv").exists());
    assert_eq!(std::fs::read_to_string(repo.path.join("src/lib.txt")).unwrap(), "hello\n", "the tracked file is back");
    assert!(repo.git(&["status", "--porcelain"]).is_empty(), "{}", repo.git(&["status", "--porcelain"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_setup_stops_the_run_before_any_request() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let setup = "  - { name: deps, run: \"echo resolving; echo 'E: Unable to locate package libfoo' >&2; exit 3\" }\n  - { name: never, run: \"touch never-ran\" }\n";
    let yaml = spec_with_setup("setup-fail", &mock, setup, "sh check.sh");
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(mock.requests().is_empty(), "the model was asked although setup failed");
    let report = run.report();
    assert_eq!(report["status"], "invalid_input");
    assert_eq!(report["errors"][0]["code"], "E_SETUP");
    let msg = report["errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("`deps`") && msg.contains("exited with 3") && msg.contains("Unable to locate package libfoo"),
        "{msg}"
    );
    assert_eq!(report["setup"].as_array().unwrap().len(), 1, "setup stops at the first failure");
    assert!(!repo.path.join("never-ran").exists());
    assert!(report["baseline"].as_array().unwrap().is_empty(), "no check ran");
    assert!(run.stdout.contains("E_SETUP") || run.stderr.contains("E_SETUP"), "{}\n{}", run.stdout, run.stderr);
    let junit = std::fs::read_to_string(run.report_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("hone.setup-fail.setup") && junit.contains("<failure"), "{junit}");
    assert!(repo.git(&["branch", "--list", "hone/setup-fail"]).is_empty());
}

/// Setup reaches the network only when the policy says `setup.network: true`; the model's
/// commands in the same run still do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_has_network_only_when_the_policy_gives_it() {
    require!(Need::UserNamespaces);
    for open in [false, true] {
        let repo = broken_repo();
        let mock = MockModel::start().await;
        let connect = format!(
            "python3 -c \\\"import socket; socket.create_connection(('127.0.0.1', {}), 5); print('CONNECTED')\\\"",
            port(&mock)
        );
        let setup = format!("  - {{ name: fetch, run: \"{connect}\" }}\n");
        let yaml = spec_with_setup(&format!("setup-net-{open}"), &mock, &setup, "sh check.sh");
        mock.turn(cmd(&format!("{}; echo net-done", connect.replace("\\\"", "\""))), false);
        fix(&mock);
        let policy = if open { format!("{OPEN_POLICY}setup:\n  network: true\n") } else { OPEN_POLICY.to_string() };
        let yaml = with_policy(&repo, &yaml, &policy);
        let run = run_job(&repo, &yaml, &[]).await;
        let report = run.report();
        if !open {
            assert_eq!(run.code, 2, "setup reached the network without `setup.network`: {report:#}");
            assert_eq!(report["errors"][0]["code"], "E_SETUP");
            continue;
        }
        assert_eq!(run.code, 0, "{}\n{report:#}", run.stderr);
        assert!(report["setup"][0]["output_tail"].as_str().unwrap().contains("CONNECTED"));
        let net = result_of(&mock, 0);
        assert!(
            net.contains("net-done") && !net.contains("CONNECTED"),
            "the model's command reached the network: {net}"
        );
        assert_eq!(report["policy"]["sandbox"]["network_isolated"], true, "the run's jail has no network");
    }
}
