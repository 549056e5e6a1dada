//! Shared helpers for the integration tests: the mock model, temp repos, job specs, running hone.
//!
//! The defaults are what users do: the spec (and any policy file) is committed inside the
//! repository, which has no `.gitignore`; hone runs from the repository with the relative spec
//! path `job.yaml`; the reports go to the default `.hone/reports`. Every run goes through
//! `run_hone_at`, which checks what a successful run committed (`commits`).

#![allow(dead_code)]

/// The one place a test says what it needs from the machine: `require!(Need::Root)` goes on when
/// the machine has it, fails the test when it does not, and returns from the test (printing
/// `WAIVED: …`) only when `HONE_TEST_WAIVE` names it.
macro_rules! require {
    ($need:expr) => {
        if !$crate::common::require::require($need) {
            return;
        }
    };
}

pub mod commits;
pub mod mock_model;
pub mod repo;
pub mod require;

pub use require::Need;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The API key the tests hand to hone; it must never appear in any output.
pub const KEY: &str = "sk-test-canary-9f8e7d6c5b4a";

pub const CHECK_SH: &str = "grep -qx fixed status.txt || { echo \"FAIL: status.txt says '$(cat status.txt 2>/dev/null)', expected 'fixed'\"; exit 1; }\n";

/// A repo whose check fails until status.txt says `fixed`.
pub fn broken_repo() -> repo::TestRepo {
    repo::TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("src/lib.txt", "hello\n")])
}

/// Where the spec lives in the test repository, and the path hone is given (from the repository).
pub const SPEC: &str = "job.yaml";

/// A job spec as a user writes it, for the mock model: no `repo:` (the repository is the one that
/// contains the spec) and no `report:` (the default, `.hone/reports` at the repository root).
pub fn job_yaml(name: &str, base_url: &str, stream: bool) -> String {
    format!(
        r#"version: 1
name: {name}
task: Make check.sh pass.
model:
  provider: openai-compatible
  name: mock-model
  base_url: {base_url}
  api_key_env: HONE_TEST_API_KEY
  stream: {stream}
  idle_timeout: 10s
  retry: {{ max_attempts: 4, initial_delay: 10ms, max_delay: 50ms }}
verify:
  - {{ name: check, run: "sh check.sh", timeout: 30s }}
limits: {{ max_turns: 10, max_wall_time: 60s, max_fix_attempts: 2 }}
plan: false
"#
    )
}

/// `job_yaml` with a short idle timeout, for tests whose mock stalls a stream on purpose (the
/// default leaves a wide margin so that a slow machine never counts a timeout that did not happen).
pub fn stalling_job_yaml(name: &str, base_url: &str) -> String {
    job_yaml(name, base_url, true).replace("idle_timeout: 10s", "idle_timeout: 1s")
}

/// A job spec as a user writes it (non-streamed answers, a short retry), for `user_repo`.
pub fn user_spec(name: &str, base_url: &str) -> String {
    format!(
        r#"version: 1
name: {name}
task: Make check.sh pass.
model:
  provider: openai-compatible
  name: mock-model
  base_url: {base_url}
  api_key_env: HONE_TEST_API_KEY
  stream: false
  retry: {{ max_attempts: 2, initial_delay: 10ms, max_delay: 20ms }}
verify:
  - {{ name: check, run: "sh check.sh", timeout: 30s }}
limits: {{ max_turns: 10, max_wall_time: 60s, max_fix_attempts: 2 }}
plan: false
"#
    )
}

/// A fresh clone: no `.gitignore`, the spec (and any `extra` files) committed at `spec_at`.
pub fn user_repo(spec_at: &str, spec: &str, extra: &[(&str, &str)]) -> repo::TestRepo {
    let mut files = vec![("status.txt", "broken\n"), ("check.sh", CHECK_SH), (spec_at, spec)];
    files.extend_from_slice(extra);
    repo::TestRepo::new(&files)
}

/// Paths that differ between `main` and `branch`.
pub fn committed(repo: &repo::TestRepo, branch: &str) -> Vec<String> {
    let out = repo.git(&["diff", "--name-only", "main", branch]);
    out.lines().map(str::to_string).collect()
}

