//! Starting the real `hone` binary: from the repository with the committed spec (the default),
//! from elsewhere with the spec outside it, or with any command line; in a clean environment, with
//! the test key, and through the checks every run goes through (`run_checks`).

use super::KEY;
use super::fixtures::{SPEC, commit_spec};
use super::repo::TestRepo;
use super::run::Run;
use super::run_checks::{after_run, before_run};
use std::path::{Path, PathBuf};

/// Run hone from the repository with `args`, reports in the default dir.
pub async fn run_user(repo: &TestRepo, args: &[&str]) -> Run {
    run_in(&repo.path, args, &[], repo.path.join(".hone/reports")).await
}

/// Commit `yaml` as the repository's `job.yaml` and run `hone run job.yaml EXTRA…` from the
/// repository; the reports are in `<repo>/.hone/reports`.
pub async fn run_job(repo: &TestRepo, yaml: &str, extra_args: &[&str]) -> Run {
    run_job_with(repo, yaml, extra_args, &[]).await
}

/// `run_job` with extra environment.
pub async fn run_job_env(repo: &TestRepo, yaml: &str, env: &[(&str, &str)]) -> Run {
    run_job_with(repo, yaml, &[], env).await
}

/// `run_job` with extra arguments and environment.
pub async fn run_job_with(repo: &TestRepo, yaml: &str, extra_args: &[&str], env: &[(&str, &str)]) -> Run {
    commit_spec(repo, yaml);
    let mut args = vec!["run", SPEC];
    args.extend_from_slice(extra_args);
    run_hone_at(Some(repo.path.clone()), &args, &[], repo.path.join(".hone/reports"), env).await
}

/// The old layout, on purpose: the spec and the reports OUTSIDE the repository (`<tmp>/job.yaml`
/// naming the repository with `repo: { path: work }`, reports in `<tmp>/reports`), and hone given
/// the spec's absolute path from another directory. Use it only for what a user does that way: a
/// spec kept in a separate config checkout, or a run whose reports must not live in the work
/// tree. A `policy.yaml` that `with_policy` put in the repository moves next to the spec.
pub async fn run_job_outside(repo: &TestRepo, yaml: &str, extra_args: &[&str], env: &[(&str, &str)]) -> Run {
    let tmp = repo.dir.path();
    let policy = repo.path.join("policy.yaml");
    if policy.exists() && repo.git(&["ls-files", "policy.yaml"]).is_empty() {
        std::fs::rename(&policy, tmp.join("policy.yaml")).unwrap();
    }
    let spec = tmp.join(SPEC);
    std::fs::write(&spec, format!("{yaml}repo: {{ path: work }}\nreport: {{ dir: reports }}\n")).unwrap();
    let mut args = vec!["run", spec.to_str().unwrap()];
    args.extend_from_slice(extra_args);
    run_hone_at(None, &args, &[], tmp.join("reports"), env).await
}

pub async fn run_hone(args: &[&str], extra: &[&str], report_dir: PathBuf) -> Run {
    run_hone_env(args, extra, report_dir, &[]).await
}

pub async fn run_hone_env(args: &[&str], extra: &[&str], report_dir: PathBuf, env: &[(&str, &str)]) -> Run {
    run_hone_at(None, args, extra, report_dir, env).await
}

/// Run hone from `cwd`, the way a user does from inside the repository.
pub async fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)], report_dir: PathBuf) -> Run {
    run_hone_at(Some(cwd.to_path_buf()), args, &[], report_dir, env).await
}

pub(super) async fn run_hone_at(
    cwd: Option<PathBuf>,
    args: &[&str],
    extra: &[&str],
    report_dir: PathBuf,
    env: &[(&str, &str)],
) -> Run {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(extra.iter().map(|s| s.to_string()));
    let here = cwd.clone().unwrap_or_else(|| std::env::current_dir().unwrap());
    let before = before_run(&here, &all, &env);
    let argv = all.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_hone"));
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        // The forges' variables of the machine the tests run on (a GitHub App, GitLab CI's).
        for var in FORGE_VARS.iter().chain(&OTEL_VARS) {
            cmd.env_remove(var);
        }
        cmd.args(&argv)
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
            .env_remove("GITHUB_SERVER_URL")
            .env_remove("GITHUB_EVENT_PATH")
            .env_remove("GITHUB_EVENT_NAME")
            .env("RUST_LOG", "hone=debug")
            // Each run remembers on its own unless the test shares a memory on purpose: no run
            // reads what another test's run left in the home directory's memory.
            .env("HONE_MEMORY_DIR", fresh_memory_dir())
            .envs(env)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .expect("hone runs")
    })
    .await
    .unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report_dir,
    };
    after_run(&run, &all, before);
    run
}

/// An empty memory directory of its own for one run.
pub fn fresh_memory_dir() -> PathBuf {
    tempfile::Builder::new().prefix("hone-memory-").tempdir().unwrap().keep()
}

/// Start `bin run job.yaml` in the repository with the test key, output piped, and return at
/// once (for tests that signal hone, or change its binary, while it runs).
pub fn spawn_job(bin: &Path, repo: &Path) -> std::process::Child {
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["run", SPEC])
        .current_dir(repo)
        .env("HONE_TEST_API_KEY", KEY)
        .env("HONE_MEMORY_DIR", fresh_memory_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // A binary just copied can be "busy" for a moment: another test's child, forked while the
    // copy was open for writing, holds it until that child execs. Not a hone failure.
    for _ in 0..1000 {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => std::thread::yield_now(),
            r => return r.expect("hone starts"),
        }
    }
    cmd.spawn().expect("hone starts")
}

/// OpenTelemetry's variables, which the machine the tests run on may set: a test that exports
/// names its own collector.
const OTEL_VARS: [&str; 22] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "TRACEPARENT",
    "TRACESTATE",
];

/// The variables that would point a test's run at a real forge or through the machine's proxy:
/// none of them reaches hone unless the test sets it.
const FORGE_VARS: [&str; 16] = [
    "GITHUB_APP_ID",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_APP_PRIVATE_KEY_FILE",
    "GITLAB_CI",
    "GITLAB_TOKEN",
    "CI_JOB_TOKEN",
    "CI_SERVER_URL",
    "CI_API_V4_URL",
    "CI_PROJECT_PATH",
    "CI_MERGE_REQUEST_IID",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "HTTP_PROXY",
    "http_proxy",
];
