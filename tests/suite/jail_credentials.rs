//! Attacks of issue 40 on the credentials git keeps (items 1 to 3): the token actions/checkout
//! persisted in `.git/config`'s `http.*.extraheader`, GitLab's job token in origin's URL, a
//! password in a fleet target's URL (kept in the clone's `.git/config`), and a `git.token_env`
//! whose name does not look secret (`GH_PAT`). Test code the model wrote (`cred_probe`) reads
//! them every way it can and prints them encoded; nothing of the secret may reach the model's
//! requests, the transcript, the reports or the pushed branch. Git still works read-only in the
//! jail, and shows origin's URL without its userinfo. The files and directories of credentials
//! are in `jail_credentials_files`.

use super::cred_probe::*;
use super::jail_support::{cmd, fix, result_of, spec};
use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_model::MockModel;
use crate::common::repo::git;
use crate::common::*;

/// The token actions/checkout persists (a GitHub installation token's shape).
const CHECKOUT_TOKEN: &str = "ghs_CheckoutPersisted0123456789abcdEF";
/// GitLab's CI job token, as the runner writes it into origin's URL.
const JOB_TOKEN: &str = "glcbt-64_JobTokenCanary0123456789abcd";
/// The password of a fleet target's URL.
const FLEET_PASSWORD: &str = "FleetPassw0rdCanary-0123456789";
/// The fleet's forge token (never offered to the target's plain-http URL).
const FLEET_GITHUB_TOKEN: &str = "ghp_FleetForgeToken0123456789abcdef";
/// A personal access token in a variable whose name the redactor does not take for a secret.
const PAT: &str = "github_pat_11PatCanary0123456789_abcdefXYZ";

/// The probe (turns 0 and 1), read-only git (2 to 4), the fix (5 and 6); the probe's turn.
fn probe_then_fix(mock: &MockModel, files: &[&str]) -> usize {
    let turn = queue_probe(mock, 0, files, &[]);
    queue_git_reads(mock);
    fix(mock);
    turn
}

/// Item 1: `.git/config` holds the header actions/checkout persists; origin stays the local bare
/// repository (so the push works). Neither the token nor the header's base64 reaches any sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persisted_checkout_extraheader_reaches_no_sink() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let (header, b64) = extraheader(CHECKOUT_TOKEN);
    repo.git(&["config", "http.https://github.com/.extraheader", &header]);
    let mock = MockModel::start().await;
    let probe_turn = probe_then_fix(&mock, &[".git/config"]);
    let yaml = spec(&repo, "extraheader", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("the checkout's token", CHECKOUT_TOKEN), ("the extraheader's base64", &b64)]);
    problems.extend(probe_problems(&mock, probe_turn));
    let head = repo.git(&["rev-parse", "main"]);
    problems.extend(git_reads_problems(&mock, 2, &head, repo.origin.to_str().unwrap()));
    problems.extend(push_problems(&repo.origin, "hone/extraheader", &run_errors(&run)));
    assert_none(&problems, &mock, probe_turn);
}

/// Item 2: origin's URL is `https://gitlab-ci-token:TOKEN@host/…`, as GitLab's runner writes
/// it, in GitLab CI (`CI_JOB_TOKEN`, `CI_SERVER_URL`: git over HTTPS, which asks for
/// credentials). The push still works; the token reaches no sink; the jail's git shows the URL
/// without the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_token_in_origins_url_reaches_no_sink() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    git(&repo.origin, &["config", "http.receivepack", "true"]);
    let server = GitHttp::start_tls(repo.dir.path(), Mode::Auth).await;
    let plain = format!("{}/origin.git", server.base);
    let with_token = plain.replace("https://", &format!("https://gitlab-ci-token:{JOB_TOKEN}@"));
    repo.git(&["config", "remote.origin.url", &with_token]);
    let mock = MockModel::start().await;
    let probe_turn = probe_then_fix(&mock, &[".git/config"]);
    let yaml = spec(&repo, "jobtoken", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let ca = test_ca().display().to_string();
    let env = [
        ("GITLAB_CI", "true"),
        ("CI_SERVER_URL", server.base.as_str()),
        ("CI_JOB_TOKEN", JOB_TOKEN),
        ("CI_PROJECT_PATH", "origin"),
        ("GIT_SSL_CAINFO", ca.as_str()),
    ];
    let run = run_job_env(&repo, &yaml, &env).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("the job token", JOB_TOKEN)]);
    problems.extend(probe_problems(&mock, probe_turn));
    let head = repo.git(&["rev-parse", "main"]);
    problems.extend(git_reads_problems(&mock, 2, &head, &plain));
    problems.extend(push_problems(&repo.origin, "hone/jobtoken", &run_errors(&run)));
    if !server.credentials().iter().any(|c| c == &format!("gitlab-ci-token:{JOB_TOKEN}")) {
        problems.push(format!("the push did not carry the job token: {:?}", server.seen()));
    }
    assert_none(&problems, &mock, probe_turn);
}

