//! The repositories and job specs tests start from, written and committed the way users do: the
//! spec (and any policy) inside the repository, which has no `.gitignore`.

use super::repo::{self, TestRepo};

pub const CHECK_SH: &str = "grep -qx fixed status.txt || { echo \"FAIL: status.txt says '$(cat status.txt 2>/dev/null)', expected 'fixed'\"; exit 1; }\n";

/// The scripted model's turns that fix `broken_repo` (for `provider: script` jobs, fleets).
pub const FIX_SCRIPT: &str = "turns:\n  - tool_calls:\n      - { name: write_file, arguments: { path: status.txt, content: \"fixed\\n\" } }\n  - content: Set status.txt to fixed.\n";

/// A fleet of one under `dir`: a bare copy of a `broken_repo` at `origins/app.git`, the job
/// `name` (the scripted model fixes the check; `job_tail` adds lines), and `fleet.yaml` naming
/// the origin's URL with workspace `ws`. Returns the fleet file.
pub fn fleet_of_one(dir: &std::path::Path, name: &str, job_tail: &str) -> std::path::PathBuf {
    let src = broken_repo();
    let origin = dir.join("origins/app.git");
    repo::git(dir, &["clone", "-q", "--bare", src.origin.to_str().unwrap(), origin.to_str().unwrap()]);
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: {name}\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\n{job_tail}"
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let fleet = dir.join("fleet.yaml");
    let text = format!("version: 1\njob: job.yaml\nrepos:\n  - url: {}\nworkspace: ws\n", origin.display());
    std::fs::write(&fleet, text).unwrap();
    fleet
}

/// A repo whose check fails until status.txt says `fixed`.
pub fn broken_repo() -> TestRepo {
    TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("src/lib.txt", "hello\n")])
}

/// Where the spec lives in the test repository, and the path hone is given (from the repository).
pub const SPEC: &str = "job.yaml";

/// The spec every mock-model job shares: the model is the mock at `base_url` (with `model_tail`,
/// its lines after `api_key_env`), one check (`sh check.sh`) and the usual limits.
fn mock_spec(name: &str, base_url: &str, model_tail: &str) -> String {
    format!(
        r#"version: 1
name: {name}
task: Make check.sh pass.
model:
  provider: openai-compatible
  name: mock-model
  base_url: {base_url}
  api_key_env: HONE_TEST_API_KEY
{model_tail}verify:
  - {{ name: check, run: "sh check.sh", timeout: 30s }}
limits: {{ max_turns: 10, max_wall_time: 60s, max_fix_attempts: 2 }}
plan: false
"#
    )
}

/// A job spec as a user writes it, for the mock model: no `repo:` (the repository is the one that
/// contains the spec) and no `report:` (the default, `.hone/reports` at the repository root).
pub fn job_yaml(name: &str, base_url: &str, stream: bool) -> String {
    let model = format!(
        "  stream: {stream}\n  idle_timeout: 10s\n  retry: {{ max_attempts: 4, initial_delay: 10ms, max_delay: 50ms }}\n"
    );
    mock_spec(name, base_url, &model)
}

/// `job_yaml` with a short idle timeout, for tests whose mock stalls a stream on purpose (the
/// default leaves a wide margin so that a slow machine never counts a timeout that did not happen).
pub fn stalling_job_yaml(name: &str, base_url: &str) -> String {
    job_yaml(name, base_url, true).replace("idle_timeout: 10s", "idle_timeout: 1s")
}

/// A job spec as a user writes it (non-streamed answers, a short retry), for `user_repo`.
pub fn user_spec(name: &str, base_url: &str) -> String {
    mock_spec(name, base_url, "  stream: false\n  retry: { max_attempts: 2, initial_delay: 10ms, max_delay: 20ms }\n")
}

/// A fresh clone: no `.gitignore`, the spec (and any `extra` files) committed at `spec_at`.
pub fn user_repo(spec_at: &str, spec: &str, extra: &[(&str, &str)]) -> TestRepo {
    let mut files = vec![("status.txt", "broken\n"), ("check.sh", CHECK_SH), (spec_at, spec)];
    files.extend_from_slice(extra);
    TestRepo::new(&files)
}

/// A policy for tests that run arbitrary commands: everything allowed except the usual denials.
pub const OPEN_POLICY: &str =
    "version: 1\ncommands:\n  default: allow\n  deny: [\"curl *\", \"wget *\", \"git push *\"]\n";

/// Write `policy` into the repository as `policy.yaml` (next to the spec; `run_job` commits it)
/// and point the spec at it.
pub fn with_policy(repo: &TestRepo, yaml: &str, policy: &str) -> String {
    std::fs::write(repo.path.join("policy.yaml"), policy).unwrap();
    format!("{yaml}policy: policy.yaml\n")
}

/// Write `yaml` as the repository's `job.yaml` and commit it with `policy.yaml` (if there is
/// one), as a user does before running hone; push the branch, so origin has the spec too.
/// Nothing else is staged: a test's own uncommitted changes stay uncommitted.
///
/// The harness's own git never runs what a (hostile) test repository configures: no fsmonitor,
/// no hooks, and pushes go to origin's path, not through `remote.origin.*`.
pub fn commit_spec(repo: &TestRepo, yaml: &str) {
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

/// A repository `owner/name` served by `git http-backend` under `served`, whose check fails
/// until status.txt says `fixed`.
pub fn served_repo(dir: &std::path::Path, served: &std::path::Path, owner: &str, name: &str) {
    let work = dir.join(format!("src-{owner}-{name}"));
    std::fs::create_dir_all(&work).unwrap();
    repo::git(&work, &["init", "-q"]);
    std::fs::write(work.join("status.txt"), "broken\n").unwrap();
    std::fs::write(work.join("check.sh"), CHECK_SH).unwrap();
    repo::git(&work, &["add", "-A"]);
    repo::git(&work, &["commit", "-q", "-m", "initial"]);
    super::git_http::serve_copy_of(served, &format!("{owner}/{name}.git"), &work);
}

/// A bare origin at `origin` (its default branch `main`) with one commit of `status.txt` and
/// `check.sh` made in `work`: a fleet's URL target.
pub fn origin_with(dir: &std::path::Path, work: &std::path::Path, origin: &std::path::Path, status: &str, check: &str) {
    std::fs::create_dir_all(work).unwrap();
    std::fs::create_dir_all(origin.parent().unwrap()).unwrap();
    repo::git(dir, &["init", "-q", "--bare", origin.to_str().unwrap()]);
    repo::git(work, &["init", "-q"]);
    std::fs::write(work.join("status.txt"), status).unwrap();
    std::fs::write(work.join("check.sh"), check).unwrap();
    repo::git(work, &["add", "-A"]);
    repo::git(work, &["commit", "-q", "-m", "initial"]);
    repo::git(work, &["push", "-q", origin.to_str().unwrap(), "HEAD:refs/heads/main"]);
    repo::git(origin, &["symbolic-ref", "HEAD", "refs/heads/main"]);
}

/// A mock GitHub where `fleet_of_one`'s `origins/app` has no PR yet and gets one (#1).
pub async fn fleet_of_one_github() -> wiremock::MockServer {
    let gh = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("GET"))
        .and(wiremock::matchers::path_regex("^/repos/origins/app/pulls$"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!([])))
        .mount(&gh)
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/repos/origins/app/pulls"))
        .respond_with(
            wiremock::ResponseTemplate::new(201)
                .set_body_json(serde_json::json!({"number": 1, "html_url": "https://g/origins/app/pull/1"})),
        )
        .mount(&gh)
        .await;
    gh
}