/// Run hone from the repository with `args`, reports in the default dir.
pub async fn run_user(repo: &repo::TestRepo, args: &[&str]) -> Run {
    run_in(&repo.path, args, &[], repo.path.join(".hone/reports")).await
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

    /// A report file hone must have written; a missing one fails the test.
    pub fn read(&self, name: &str) -> String {
        let p = self.report_dir.join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{} is missing: {e}", p.display()))
    }

    /// A report file hone writes only sometimes (pr.md, change.patch): empty when absent.
    pub fn read_optional(&self, name: &str) -> String {
        std::fs::read_to_string(self.report_dir.join(name)).unwrap_or_default()
    }

    /// Every file hone wrote, plus stdout and stderr: nothing may contain the key. The four
    /// reports must exist and hold something, so a missing report cannot pass as clean.
    pub fn assert_no_secret(&self, secret: &str) {
        for name in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
            let text = self.read(name);
            assert!(!text.trim().is_empty(), "{name} is empty");
            assert!(!text.contains(secret), "{name} leaks the secret");
        }
        for name in ["pr.md", "change.patch"] {
            assert!(!self.read_optional(name).contains(secret), "{name} leaks the secret");
        }
        assert!(!self.stdout.contains(secret), "stdout leaks the secret");
        assert!(!self.stderr.contains(secret), "stderr leaks the secret");
    }
}

/// A policy for tests that run arbitrary commands: everything allowed except the usual denials.
pub const OPEN_POLICY: &str =
    "version: 1\ncommands:\n  default: allow\n  deny: [\"curl *\", \"wget *\", \"git push *\"]\n";

/// Write `policy` into the repository as `policy.yaml` (next to the spec; `run_job` commits it)
/// and point the spec at it.
pub fn with_policy(repo: &repo::TestRepo, yaml: &str, policy: &str) -> String {
    std::fs::write(repo.path.join("policy.yaml"), policy).unwrap();
    format!("{yaml}policy: policy.yaml\n")
}

/// Write `yaml` as the repository's `job.yaml` and commit it with `policy.yaml` (if there is
/// one), as a user does before running hone; push the branch, so origin has the spec too.
/// Nothing else is staged: a test's own uncommitted changes stay uncommitted.
///
/// The harness's own git never runs what a (hostile) test repository configures: no fsmonitor,
/// no hooks, and pushes go to origin's path, not through `remote.origin.*`.
pub fn commit_spec(repo: &repo::TestRepo, yaml: &str) {
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];
        all.extend_from_slice(args);
        repo::git(&repo.path, &all)
    };
    std::fs::write(repo.path.join(SPEC), yaml).unwrap();
    let mut paths = vec![SPEC];
    if repo.path.join("policy.yaml").exists() {
        paths.push("policy.yaml");
    }
    let mut add = vec!["add", "--"];
    add.extend(&paths);
    git(&add);
    let mut diff = vec!["diff", "--cached", "--name-only", "--"];
    diff.extend(&paths);
    if git(&diff).is_empty() {
        return;
    }
    let mut commit = vec!["commit", "-q", "-m", "hone job spec", "--"];
    commit.extend(&paths);
    git(&commit);
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]);
    if branch != "HEAD" {
        git(&["push", "-q", repo.origin.to_str().unwrap(), &format!("HEAD:refs/heads/{branch}")]);
    }
}

/// Commit `yaml` as the repository's `job.yaml` and run `hone run job.yaml EXTRA…` from the
/// repository; the reports are in `<repo>/.hone/reports`.
pub async fn run_job(repo: &repo::TestRepo, yaml: &str, extra_args: &[&str]) -> Run {
    run_job_with(repo, yaml, extra_args, &[]).await
}

/// `run_job` with extra environment.
pub async fn run_job_env(repo: &repo::TestRepo, yaml: &str, env: &[(&str, &str)]) -> Run {
    run_job_with(repo, yaml, &[], env).await
}

/// `run_job` with extra arguments and environment.
pub async fn run_job_with(repo: &repo::TestRepo, yaml: &str, extra_args: &[&str], env: &[(&str, &str)]) -> Run {
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
pub async fn run_job_outside(repo: &repo::TestRepo, yaml: &str, extra_args: &[&str], env: &[(&str, &str)]) -> Run {
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

/// The file a `run`/`validate`/`fleet` command line names (its first positional argument).
pub fn spec_arg(args: &[String]) -> Option<String> {
    const TAKES_VALUE: &[&str] = &[
        "--repo",
        "--report-dir",
        "--task",
        "--model",
        "--name",
        "--verify",
        "--pr",
        "--only",
        "--emit-matrix",
        "--shard",
        "--out",
    ];
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if TAKES_VALUE.contains(&a.as_str()) {
            it.next();
        } else if !a.starts_with('-') {
            return Some(a.clone());
        }
    }
    None
}

/// The value of the first `key:` line in a YAML file's text (unquoted).
fn yaml_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.trim_start().strip_prefix(key)?.strip_prefix(':')?.trim();
        Some(v.trim_matches(['"', '\'']).to_string())
    })
}

/// What the run helper learns before a run: the spec's checks and the mock that serves it.
struct Before {
    ctx: commits::RunContext,
    mock: Option<(std::sync::Arc<mock_model::Shared>, usize)>,
    fleet_workspace: Option<PathBuf>,
}

