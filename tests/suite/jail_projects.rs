//! A real project still builds and tests in the jail (issue 40), as root and as an unprivileged
//! user: a Python project with a virtualenv, a Node project with `node_modules` and npm's cache,
//! a Go project with its module cache and a Rust project with `~/.cargo` and `~/.rustup`. Each
//! toolchain is installed the usual way for its ecosystem, in the home where that is the usual
//! way, and each project has a dependency only that place can supply offline (the jail has no
//! network), so a view of the file system that leaves the place out fails the test.
//!
//! The projects are in `tests/data/projects/` (see its README). Each run: the check is the
//! project's own test command, which fails at the baseline on a bug (`wrld`); the scripted model
//! fixes it and runs the build and the tests itself; the run succeeds.

use super::jail_support::{cmd, result_of, write};
use crate::common::mock_model::{MockModel, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The projects' sources.
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/projects");

/// One project's run, as the test checks it.
struct Project<'a> {
    /// The job's name; the ecosystem, in messages.
    name: &'a str,
    repo: &'a TestRepo,
    /// The project's own test command: the job's check.
    check: &'a str,
    /// What the model runs after its fix: a build from the toolchain's place, then the tests.
    command: &'a str,
    /// The file with the bug (`"wrld"`), which the model fixes.
    buggy: &'a str,
    /// What the test runner says of the bug, in the baseline's output.
    failure: &'a str,
    /// What the build and the test runner say when the tests pass, in the model's command's output.
    passed: &'a [&'a str],
    /// The home and `PATH` hone (and so the jail) gets.
    home: PathBuf,
    path: String,
}

/// The job: the project's test command as its check, with room for a build on 2 cores.
fn job(repo: &TestRepo, name: &str, mock: &MockModel, check: &str) -> String {
    let yaml = job_yaml(name, &mock.base_url, false)
        .replace("Make check.sh pass.", "Make the project's tests pass.")
        .replace(
            r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
            &format!("  - {{ name: tests, run: {check:?}, timeout: 100s }}"),
        )
        .replace("max_wall_time: 60s", "max_wall_time: 115s");
    assert!(yaml.contains("name: tests,"), "the job template changed: {yaml}");
    with_policy(repo, &yaml, OPEN_POLICY)
}

/// Run hone on the project: the baseline saw the bug, the model's build and tests passed in the
/// jail after its fix, and the run succeeded.
async fn builds_and_tests(p: Project<'_>) {
    let mock = MockModel::start().await;
    let fixed = p.repo.file(p.buggy).replace("\"wrld\"", "\"world\"");
    mock.turn(write(p.buggy, &fixed), false).turn(cmd(p.command), false).turn(text("Fixed the greeting."), false);
    let yaml = job(p.repo, p.name, &mock, p.check);
    let home = p.home.to_str().unwrap();
    let run = run_job_env(p.repo, &yaml, &[("HOME", home), ("PATH", &p.path)]).await;
    let report = run.report();
    let baseline = &report["baseline"][0];
    let tail = baseline["output_tail"].as_str().unwrap_or("");
    assert!(
        baseline["passed"] == false && tail.contains(p.failure),
        "{}: the baseline of `{}` should fail on the bug ({:?}) after a build in the jail; it said:\n{tail}\n(hone: exit {}, {})",
        p.name,
        p.check,
        p.failure,
        run.code,
        run.stderr
    );
    let ran = result_of(&mock, 1);
    let missing: Vec<_> = p.passed.iter().filter(|s| !ran.contains(*s)).collect();
    assert!(
        ran.starts_with("exit code: 0\n") && missing.is_empty(),
        "{}: the model's `{}` should build and pass in the jail (missing {missing:?}); it said:\n{ran}",
        p.name,
        p.command
    );
    let last = report["verify"].as_array().and_then(|v| v.last()).cloned().unwrap_or_default();
    assert!(
        run.code == 0 && last["passed"] == true,
        "{}: the run should succeed (exit {}, last check {last}):\n{}\n{}",
        p.name,
        run.code,
        run.stdout,
        run.stderr
    );
}

/// Every file under `dir`, relative to it, with its content.
fn files_of(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(e.path()).unwrap()));
            }
        }
    }
    out
}

/// A repository holding `tests/data/projects/<eco>/app`, with `@INTEGRITY@` replaced.
fn project_repo(eco: &str, integrity: &str) -> TestRepo {
    let files: Vec<(String, String)> = files_of(&Path::new(DATA).join(eco).join("app"))
        .into_iter()
        .map(|(p, body)| (p, body.replace("@INTEGRITY@", integrity)))
        .collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
    TestRepo::new(&refs)
}

/// Run `program args` in `dir` with `env` (a setup step outside the jail, offline); its stdout.
fn run(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed in {}:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn env_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// Python: the checkout's `.venv` (made by the `python3` on PATH: as root here, pyenv's in
/// `~/.pyenv`), `greet` installed into it by pip from a local wheel; `python -m unittest`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_project_with_a_virtualenv_builds_and_tests() {
    require!(Need::UserNamespaces);
    require!(Need::Python);
    let repo = project_repo("python", "");
    run(&repo.path, "python3", &["-m", "venv", ".venv"], &[]);
    let wheels = tempfile::tempdir().unwrap();
    let (wheel_py, dir) = (format!("{DATA}/python/wheel.py"), wheels.path().to_str().unwrap());
    run(&repo.path, ".venv/bin/python", &[&wheel_py, dir], &[]);
    let wheel = format!("{dir}/greet-1.0.0-py3-none-any.whl");
    let pip = ["-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", "--disable-pip-version-check", &wheel];
    run(&repo.path, ".venv/bin/python", &pip, &[]);
    builds_and_tests(Project {
        name: "python",
        repo: &repo,
        check: ".venv/bin/python -m unittest -v",
        command: ".venv/bin/python -m unittest -v",
        buggy: "greeting.py",
        failure: "AssertionError: 'hello, wrld' != 'hello, world'",
        passed: &["test_greets_the_world", "test_runs_in_the_virtualenv", "Ran 2 tests", "\nOK"],
        home: env_var("HOME").into(),
        path: env_var("PATH"),
    })
    .await;
}

