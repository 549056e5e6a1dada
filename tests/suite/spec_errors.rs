//! Invalid specs exit 2 with `file:line:col`, the key path and what is allowed (snapshots).

use crate::common::*;

const BASE: &str = r#"version: 1
name: demo
task: |
  Fix the tests.
model:
  provider: openai-compatible
  name: m
  base_url: http://127.0.0.1:9/v1
verify:
  - { name: test, run: "make test", timeout: 2m }
limits: { max_turns: 40, max_wall_time: 20m }
"#;

/// Run `hone validate job.yaml` and `hone run job.yaml` on `yaml` from its directory, as a user
/// does; both must exit 2 with the same messages. (From elsewhere, the messages name the spec by
/// the path given: `absolute_spec_paths_are_named_as_given`.)
async fn errors_for(yaml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, yaml).unwrap();
    let reports = dir.path().join(".hone/reports");
    let v = run_in(dir.path(), &["validate", "job.yaml"], &[], reports.clone()).await;
    assert_eq!(v.code, 2, "validate: {}", v.stderr);
    assert!(v.stdout.is_empty());
    let r = run_in(dir.path(), &["run", "job.yaml"], &[], reports).await;
    assert_eq!(r.code, 2, "run: {}", r.stderr);
    let prefix = format!("{}/", dir.path().display());
    let norm = |s: &str| {
        s.replace(&prefix, "")
            .lines()
            .filter(|l| !l.contains(" INFO ") && !l.contains(" DEBUG "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (v, r) = (norm(&v.stderr), norm(&r.stderr));
    assert!(v.starts_with(&r), "validate and run disagree:\n{v}\n---\n{r}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_spec_paths_are_named_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, BASE.replace("max_turns: 40", "max_turn: 40")).unwrap();
    let r = run_hone(&["run", spec.to_str().unwrap()], &[], dir.path().join(".hone/reports")).await;
    assert_eq!(r.code, 2, "run: {}", r.stderr);
    let want = format!("{}:11:11: error[E_SPEC] at `limits.max_turn`", spec.display());
    assert!(r.stderr.lines().any(|l| l.starts_with(&want)), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_key_suggests_the_nearest() {
    let out = errors_for(&BASE.replace("max_turns: 40", "max_turn: 40")).await;
    assert!(out.starts_with("job.yaml:11:11: error[E_SPEC] at `limits.max_turn`: unknown key `max_turn`"), "{out}");
    insta::assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_type() {
    let out = errors_for(&BASE.replace("max_turns: 40", "max_turns: lots")).await;
    assert!(out.starts_with("job.yaml:11:22: error[E_SPEC] at `limits.max_turns`"), "{out}");
    insta::assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_duration() {
    let out = errors_for(&BASE.replace("timeout: 2m", "timeout: 2 minutes")).await;
    assert!(out.starts_with("job.yaml:10:46: error[E_SPEC] at `verify[0].timeout`"), "{out}");
    assert!(out.contains("`90s`, `2m` or `1h`"));
    insta::assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_task() {
    // A run needs a task, from the spec or from --task.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, BASE.replace("task: |\n  Fix the tests.\n", "")).unwrap();
    let r = run_hone(&["run", spec.to_str().unwrap()], &[], dir.path().join("r")).await;
    assert_eq!(r.code, 2, "run: {}", r.stderr);
    let prefix = format!("{}/", dir.path().display());
    let out: String = r
        .stderr
        .replace(&prefix, "")
        .lines()
        .filter(|l| l.starts_with("job.yaml") || l.starts_with(' ') || l.starts_with("  ="))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(out.contains("at `task`: missing required key `task` at the top level"), "{out}");
    insta::assert_snapshot!(out);
    // The spec itself is valid: it is meant for runs that give the task (`--task`).
    let v = run_hone(&["validate", spec.to_str().unwrap()], &[], dir.path().join("r")).await;
    assert_eq!(v.code, 0, "validate: {}", v.stderr);
    assert!(v.stdout.contains("it has no `task:`, so every run must give one with --task"), "{}", v.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_errors_at_once() {
    let yaml = BASE
        .replace("max_turns: 40", "max_turn: 40")
        .replace("timeout: 2m", "timeout: 2 minutes")
        .replace("provider: openai-compatible", "provider: opneai")
        .replace("task: |\n  Fix the tests.\n", "");
    let out = errors_for(&yaml).await;
    assert!(out.ends_with("4 error(s) found"), "{out}");
    insta::assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_yaml_at_all() {
    let out = errors_for("version: 1\ntask: [unclosed\n").await;
    assert!(out.starts_with("job.yaml:"), "{out}");
    assert!(out.contains("invalid YAML"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_spec_validates() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, BASE).unwrap();
    let v = run_hone(&["validate", spec.to_str().unwrap()], &[], dir.path().join("r")).await;
    assert_eq!(v.code, 0, "{}", v.stderr);
    assert!(
        v.stdout.contains(
            "valid job spec (job `demo`, 1 check(s), 0 MCP server(s), branch `hone/demo`; the built-in default policy: network off, sandbox on, no MCP tool)"
        ),
        "{}",
        v.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_command_line_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_hone(&["run"], &[], dir.path().join("r")).await;
    assert_eq!(r.code, 2);
    let r = run_hone(&["frobnicate"], &[], dir.path().join("r")).await;
    assert_eq!(r.code, 2);
}
