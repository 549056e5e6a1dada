//! Shared helpers for the integration tests: the mock model, temp repos, job specs, running hone.

#![allow(dead_code)]

pub mod mock_model;
pub mod repo;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The API key the tests hand to hone; it must never appear in any output.
pub const KEY: &str = "sk-test-canary-9f8e7d6c5b4a";

pub const CHECK_SH: &str = "grep -qx fixed status.txt || { echo \"FAIL: status.txt says '$(cat status.txt 2>/dev/null)', expected 'fixed'\"; exit 1; }\n";

/// A repo whose check fails until status.txt says `fixed`.
pub fn broken_repo() -> repo::TestRepo {
    repo::TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("src/lib.txt", "hello\n")])
}

/// A job spec pointing at `repo` (in the temp dir as `work`) and the mock model.
pub fn job_yaml(name: &str, base_url: &str, stream: bool) -> String {
    format!(
        r#"version: 1
name: {name}
task: Make check.sh pass.
repo: {{ path: work }}
model:
  provider: openai-compatible
  name: mock-model
  base_url: {base_url}
  api_key_env: HONE_TEST_API_KEY
  stream: {stream}
  idle_timeout: 2s
  retry: {{ max_attempts: 4, initial_delay: 10ms, max_delay: 50ms }}
verify:
  - {{ name: check, run: "sh check.sh", timeout: 30s }}
limits: {{ max_turns: 10, max_wall_time: 60s, max_fix_attempts: 2 }}
report: {{ dir: reports }}
plan: false
"#
    )
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report_dir: PathBuf,
}

impl Run {
    pub fn report(&self) -> Value {
        let text = std::fs::read_to_string(self.report_dir.join("report.json")).expect("report.json exists");
        serde_json::from_str(&text).expect("report.json is JSON")
    }

    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.report_dir.join("events.jsonl"))
            .expect("events.jsonl exists")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each event line is JSON"))
            .collect()
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.report_dir.join(name)).unwrap_or_default()
    }

    /// Every file hone wrote, plus stdout and stderr: nothing may contain the key.
    pub fn assert_no_secret(&self, secret: &str) {
        for name in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
            assert!(!self.read(name).contains(secret), "{name} leaks the secret");
        }
        assert!(!self.stdout.contains(secret), "stdout leaks the secret");
        assert!(!self.stderr.contains(secret), "stderr leaks the secret");
    }
}

/// A policy for tests that run arbitrary commands: everything allowed except the usual denials.
pub const OPEN_POLICY: &str =
    "version: 1\ncommands:\n  default: allow\n  deny: [\"curl *\", \"wget *\", \"git push *\"]\n";

/// Write `policy` next to the job spec and point the spec at it.
pub fn with_policy(repo: &repo::TestRepo, yaml: &str, policy: &str) -> String {
    std::fs::write(repo.dir.path().join("policy.yaml"), policy).unwrap();
    format!("{yaml}policy: policy.yaml\n")
}

/// Write `yaml` as `job.yaml` next to the repo and run `hone run` on it.
pub async fn run_job(repo: &repo::TestRepo, yaml: &str, extra_args: &[&str]) -> Run {
    let spec = repo.dir.path().join("job.yaml");
    std::fs::write(&spec, yaml).unwrap();
    run_hone(&["run", spec.to_str().unwrap()], extra_args, repo.dir.path().join("reports")).await
}

pub async fn run_hone(args: &[&str], extra: &[&str], report_dir: PathBuf) -> Run {
    run_hone_env(args, extra, report_dir, &[]).await
}

/// Write `yaml` as `job.yaml` next to the repo and run `hone run` with extra environment.
pub async fn run_job_env(repo: &repo::TestRepo, yaml: &str, env: &[(&str, &str)]) -> Run {
    let spec = repo.dir.path().join("job.yaml");
    std::fs::write(&spec, yaml).unwrap();
    run_hone_env(&["run", spec.to_str().unwrap()], &[], repo.dir.path().join("reports"), env).await
}

pub async fn run_hone_env(args: &[&str], extra: &[&str], report_dir: PathBuf, env: &[(&str, &str)]) -> Run {
    run_hone_at(None, args, extra, report_dir, env).await
}

/// Run hone from `cwd`, the way a user does from inside the repository.
pub async fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)], report_dir: PathBuf) -> Run {
    run_hone_at(Some(cwd.to_path_buf()), args, &[], report_dir, env).await
}

async fn run_hone_at(
    cwd: Option<PathBuf>,
    args: &[&str],
    extra: &[&str],
    report_dir: PathBuf,
    env: &[(&str, &str)],
) -> Run {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(extra.iter().map(|s| s.to_string()));
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_hone"));
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.args(&all)
            .env("HONE_TEST_API_KEY", KEY)
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_OUTPUT")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_REPOSITORY")
            .env_remove("GITHUB_API_URL")
            .env_remove("GITHUB_EVENT_PATH")
            .env_remove("GITHUB_EVENT_NAME")
            .env("RUST_LOG", "hone=debug")
            .envs(env)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .expect("hone runs")
    })
    .await
    .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report_dir,
    }
}

/// Validate a JUnit file against the Jenkins junit-10 XSD with xmllint (installed by .ci/run).
pub fn assert_junit_valid(path: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema", xsd.to_str().unwrap(), path.to_str().unwrap()])
        .output()
        .expect("xmllint must be installed (apt-get install libxml2-utils); .ci/run installs it");
    assert!(out.status.success(), "junit.xml is not valid against the XSD: {}", String::from_utf8_lossy(&out.stderr));
}

/// Command lines of live processes that contain `marker` (to prove nothing outlived a run).
pub fn survivors(marker: &str) -> Vec<String> {
    let ps = std::process::Command::new("ps").args(["-eo", "args"]).output().expect("ps runs");
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains(marker) && !l.contains("ps -eo"))
        .map(str::to_string)
        .collect()
}

/// Block until `path` exists (a marker a test's command creates), failing after `limit`.
pub fn wait_for_file(path: &Path, limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} did not appear within {limit:?}", path.display());
        std::thread::park_timeout(std::time::Duration::from_millis(20));
    }
}