/// Node: `greet` packed and put in npm's cache (`~/.npm`) by `npm cache add`, installed into
/// `node_modules` by `npm ci --offline`; in the jail the model installs it again from the cache
/// (the lock file names the registry's URL: only the cache has it offline), then `npm test`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_project_with_node_modules_and_npms_cache_builds_and_tests() {
    require!(Need::UserNamespaces);
    require!(Need::Node);
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    let env = [
        ("HOME", h),
        ("npm_config_update_notifier", "false"),
        ("npm_config_audit", "false"),
        ("npm_config_fund", "false"),
    ];
    let greet = tempfile::tempdir().unwrap();
    for (name, body) in files_of(&Path::new(DATA).join("node/greet")) {
        std::fs::write(greet.path().join(name), body).unwrap();
    }
    let packed: serde_json::Value =
        serde_json::from_str(&run(greet.path(), "npm", &["pack", "--json", "--offline"], &env)).unwrap();
    let integrity = packed[0]["integrity"].as_str().expect("npm pack names the integrity").to_string();
    run(greet.path(), "npm", &["cache", "add", "--offline", "./hone-fixture-greet-1.0.0.tgz"], &env);
    assert!(home.path().join(".npm/_cacache").is_dir(), "npm's cache is not in ~/.npm");
    let repo = project_repo("node", &integrity);
    run(&repo.path, "npm", &["ci", "--offline"], &env);
    builds_and_tests(Project {
        name: "node",
        repo: &repo,
        check: "npm test",
        command: "npm ci --offline --no-audit --no-fund && npm test",
        buggy: "index.js",
        failure: "actual: 'hello, wrld'",
        passed: &["added 1 package", "ok 1 - greets the world", "# pass 1", "# fail 0"],
        home: home.path().to_path_buf(),
        path: env_var("PATH"),
    })
    .await;
}

/// Go: the module cache (`~/go/pkg/mod`) and `go.sum` filled by `go mod tidy` from a
/// `GOPROXY=file://` directory; in the jail `go test` finds `greet` only in the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_project_with_its_module_cache_builds_and_tests() {
    require!(Need::UserNamespaces);
    require!(Need::Go);
    let home = tempfile::tempdir().unwrap();
    let proxy = tempfile::tempdir().unwrap();
    let (h, px) = (home.path().to_str().unwrap(), proxy.path().to_str().unwrap());
    let goproxy = format!("file://{px}");
    // The module cache's usual place (no GOPATH, GOMODCACHE or GOENV of the machine), writable
    // so that the temp home can be removed; never the network.
    let env = [
        ("HOME", h),
        ("GOPATH", ""),
        ("GOMODCACHE", ""),
        ("GOCACHE", ""),
        ("GOENV", ""),
        ("GOFLAGS", "-modcacherw"),
        ("GOPROXY", &goproxy),
        ("GOSUMDB", "off"),
        ("GOTOOLCHAIN", "local"),
    ];
    let mkproxy = format!("{DATA}/go/mkproxy.go");
    run(proxy.path(), "go", &["run", &mkproxy, &format!("{DATA}/go/greet"), px], &env);
    let repo = project_repo("go", "");
    run(&repo.path, "go", &["mod", "tidy"], &env);
    repo.git(&["add", "go.sum"]);
    repo.git(&["commit", "-q", "-m", "go.sum"]);
    assert!(
        home.path().join("go/pkg/mod/example.com/greet@v1.0.0").is_dir(),
        "the module cache is not in ~/go/pkg/mod"
    );
    builds_and_tests(Project {
        name: "go",
        repo: &repo,
        check: "go test -v ./...",
        command: "go vet ./... && go test -v ./...",
        buggy: "app.go",
        failure: "Greeting() = \"hello, wrld\"",
        passed: &["--- PASS: TestGreeting", "ok  \texample.com/app"],
        home: home.path().to_path_buf(),
        path: env_var("PATH"),
    })
    .await;
}

/// Rust: a crate with a vendored path dependency, built and tested with `cargo test --offline`
/// by rustup's proxy in `~/.cargo/bin` and the toolchain in `~/.rustup` (the target dir is
/// `target/`, ignored, in the checkout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_project_with_cargo_and_rustup_in_the_home_builds_and_tests() {
    require!(Need::UserNamespaces);
    require!(Need::Rustup);
    let home = env_var("HOME");
    let repo = project_repo("rust", "");
    builds_and_tests(Project {
        name: "rust",
        repo: &repo,
        check: "cargo test --offline",
        command: "cargo build --offline && cargo test --offline",
        buggy: "src/lib.rs",
        failure: "left: \"hello, wrld\"",
        passed: &["Compiling app v0.1.0", "test tests::greets_the_world ... ok", "test result: ok. 1 passed"],
        // As `~/.cargo/env` (which rustup's installer has the shell source) puts it.
        path: format!("{home}/.cargo/bin:{}", env_var("PATH")),
        home: home.into(),
    })
    .await;
}