fn before_run(cwd: &Path, args: &[String], env: &[(String, String)]) -> Before {
    let mut b = Before { ctx: Default::default(), mock: None, fleet_workspace: None };
    let command = args.first().map(String::as_str);
    let file = spec_arg(args).map(|f| cwd.join(f));
    let text = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()).unwrap_or_default();
    match command {
        Some("run") => {
            b.ctx = commits::RunContext::from_spec(&text);
            let url = yaml_value(&text, "base_url").or_else(|| {
                env.iter().find(|(k, _)| k == "OPENAI_BASE_URL" || k == "ANTHROPIC_BASE_URL").map(|(_, v)| v.clone())
            });
            if let Some(m) = url.as_deref().and_then(mock_model::served_by) {
                let n = m.served().len();
                b.mock = Some((m, n));
            }
        }
        Some("fleet") if args.get(1).map(String::as_str) != Some("merge") => {
            let dir = file.as_ref().and_then(|f| f.parent()).unwrap_or(cwd).to_path_buf();
            let ws = yaml_value(&text, "workspace").unwrap_or_else(|| ".hone/fleet".into());
            if let Some(job) = yaml_value(&text, "job") {
                b.ctx = commits::RunContext::from_spec(&std::fs::read_to_string(dir.join(job)).unwrap_or_default());
            }
            b.fleet_workspace = Some(dir.join(ws));
        }
        _ => {}
    }
    b
}

/// Every run of the suite ends here: after a `run` that exits 0 with `success`, and after every
/// fleet, what was committed is checked (`commits::commit_problems`). A run refused because the
/// machine cannot jail fails loudly here, naming the capability, whatever the test expected.
fn after_run(run: &Run, args: &[String], before: Before) {
    assert!(
        !run.stderr.contains("this machine cannot jail commands"),
        "hone cannot jail commands here: every test that runs commands needs Need::UserNamespaces ({})\n{}",
        Need::UserNamespaces.check().err().unwrap_or_default(),
        run.stderr
    );
    match args.first().map(String::as_str) {
        Some("run") if run.code == 0 => {
            let path = run.report_dir.join("report.json");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "hone exited 0 but {} cannot be read ({e}): does the test pass the right report dir?",
                    path.display()
                )
            });
            let report: Value = serde_json::from_str(&text).expect("report.json is JSON");
            let mut ctx = before.ctx;
            if let Some((mock, n)) = before.mock {
                ctx.served = Some(mock.served()[n..].to_vec());
            }
            commits::assert_commit_is_the_change(&report, &run.report_dir, &ctx, "hone run");
        }
        Some("fleet") => {
            if let Some(ws) = before.fleet_workspace {
                commits::assert_fleet_commits(&ws, &before.ctx);
            }
        }
        _ => {}
    }
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
    let here = cwd.clone().unwrap_or_else(|| std::env::current_dir().unwrap());
    let before = before_run(&here, &all, &env);
    let argv = all.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_hone"));
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
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
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report_dir,
    };
    after_run(&run, &all, before);
    run
}

/// Validate a JUnit file against the Jenkins junit-10 XSD with xmllint (installed by .ci/run).
pub fn assert_junit_valid(path: &Path) {
    require!(Need::Xmllint);
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema", xsd.to_str().unwrap(), path.to_str().unwrap()])
        .output()
        .expect("xmllint runs");
    assert!(out.status.success(), "junit.xml is not valid against the XSD: {}", String::from_utf8_lossy(&out.stderr));
}

/// Command lines of live processes that contain `marker` (to prove nothing outlived a run).
/// The kernel ends a PID namespace's processes as its init exits, which can take a moment after
/// hone has exited: so this waits (bounded, 10 s) for them to go, and returns those still alive.
/// A real survivor (every marker process sleeps for minutes) is still there after the wait.
pub fn survivors(marker: &str) -> Vec<String> {
    let list = || {
        let ps = std::process::Command::new("ps").args(["-eo", "stat=,args="]).output().expect("ps runs");
        String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains(marker) && !l.contains("ps -eo") && !l.trim_start().starts_with('Z'))
            .map(|l| l.trim_start().split_once(' ').map_or(l, |(_, args)| args).trim().to_string())
            .collect::<Vec<_>>()
    };
    let start = std::time::Instant::now();
    loop {
        let alive = list();
        if alive.is_empty() || start.elapsed() > std::time::Duration::from_secs(10) {
            return alive;
        }
        std::thread::park_timeout(std::time::Duration::from_millis(50));
    }
}

/// Block until `path` exists (a marker a test's command creates), failing after `limit`.
pub fn wait_for_file(path: &Path, limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} did not appear within {limit:?}", path.display());
        std::thread::park_timeout(std::time::Duration::from_millis(20));
    }
}
