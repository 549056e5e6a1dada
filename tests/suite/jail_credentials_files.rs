//! Attacks of issue 40 on credential files (items 4 to 6): a second `gha-creds-*.json` in the
//! checkout that no variable names, hone's own checkpoints and saved failed work holding a
//! hidden file, and the credential directories CI moves with `CLOUDSDK_CONFIG`,
//! `AZURE_CONFIG_DIR`, `DOCKER_CONFIG`, `KUBECONFIG` and `GH_CONFIG_DIR`. The probe and the
//! sinks are `cred_probe`'s; the credentials git keeps are in `jail_credentials`.

use super::cred_probe::*;
use super::jail_support::{fix, spec, write};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use base64::Engine;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A `broken_repo` that also commits `gitignore` as its `.gitignore`.
fn repo_ignoring(gitignore: &str) -> TestRepo {
    TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", gitignore)])
}

/// Item 4: two google-github-actions/auth steps left two key files, both ignored as that
/// action asks; `GOOGLE_APPLICATION_CREDENTIALS` names the first. Neither key reaches a sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_credentials_file_in_the_checkout_reaches_no_sink() {
    require!(Need::UserNamespaces);
    let repo = repo_ignoring("gha-creds-*.json\n");
    let (named, named_key) = service_account("aaaa");
    let (other, other_key) = service_account("bbbb");
    std::fs::write(repo.path.join("gha-creds-aaaa.json"), named).unwrap();
    std::fs::write(repo.path.join("gha-creds-bbbb.json"), other).unwrap();
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &["gha-creds-aaaa.json", "gha-creds-bbbb.json"], &["."]);
    fix(&mock);
    let yaml = spec(&repo, "twocreds", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let gac = repo.path.join("gha-creds-aaaa.json").display().to_string();
    let run = run_job_env(&repo, &yaml, &[("GOOGLE_APPLICATION_CREDENTIALS", &gac)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems =
        sinks.all_leaks(&[("the named file's private key", &named_key), ("the other file's private key", &other_key)]);
    problems.extend(probe_problems(&mock, probe_turn));
    problems.extend(push_problems(&repo.origin, "hone/twocreds", &run_errors(&run)));
    assert_none(&problems, &mock, probe_turn);
}

/// A one-step plan with the step in `status`.
fn plan(status: &str) -> serde_json::Value {
    json!({"steps": [{"title": "fix status.txt", "intent": "make the check pass", "status": status,
           "expected_files": ["status.txt"]}], "verification": "check.sh", "risk": "low"})
}

/// The refs under `refs/hone/` and the paths of each one's tree that hold `needle`.
fn hone_refs(repo: &TestRepo, needle: &str) -> Vec<(String, Vec<String>)> {
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/hone"]);
    refs.lines()
        .map(|r| {
            let paths = repo.git(&["ls-tree", "-r", "--name-only", r]);
            (r.to_string(), paths.lines().filter(|p| p.contains(needle)).map(str::to_string).collect())
        })
        .collect()
}

/// Item 5: with `repo.allow_dirty` and a plan, an untracked (not ignored) key file that
/// `GOOGLE_APPLICATION_CREDENTIALS` names is in the checkout. A first run makes a checkpoint
/// and fails (its work saved on `refs/hone/ckfail/failed`); a second run makes its own
/// checkpoint, then its probe reads every ref with `git show` and `git cat-file`. No ref under
/// `refs/hone/` holds the file (the test looks itself), and its key reaches no sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_and_saved_work_hold_no_hidden_file() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let (creds, key) = service_account("cccc");
    std::fs::write(repo.path.join("gha-creds-cccc.json"), creds).unwrap();
    let gac = repo.path.join("gha-creds-cccc.json").display().to_string();
    let env = [("GOOGLE_APPLICATION_CREDENTIALS", gac.as_str())];
    let extra = "repo: { allow_dirty: true }\npr: { enabled: false }\n";

    // The first run: a checkpoint after its step, then it gives up, and its work is saved.
    let first = MockModel::start().await;
    first
        .turn(call("update_plan", plan("in_progress")), false)
        .turn(write("notes.txt", "tried\n"), false)
        .turn(call("update_plan", plan("done")), false)
        .turn(call("finish", json!({"outcome": "blocked", "summary": "Tried.", "reason": "needs a person"})), false);
    let yaml = spec(&repo, "ckfail", &first, OPEN_POLICY, extra).replace("plan: false\n", "");
    let failed = run_job_env(&repo, &yaml, &env).await;

    // The second run: a checkpoint, then the probe, then success and a push.
    let mock = MockModel::start().await;
    mock.turn(call("update_plan", plan("in_progress")), false)
        .turn(write("status.txt", "fixed\n"), false)
        .turn(call("update_plan", plan("done")), false);
    let probe_turn = queue_probe(&mock, 3, &["gha-creds-cccc.json"], &[]);
    mock.turn(text("Set status.txt to fixed."), false);
    let yaml = spec(&repo, "ckprobe", &mock, OPEN_POLICY, extra).replace("plan: false\n", "");
    let run = run_job_env(&repo, &yaml, &env).await;

    let mut sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    sinks.0.extend(Sinks::of(&failed, &first, &[]).0.into_iter().map(|(k, v)| (format!("the first run's {k}"), v)));
    let mut problems = sinks.all_leaks(&[("the key file's private key", &key)]);
    problems.extend(probe_problems(&mock, probe_turn));
    let refs = hone_refs(&repo, "gha-creds");
    for want in ["refs/hone/ckfail/checkpoints/1", "refs/hone/ckfail/failed", "refs/hone/ckprobe/checkpoints/1"] {
        if !refs.iter().any(|(r, _)| r == want) {
            problems.push(format!("no {want} (the first run said {}): the test proves nothing", run_errors(&failed)));
        }
    }
    for (r, held) in refs.iter().filter(|(_, held)| !held.is_empty()) {
        problems.push(format!("{r} holds the hidden file: {held:?}"));
    }
    problems.extend(push_problems(&repo.origin, "hone/ckprobe", &run_errors(&run)));
    assert_none(&problems, &mock, probe_turn);
}

/// The credential places of item 6 under `base`, each holding a fake credential named with
/// `tag`: the variables that point there, the directories and files to read, and the secrets.
struct Moved {
    env: Vec<(&'static str, String)>,
    dirs: Vec<String>,
    files: Vec<String>,
    secrets: Vec<(String, String)>,
}

fn put(path: &Path, text: &str) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

fn moved_credentials(base: &Path, tag: &str) -> Moved {
    let refresh = format!("1-0gGcloudRefresh{tag}Canary0123456789");
    let adc = json!({"type": "authorized_user", "client_id": "764086051850-ci.apps.googleusercontent.com",
                     "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": refresh});
    let gcloud = base.join("gcloud");
    put(&gcloud.join("application_default_credentials.json"), &adc.to_string());
    let (sa, sa_key) = service_account(&format!("gcloud {tag}"));
    put(&gcloud.join("legacy_credentials/ci@ci-project.iam.gserviceaccount.com/adc.json"), &sa);
    put(&gcloud.join("configurations/config_default"), "[core]\naccount = ci@ci-project.iam.gserviceaccount.com\n");
    let azure_refresh = format!("0.ARefresh{tag}AzureCanary0123456789");
    let msal = json!({"AccessToken": {"a": {"credential_type": "AccessToken", "secret": format!("eyJ0eXAiOiJKV1Qi.Access{tag}AzureCanary")}},
                      "RefreshToken": {"r": {"credential_type": "RefreshToken", "secret": azure_refresh}}});
    let azure = base.join("azure");
    put(&azure.join("msal_token_cache.json"), &msal.to_string());
    let docker_password = format!("dckr_pat_Docker{tag}Canary0123456789");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci-bot:{docker_password}"));
    let docker = base.join("docker");
    put(&docker.join("config.json"), &json!({"auths": {"registry.example.com": {"auth": auth}}}).to_string());
    let kube_token = format!("kube{tag}CanaryToken0123456789");
    let kubeconfig = |token: &str| {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ci\n  cluster: {{ server: https://k8s.example.com }}\nusers:\n- name: ci\n  user:\n    token: {token}\ncontexts:\n- name: ci\n  context: {{ cluster: ci, user: ci }}\ncurrent-context: ci\n"
        )
    };
    let kube_extra = format!("kubeExtra{tag}CanaryToken0123456789");
    let kube = put(&base.join("kubeconfig"), &kubeconfig(&kube_token));
    let extra = put(&base.join("kube/extra.yaml"), &kubeconfig(&kube_extra));
    let gh_token = format!("gho_Gh{tag}Canary0123456789abcdef");
    let gh = base.join("gh");
    put(
        &gh.join("hosts.yml"),
        &format!("github.com:\n    oauth_token: {gh_token}\n    user: ci-bot\n    git_protocol: https\n"),
    );
    let dirs = [&gcloud, &azure, &docker, &gh].map(|d| d.display().to_string());
    Moved {
        env: vec![
            ("CLOUDSDK_CONFIG", dirs[0].clone()),
            ("AZURE_CONFIG_DIR", dirs[1].clone()),
            ("DOCKER_CONFIG", dirs[2].clone()),
            ("KUBECONFIG", format!("{kube}:{extra}")),
            ("GH_CONFIG_DIR", dirs[3].clone()),
        ],
        dirs: dirs.to_vec(),
        files: vec![kube, extra],
        secrets: [
            ("gcloud's refresh token", refresh),
            ("gcloud's service account key", sa_key),
            ("Azure's refresh token", azure_refresh),
            ("Docker's password", docker_password),
            ("Docker's auth", auth),
            ("the kubeconfig's token", kube_token),
            ("the second kubeconfig's token", kube_extra),
            ("gh's OAuth token", gh_token),
        ]
        .map(|(l, s)| (l.to_string(), s))
        .to_vec(),
    }
}

/// One run of item 6: `home` is hone's HOME, the credentials are under `base`; the probe reads
/// them, git reads run, the model fixes the check.
async fn moved_run(repo: &TestRepo, home: &Path, base: &Path, tag: &str, name: &str) {
    let moved = moved_credentials(base, tag);
    std::fs::create_dir_all(home).unwrap();
    let mock = MockModel::start().await;
    let files: Vec<&str> = moved.files.iter().map(String::as_str).collect();
    let dirs: Vec<&str> = moved.dirs.iter().map(String::as_str).collect();
    let probe_turn = queue_probe(&mock, 0, &files, &dirs);
    queue_git_reads(&mock);
    fix(&mock);
    let yaml = spec(repo, name, &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let home_var = home.display().to_string();
    let mut env: Vec<(&str, &str)> = moved.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("HOME", &home_var));
    let run = run_job_env(repo, &yaml, &env).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let secrets: Vec<(&str, &str)> = moved.secrets.iter().map(|(l, s)| (l.as_str(), s.as_str())).collect();
    let mut problems = sinks.all_leaks(&secrets);
    problems.extend(probe_problems(&mock, probe_turn));
    let head = repo.git(&["rev-parse", "main"]);
    problems.extend(git_reads_problems(&mock, 2, &head, repo.origin.to_str().unwrap()));
    problems.extend(push_problems(&repo.origin, &format!("hone/{name}"), &run_errors(&run)));
    assert_none(&problems, &mock, probe_turn);
}

/// Item 6, in the home: the five variables point at a CI runner's temp dir under hone's HOME
/// (`$HOME/work/_temp/…`), not the tools' default places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_dirs_moved_under_the_home_reach_no_sink() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let home: PathBuf = repo.dir.path().join("home");
    moved_run(&repo, &home, &home.join("work/_temp"), "Home", "movedhome").await;
}

/// Item 6, outside the home: the five variables point inside the checkout, at an ignored
/// directory the jail shows today.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_dirs_moved_into_the_checkout_reach_no_sink() {
    require!(Need::UserNamespaces);
    let repo = repo_ignoring(".ci/\n");
    let home = repo.dir.path().join("home");
    let base = repo.path.join(".ci");
    std::fs::create_dir_all(&base).unwrap();
    assert_eq!(git(&repo.path, &["check-ignore", ".ci"]), ".ci", "the test's place is not ignored");
    moved_run(&repo, &home, &base, "Checkout", "movedcheckout").await;
}
