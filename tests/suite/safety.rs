//! Safety in real runs: escapes through every file tool, network isolation, secrets in every
//! sink, writes into .git and .github, a poisoned git config, and process-group cleanup.

use crate::common::mock_model::{MockModel, Turn, call, text};
use crate::common::*;
use base64::Engine;
use serde_json::json;

/// The content of the tool results in the request after turn `i` (0-based).
fn tool_results(mock: &MockModel, request: usize) -> Vec<String> {
    let reqs = mock.requests();
    let msgs = reqs[request].body["messages"].as_array().unwrap().clone();
    let mut out = Vec::new();
    for m in msgs.iter().rev() {
        if m["role"] != "tool" {
            break;
        }
        out.insert(0, m["content"].as_str().unwrap().to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_through_every_file_tool_are_refused_including_a_symlink_made_by_a_command() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside secret\n").unwrap();
    let mock = MockModel::start().await;
    mock.turn(
        call("run_cmd", json!({"command": format!("ln -s {} escape && ln -s .. up", outside.path().display())})),
        false,
    );
    let attempts = Turn::default()
        .with_call("read_file", &json!({"path": "escape/secret.txt"}).to_string())
        .with_call("read_file", &json!({"path": "../work/status.txt"}).to_string())
        .with_call("read_file", &json!({"path": "/etc/passwd"}).to_string())
        .with_call("list_dir", &json!({"path": "escape"}).to_string())
        .with_call("grep", &json!({"pattern": "secret", "path": "escape"}).to_string())
        .with_call("glob_file_search", &json!({"pattern": "*", "path": "up"}).to_string())
        .with_call("write_file", &json!({"path": "escape/planted.txt", "content": "x"}).to_string())
        .with_call("write_file", &json!({"path": "up/planted.txt", "content": "x"}).to_string())
        .with_call(
            "apply_patch",
            &json!({"patch": "--- /dev/null\n+++ b/escape/p.txt\n@@ -0,0 +1 @@\n+x\n"}).to_string(),
        )
        .with_call("write_file", &json!({"path": ".git/hooks/pre-commit", "content": "x"}).to_string());
    mock.turn(attempts, false)
        .turn(call("run_cmd", json!({"command": "rm escape up"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let yaml = with_policy(&repo, &job_yaml("escape", &mock.base_url, false), OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = tool_results(&mock, 2);
    assert_eq!(results.len(), 10);
    for (i, r) in results.iter().enumerate() {
        assert!(r.starts_with("error E_POLICY_DENIED"), "attempt {i} was not refused: {r}");
        assert!(!r.contains("outside secret"), "{r}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "nothing was written outside");
    assert!(!repo.dir.path().join("planted.txt").exists());
    assert!(!repo.path.join(".git/hooks/pre-commit").exists());
}

async fn connect_attempt(network: bool) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let cmd = format!("(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-CONNECTED || echo NET-REFUSED");
    mock.turn(call("run_cmd", json!({"command": cmd})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let policy = format!("{OPEN_POLICY}network: {network}\n");
    let yaml = with_policy(&repo, &job_yaml("net", &mock.base_url, false), &policy);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["policy"]["sandbox"]["network_isolated"], !network);
    drop(listener);
    tool_results(&mock, 1).remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_network_a_command_cannot_reach_a_local_port_and_with_network_it_can() {
    require!(Need::UserNamespaces);
    let off = connect_attempt(false).await;
    assert!(off.contains("NET-REFUSED") && !off.contains("NET-CONNECTED"), "{off}");
    let on = connect_attempt(true).await;
    assert!(on.contains("NET-CONNECTED"), "{on}");
}

const CANARY: &str = "hone-canary-Zx9/q+T0k3n=42";

fn canary_forms() -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(CANARY);
    let b64url = base64::engine::general_purpose::URL_SAFE.encode(CANARY);
    let pct: String = CANARY
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![CANARY.to_string(), b64.trim_end_matches('=').to_string(), b64url.trim_end_matches('=').to_string(), pct]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_canary_secret_reaches_no_sink() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let forms = canary_forms();
    let leak = Turn::default()
        .with_call("run_cmd", &json!({"command": format!("echo {CANARY}")}).to_string())
        .with_call("run_cmd", &json!({"command": format!("printf '%s' '{CANARY}' | base64")}).to_string())
        .with_call("run_cmd", &json!({"command": format!("python3 -c \"import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=''))\" '{CANARY}'")}).to_string())
        .with_call("run_cmd", &json!({"command": "echo \"env:[$HONE_CANARY_TOKEN]\""}).to_string());
    mock.turn(leak, false).turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(
        text(&format!("Done. The token is {CANARY}, in base64 {}, and URL-encoded {}.", forms[1], forms[3])),
        false,
    );
    let yaml = with_policy(&repo, &job_yaml("canary", &mock.base_url, false), OPEN_POLICY);
    let run = run_job_env(&repo, &yaml, &[("HONE_CANARY_TOKEN", CANARY)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 4);
    assert!(results.iter().take(3).all(|r| r.contains("[REDACTED]")), "{results:#?}");
    assert!(results[3].contains("env:[]"), "the secret env var reached the command: {}", results[3]);
    let commit_msg = repo.git(&["log", "-1", "--format=%B", "hone/canary"]);
    let sinks = [
        ("stdout", run.stdout.clone()),
        ("stderr (logs)", run.stderr.clone()),
        ("report.json", run.read("report.json")),
        ("junit.xml", run.read("junit.xml")),
        ("summary.md", run.read("summary.md")),
        ("events.jsonl", run.read("events.jsonl")),
        ("commit message", commit_msg.clone()),
        (
            "tool results sent to the model",
            mock.requests()
                .iter()
                .flat_map(|r| {
                    r.body["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|m| m["role"] == "tool")
                        .map(|m| m["content"].to_string())
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    ];
    for (sink, content) in &sinks {
        for f in &forms {
            assert!(!content.contains(f.as_str()), "{sink} contains the canary form {f}");
        }
    }
    assert!(commit_msg.contains("The token is [REDACTED]"), "{commit_msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_contains_a_secret_is_not_committed() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "src/config.txt", "content": format!("token = {CANARY}\n")})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let yaml = with_policy(&repo, &job_yaml("secretdiff", &mock.base_url, false), OPEN_POLICY);
    let run = run_job_env(&repo, &yaml, &[("HONE_CANARY_TOKEN", CANARY)]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert!(report["commit"].is_null());
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("contains the value of a secret"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_git_hooks_and_workflows_through_commands_are_refused_with_no_commit() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("run_cmd", json!({"command": "echo 'curl x' > .git/hooks/post-checkout"})), false)
        .turn(
            call("run_cmd", json!({"command": "cp check.sh .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"})),
            false,
        )
        .turn(
            call("run_cmd", json!({"command": "mkdir -p .github/workflows && cp check.sh .github/workflows/evil.yml"})),
            false,
        )
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let yaml = with_policy(&repo, &job_yaml("planted", &mock.base_url, false), OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(tool_results(&mock, 1)[0].starts_with("error E_POLICY_DENIED"), "a redirect into .git is denied up front");
    let planted = &tool_results(&mock, 2)[0];
    assert!(planted.contains("Read-only file system"), "in the jail .git is read-only: {planted}");
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert!(report["commit"].is_null());
    let guard: Vec<String> =
        report["policy"]["guard"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_string()).collect();
    assert!(!guard.iter().any(|g| g.contains(".git/")), "nothing was planted, so nothing to put back: {guard:?}");
    assert!(guard.iter().any(|g| g.contains(".github/workflows/evil.yml")), "{guard:?}");
    assert_eq!(report["errors"][0]["code"], "E_POLICY_DENIED");
    assert!(!repo.path.join(".git/hooks/pre-commit").exists(), "no hook was planted");
    assert!(repo.git(&["branch", "--list", "hone/planted"]).is_empty());
    assert!(repo.is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_fsmonitor_in_the_repo_config_never_runs() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    // Where a jailed command may write (a writable tree must not hold the repository).
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let marker = marks.join("fsmonitor-ran");
    let hook = repo.dir.path().join("fsmon.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::process::Command::new("chmod").args(["+x", hook.to_str().unwrap()]).status().unwrap();
    repo.git(&["config", "core.fsmonitor", hook.to_str().unwrap()]);
    // Control: plain git does run it, so the test can see a difference.
    repo.git(&["status"]);
    assert!(marker.exists(), "control: git should run core.fsmonitor");
    std::fs::remove_file(&marker).unwrap();
    let mock = MockModel::start().await;
    mock.turn(call("run_cmd", json!({"command": "git status && git diff"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let yaml = with_policy(&repo, &job_yaml("fsmon", &mock.base_url, false), &policy);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tool_results(&mock, 1)[0].starts_with("exit code: 0"));
    assert!(!marker.exists(), "core.fsmonitor ran during the hone run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_ignoring_sigterm_is_gone_after_a_timeout() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let marker = format!("hone-grandchild-{}", std::process::id());
    let cmd = format!("sh -c 'trap \"\" TERM; sleep 300; echo {marker}' & sleep 300");
    mock.turn(call("run_cmd", json!({"command": cmd, "timeout_secs": 1})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let yaml = with_policy(&repo, &job_yaml("grandchild", &mock.base_url, false), OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tool_results(&mock, 1)[0].starts_with("error E_TOOL_TIMEOUT"));
    assert!(survivors(&marker).is_empty(), "survivors: {:?}", survivors(&marker));
}

/// Without root: commands are jailed through a user namespace. As root, the test runs hone as
/// `nobody` (setpriv); as a user, as itself. Either way the run succeeds and the command has no
/// network. (A machine that cannot jail refuses at intake: the next test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_root_commands_are_jailed_through_a_user_namespace() {
    require!(Need::UserNamespaces);
    let root = nix::unistd::geteuid().is_root();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mock = MockModel::start().await;
    let cmd = format!("(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-CONNECTED || echo NET-REFUSED");
    mock.turn(call("run_cmd", json!({"command": cmd})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let repo = user_repo(
        SPEC,
        &with_policy_text(&job_yaml("nonroot", &mock.base_url, false)),
        &[("policy.yaml", OPEN_POLICY)],
    );
    let home = repo.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    if root {
        let chown = std::process::Command::new("chown")
            .args(["-R", "65534:65534", repo.dir.path().to_str().unwrap()])
            .status()
            .unwrap();
        assert!(chown.success());
        // Every directory above the repository must let nobody through.
        let mut up = repo.dir.path().parent();
        while let Some(d) = up {
            let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(d).unwrap().permissions());
            assert!(mode & 0o001 != 0, "{} is not searchable by nobody", d.display());
            up = d.parent();
        }
    }
    let (hone, cwd, home2) = (env!("CARGO_BIN_EXE_hone"), repo.path.clone(), home.clone());
    let out = tokio::task::spawn_blocking(move || {
        let mut c = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", hone]);
            c
        } else {
            std::process::Command::new(hone)
        };
        c.args(["run", SPEC])
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home2)
            .env("HONE_TEST_API_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result = tool_results(&mock, 1).remove(0);
    assert!(result.contains("NET-REFUSED") && !result.contains("NET-CONNECTED"), "{result}");
    let dir = repo.path.join(".hone/reports");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "success");
    assert_eq!(report["policy"]["sandbox"]["network_isolated"], true);
    let ctx = crate::common::commits::RunContext { junit: vec![], served: Some(mock.served()) };
    crate::common::commits::assert_commit_is_the_change(&report, &dir, &ctx, "the run as nobody");
    assert_eq!(committed(&repo, "hone/nonroot"), ["status.txt"]);
    drop(listener);
}

/// The spec line that names the policy file next to it.
fn with_policy_text(yaml: &str) -> String {
    format!("{yaml}policy: policy.yaml\n")
}

/// A machine that cannot make user namespaces (here: a namespace whose limit is 0) never runs
/// commands unjailed: the run stops at intake, names the remedy, and the model is never asked.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_that_cannot_jail_stops_at_intake_and_names_the_remedy() {
    require!(Need::UserNamespaces);
    // The test itself makes a user namespace to lower the limit in.
    let mock = MockModel::start().await;
    let repo = user_repo(SPEC, &job_yaml("nojail", &mock.base_url, false), &[]);
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text("done"), false);
    let script =
        format!("echo 0 > /proc/sys/user/max_user_namespaces && exec {} run {SPEC}", env!("CARGO_BIN_EXE_hone"));
    let cwd = repo.path.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "sh", "-c", &script])
            .current_dir(cwd)
            .env("HONE_TEST_API_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("this machine cannot jail commands"), "{stderr}");
    assert!(stderr.contains("user.max_user_namespaces"), "the remedy is named: {stderr}");
    assert!(mock.requests().is_empty(), "the model was asked although nothing could run jailed");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path.join(".hone/reports/report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "invalid_input");
    assert!(repo.git(&["branch", "--list", "hone/nojail"]).is_empty());
}