/// Item 2, fleets: a target URL with `user:password@` is cloned into `repos/<id>/`, whose
/// `.git/config` the command in that clone's jail reads. The password reaches no sink (the
/// fleet's reports, the clone, the served repository the run pushed to, with the URL's own
/// credentials).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_a_fleet_targets_url_reaches_no_sink() {
    use crate::suite::fleet_paths::origin;
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let served = dir.path().join("served");
    let bare = serve_copy_of(&served, "app.git", &good);
    let server = GitHttp::start(&served, Mode::Auth).await;
    let plain = format!("{}/app.git", server.base);
    let url = plain.replace("http://", &format!("http://hone-user:{FLEET_PASSWORD}@"));
    let mock = MockModel::start().await;
    let probe_turn = probe_then_fix(&mock, &[".git/config"]);
    let f = dir.path().join("f");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(f.join("policy.yaml"), OPEN_POLICY).unwrap();
    let job =
        format!("{}policy: policy.yaml\npr: {{ enabled: false }}\n", job_yaml("fleetcreds", &mock.base_url, false));
    std::fs::write(f.join("job.yaml"), job).unwrap();
    let file = f.join("fleet.yaml");
    std::fs::write(&file, format!("version: 1\njob: job.yaml\nrepos:\n  - url: {url}\nworkspace: ws\n")).unwrap();
    // A forge token, so that the fleet pushes; git is not offered it over plain http, and uses
    // the URL's own credentials.
    let env = [("GITHUB_TOKEN", FLEET_GITHUB_TOKEN)];
    let run = run_in(dir.path(), &["fleet", file.to_str().unwrap()], &env, dir.path().join("unused")).await;
    let ws = f.join("ws");
    let clones: Vec<_> =
        std::fs::read_dir(ws.join("repos")).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    let mut repos: Vec<&std::path::Path> = clones.iter().map(|p| p.as_path()).collect();
    repos.push(&bare);
    let mut sinks = Sinks::of(&run, &mock, &repos);
    sinks.add_files(&ws, &ws.join("repos"));
    let mut problems =
        sinks.all_leaks(&[("the fleet target's password", FLEET_PASSWORD), ("GITHUB_TOKEN", FLEET_GITHUB_TOKEN)]);
    if clones.len() != 1 {
        problems.push(format!("the fleet made {} clones, not one: {}", clones.len(), run.stderr));
    }
    problems.extend(probe_problems(&mock, probe_turn));
    problems.extend(git_reads_problems(&mock, 2, &git(&bare, &["rev-parse", "main"]), &plain));
    let fleet = std::fs::read_to_string(ws.join("fleet.json")).unwrap_or_default();
    let why = serde_json::from_str::<serde_json::Value>(&fleet).map(|f| f["repos"][0]["error"].to_string());
    problems.extend(push_problems(&bare, "hone/fleetcreds", &why.unwrap_or(run.stderr.clone())));
    assert_none(&problems, &mock, probe_turn);
}

/// Item 3 under the built-in policy (no policy file): `git.token_env: GH_PAT`, and the
/// extraheader made of that token. `cat .git/config` is all the model needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gh_pat_token_env_reaches_no_sink_under_the_builtin_policy() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let (header, b64) = extraheader(PAT);
    repo.git(&["config", "http.https://github.com/.extraheader", &header]);
    let mock = MockModel::start().await;
    mock.turn(cmd("cat .git/config"), false)
        .turn(cmd("git log -1 --format=%H"), false)
        .turn(cmd("git status --short"), false);
    fix(&mock);
    let yaml =
        format!("{}git: {{ token_env: GH_PAT }}\npr: {{ enabled: false }}\n", job_yaml("ghpat", &mock.base_url, false));
    let run = run_job_env(&repo, &yaml, &[("GH_PAT", PAT)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("GH_PAT", PAT), ("the extraheader's base64", &b64)]);
    let (config, log, status) = (result_of(&mock, 0), result_of(&mock, 1), result_of(&mock, 2));
    if !config.starts_with("exit code: 0") || !config.contains("[core]") {
        problems.push(format!("`cat .git/config` did not run, or showed no config: {config}"));
    }
    let head = repo.git(&["rev-parse", "main"]);
    if !log.starts_with("exit code: 0") || !log.contains(&head) {
        problems.push(format!("`git log -1` in the jail did not print HEAD {head}: {log}"));
    }
    if !status.starts_with("exit code: 0") {
        problems.push(format!("`git status` failed in the jail: {status}"));
    }
    problems.extend(push_problems(&repo.origin, "hone/ghpat", &run_errors(&run)));
    assert_none(&problems, &mock, 0);
}

/// Item 3 under an open policy: the probe, with `git.token_env: GH_PAT` and its extraheader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gh_pat_token_env_reaches_no_sink_under_an_open_policy() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let (header, b64) = extraheader(PAT);
    repo.git(&["config", "http.https://github.com/.extraheader", &header]);
    let mock = MockModel::start().await;
    let probe_turn = probe_then_fix(&mock, &[".git/config"]);
    let yaml = spec(&repo, "ghpatopen", &mock, OPEN_POLICY, "git: { token_env: GH_PAT }\npr: { enabled: false }\n");
    let run = run_job_env(&repo, &yaml, &[("GH_PAT", PAT)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("GH_PAT", PAT), ("the extraheader's base64", &b64)]);
    problems.extend(probe_problems(&mock, probe_turn));
    let head = repo.git(&["rev-parse", "main"]);
    problems.extend(git_reads_problems(&mock, 2, &head, repo.origin.to_str().unwrap()));
    problems.extend(push_problems(&repo.origin, "hone/ghpatopen", &run_errors(&run)));
    assert_none(&problems, &mock, probe_turn);
}
