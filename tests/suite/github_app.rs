//! hone as a GitHub App: `GITHUB_APP_ID` and the App's key are enough. Against a stand-in that
//! verifies the App's JWT with its public key, looks the installation up per owner, mints tokens
//! (for one repository, with the permissions asked) and takes only those on the PR endpoints;
//! pushes go to a real git server over HTTPS that records the credentials it got.

use super::jail_support::{all_tool_results, cmd, fix, rot13, spec, write};
use crate::common::git_http::{GitHttp, Mode, serve_copy_of, test_ca};
use crate::common::mock_github_app::{BOT_ID, MockGithubApp, SLUG, key, key_path};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

async fn fixing_model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    mock
}

/// Run `yaml` in `repo` as the App (`key_file`), for `acme/app` unless `extra` says otherwise.
async fn run_as_app(repo: &TestRepo, yaml: &str, app: &MockGithubApp, key_file: &Path, extra: &[(&str, &str)]) -> Run {
    let mut env = app.env(key_file);
    env.push(("GITHUB_REPOSITORY".into(), "acme/app".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_job_env(repo, yaml, &env).await
}

fn perms(grants: &[(&str, &str)]) -> BTreeMap<String, String> {
    grants.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The credential each request to the PR endpoints of `owner/repo` carried.
fn pr_credentials(app: &MockGithubApp, owner: &str, repo: &str) -> Vec<String> {
    let under = format!("/repos/{owner}/{repo}/");
    let seen = app.seen().into_iter().filter(|s| s.path.starts_with(&under) && !s.path.ends_with("/installation"));
    seen.map(|s| s.credential).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pushes_and_opens_its_pr_as_the_app_and_never_shows_the_token() {
    let app = MockGithubApp::start(&["acme"]).await;
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    let bare = serve_copy_of(served.path(), "acme/app.git", &repo.origin);
    let forge = GitHttp::start_tls(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/acme/app.git", forge.base)]);
    let model = fixing_model().await;
    let yaml =
        format!("{}pr:\n  labels: [automated]\n  reviewers: [octocat]\n", job_yaml("appjob", &model.base_url, false));
    let ca = test_ca().display().to_string();
    let extra = [("GITHUB_SERVER_URL", forge.base.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    let run = run_as_app(&repo, &yaml, &app, &key_path(true), &extra).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let minted = app.minted();
    assert_eq!(minted.len(), 1, "one token, minted at intake and kept for the push and the PR: {minted:#?}");
    let t = &minted[0];
    assert_eq!((t.owner.as_str(), t.repo.as_str()), ("acme", "app"), "a token for this repository alone");
    let want = perms(&[("contents", "write"), ("issues", "write"), ("pull_requests", "write")]);
    assert_eq!(t.permissions, want, "the least the job needs: push, PR, labels");
    for s in app.seen() {
        let by_jwt = s.path == "/app" || s.path.starts_with("/app/") || s.path.ends_with("/installation");
        let want = if by_jwt { "jwt" } else { t.token.as_str() };
        assert_eq!(s.credential, want, "{} {}", s.method, s.path);
    }
    assert_eq!(app.seen_at("/repos/acme/app/installation").len(), 1);
    let posts: Vec<String> = app.seen().into_iter().filter(|s| s.method == "POST").map(|s| s.path).collect();
    assert!(posts.contains(&"/repos/acme/app/pulls".to_string()), "{posts:?}");
    assert!(posts.contains(&"/repos/acme/app/issues/1/labels".to_string()), "{posts:?}");
    let report = run.report();
    assert_eq!((report["pr"]["operation"].as_str(), report["pr"]["number"].as_u64()), (Some("created"), Some(1)));

    let got = forge.credentials();
    assert!(!got.is_empty(), "the forge asked for credentials and got none");
    assert!(
        got.iter().all(|c| c == &format!("x-access-token:{}", t.token)),
        "git pushed with the App's token: {got:?}"
    );
    let sha = report["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/hone/appjob"]), sha, "the forge took the push");
    let bot = format!("{SLUG}[bot] <{BOT_ID}+{SLUG}[bot]@users.noreply.github.com>");
    let who = git(&bare, &["log", "-1", "--format=%an <%ae>|%cn <%ce>", "refs/heads/hone/appjob"]);
    assert_eq!(who, format!("{bot}|{bot}"), "the App's bot authored and committed");

    run.assert_no_secret(&t.token);
    let key_line = key(true).lines().nth(5).unwrap().to_string();
    run.assert_no_secret(&key_line);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_about_to_expire_is_minted_again_before_its_next_use() {
    let app = MockGithubApp::start(&["acme"]).await;
    // Four minutes: less than the five hone keeps in hand, so the token from intake is not
    // used again when the PR is opened.
    app.token_lifetime(Duration::from_secs(4 * 60));
    let repo = broken_repo();
    let model = fixing_model().await;
    let run = run_as_app(&repo, &job_yaml("appjob", &model.base_url, false), &app, &key_path(true), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let minted = app.minted();
    assert_eq!(minted.len(), 2, "minted at intake, and again before the PR: {minted:#?}");
    assert!(minted.iter().all(|m| m.owner == "acme" && m.repo == "app"));
    let used = pr_credentials(&app, "acme", "app");
    assert!(!used.is_empty(), "the PR endpoints were called");
    assert!(used.iter().all(|c| c == &minted[1].token), "only the fresh token reached the PR endpoints: {used:?}");
    assert_eq!(app.seen_at("/repos/acme/app/installation").len(), 1, "the installation is looked up once");
    for m in &minted {
        run.assert_no_secret(&m.token);
    }
}

/// A GitHub refusal (or a key hone cannot use) stops the run at intake, exit 2, before any
/// model request, saying what to do.
async fn refused_at_intake(app: &MockGithubApp, yaml_extra: &str, key_file: &Path, extra: &[(&str, &str)]) -> String {
    let repo = broken_repo();
    let model = MockModel::start().await;
    let yaml = format!("{}{yaml_extra}", job_yaml("appjob", &model.base_url, false));
    let run = run_as_app(&repo, &yaml, app, key_file, extra).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(model.requests().is_empty(), "the model was asked before the App's token was had");
    assert!(app.minted().iter().all(|m| !run.stderr.contains(&m.token)));
    let report = run.report();
    let error = &report["errors"][0];
    assert!(error["hint"].as_str().is_some_and(|h| !h.is_empty()), "says what to do: {error}");
    format!("{} {}", error["message"], error["hint"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_a_missing_installation_or_permission_stops_the_run_saying_what_to_do() {
    let app = MockGithubApp::start(&["acme"]).await;
    app.expect_refusals(1);
    let said = refused_at_intake(&app, "", &key_path(false), &[]).await;
    assert!(said.contains("refused the JWT of the GitHub App 424242"), "{said}");
    assert!(said.contains("private key"), "{said}");
    assert!(app.refusals()[0].contains("JWT refused"), "{:?}", app.refusals());
    assert!(app.minted().is_empty());

    let app = MockGithubApp::start(&["acme"]).await;
    let said =
        refused_at_intake(&app, "", &key_path(true), &[("GITHUB_APP_PRIVATE_KEY_FILE", "/nonexistent/key.pem")]).await;
    assert!(said.contains("cannot read GITHUB_APP_PRIVATE_KEY_FILE"), "{said}");
    let bad = "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n";
    let said = refused_at_intake(
        &app,
        "",
        Path::new(""),
        &[("GITHUB_APP_PRIVATE_KEY_FILE", ""), ("GITHUB_APP_PRIVATE_KEY", bad)],
    )
    .await;
    assert!(said.contains("GITHUB_APP_PRIVATE_KEY is not a usable RSA key"), "{said}");
    assert!(!said.contains("bm90IGEga2V5"), "the key is not shown: {said}");
    assert!(app.seen().is_empty(), "a key hone cannot use is never sent anywhere: {:?}", app.seen());

    let app = MockGithubApp::start(&["acme"]).await;
    app.expect_refusals(1);
    let said = refused_at_intake(&app, "", &key_path(true), &[("GITHUB_REPOSITORY", "stranger/app")]).await;
    assert!(said.contains("not installed on stranger/app") && said.contains("install the App on `stranger`"), "{said}");

    let app = MockGithubApp::start(&["acme"]).await;
    app.grant_only(&[("contents", "write"), ("pull_requests", "write")]);
    app.expect_refusals(1);
    let said = refused_at_intake(&app, "pr: { labels: [automated] }\n", &key_path(true), &[]).await;
    assert!(said.contains("issues: write") && said.contains("grant the App"), "names the permission: {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_key_file_is_hidden_from_jailed_commands() {
    require!(Need::UserNamespaces);
    let app = MockGithubApp::start(&["acme"]).await;
    // Not `*.pem` (which the default policy denies to the tools anyway): only the hiding of
    // GITHUB_APP_PRIVATE_KEY_FILE stands between the commands and the key.
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "github-app-key\n")]);
    let key_file = repo.path.join("github-app-key");
    std::fs::write(&key_file, key(true)).unwrap();
    let mock = MockModel::start().await;
    // rot13, which no redactor undoes: what the command read is what the model gets.
    let peek = "wc -c github-app-key; tr 'A-Za-z' 'N-ZA-Mn-za-m' < github-app-key\n";
    mock.turn(call("read_file", json!({"path": "github-app-key"})), false)
        .turn(write("peek.sh", peek), false)
        .turn(cmd("sh peek.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, "appjail", &mock, OPEN_POLICY, "");
    let run = run_as_app(&repo, &yaml, &app, &key_file, &[]).await;
    let seen = all_tool_results(&mock);
    for line in key(true).lines().filter(|l| !l.starts_with("-----")).take(5) {
        assert!(!seen.contains(&rot13(line)), "a command read the App's key: {seen}");
    }
    assert!(!seen.contains(&rot13("BEGIN RSA PRIVATE KEY")), "a command read the App's key: {seen}");
    assert!(seen.contains("denied by the policy"), "the tools say why: {seen}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), key(true), "the file itself is left as it was");
    assert_eq!(app.minted().len(), 1, "and the App still worked: {}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_across_two_owners_uses_one_installation_per_owner() {
    let app = MockGithubApp::start(&["acme", "umbrella"]).await;
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    let targets = [("acme", "one"), ("acme", "two"), ("umbrella", "three")];
    for (owner, name) in targets {
        served_repo(dir.path(), &served, owner, name);
    }
    let forge = GitHttp::start_tls(&served, Mode::Auth).await;
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nname: fleetjob\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nlimits: { max_fix_attempts: 0 }\nplan: false\npr: { enabled: true }\n",
    )
    .unwrap();
    let repos: Vec<String> = targets.iter().map(|(o, n)| format!("  - url: {}/{o}/{n}.git", forge.base)).collect();
    let file = dir.path().join("fleet.yaml");
    let fleet = format!("version: 1\njob: job.yaml\nrepos:\n{}\nconcurrency: 2\nworkspace: ws\n", repos.join("\n"));
    std::fs::write(&file, fleet).unwrap();
    let mut env = app.env(&key_path(true));
    env.push(("GITHUB_SERVER_URL".into(), forge.base.clone()));
    env.push(("GIT_SSL_CAINFO".into(), test_ca().display().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = run_hone_env(&["fleet", file.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    let lookups: Vec<String> =
        app.seen_at("/repos/*").into_iter().filter(|s| s.path.ends_with("/installation")).map(|s| s.path).collect();
    assert_eq!(lookups.len(), 2, "one lookup per owner, not per repository: {lookups:?}");
    assert!(
        lookups.iter().any(|p| p.starts_with("/repos/acme/"))
            && lookups.iter().any(|p| p.starts_with("/repos/umbrella/"))
    );
    let minted = app.minted();
    let mut for_repos: Vec<String> = minted.iter().map(|m| format!("{}/{}", m.owner, m.repo)).collect();
    for_repos.sort();
    assert_eq!(
        for_repos,
        ["acme/one", "acme/two", "umbrella/three"],
        "one token per repository, kept from clone to PR"
    );
    for (owner, name) in targets {
        let token = &minted.iter().find(|m| m.repo == name).unwrap().token;
        let used = pr_credentials(&app, owner, name);
        assert!(!used.is_empty() && used.iter().all(|c| c == token), "{owner}/{name}: {used:?}");
        let git_seen: Vec<String> = forge
            .seen()
            .into_iter()
            .filter(|s| s.path.starts_with(&format!("/{owner}/{name}.git/")))
            .filter_map(|s| s.authorization)
            .collect();
        assert!(!git_seen.is_empty(), "{owner}/{name}: git sent no credentials");
        use base64::Engine;
        let basic =
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}")));
        assert!(git_seen.iter().all(|a| a == &basic), "{owner}/{name}: git used another credential: {git_seen:?}");
        assert!(
            !run.stdout.contains(token.as_str()) && !run.stderr.contains(token.as_str()),
            "{owner}/{name}'s token shown"
        );
        let leaks = files_holding(&dir.path().join("ws"), token);
        assert!(leaks.is_empty(), "{owner}/{name}'s token is written in {leaks:?}");
    }
    let creates = app.seen().into_iter().filter(|s| s.method == "POST" && s.path.ends_with("/pulls")).count();
    assert_eq!(creates, 3, "a PR for each repository");
}

/// Every file under `dir` (reports, clones and their `.git`) whose bytes hold `secret`.
fn files_holding(dir: &Path, secret: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let (p, t) = (e.path(), e.file_type().unwrap());
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() && std::fs::read(&p).unwrap().windows(secret.len()).any(|w| w == secret.as_bytes()) {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

/// The checkout's remote URL is the repository side's to write: without GITHUB_REPOSITORY, an
/// App installed on another owner too mints no token for the repository that URL names, and the
/// run stops at intake saying what to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_mints_no_token_for_a_repository_only_the_remote_url_names() {
    let app = MockGithubApp::start(&["acme", "other"]).await;
    let repo = broken_repo();
    let served = tempfile::tempdir().unwrap();
    serve_copy_of(served.path(), "other/x.git", &repo.origin);
    let forge = GitHttp::start_tls(served.path(), Mode::Auth).await;
    repo.git(&["config", "remote.origin.url", &format!("{}/other/x.git", forge.base)]);
    let model = fixing_model().await;
    let yaml = format!("{}pr: {{ enabled: true }}\n", job_yaml("appjob", &model.base_url, false));
    let ca = test_ca().display().to_string();
    let mut env = app.env(&key_path(true));
    env.extend([("GITHUB_SERVER_URL".to_string(), forge.base.clone()), ("GIT_SSL_CAINFO".to_string(), ca)]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("GITHUB_REPOSITORY"), "{}", run.stderr);
    assert!(app.minted().is_empty(), "a token was minted for the remote's repository: {:#?}", app.minted());
    assert!(forge.credentials().is_empty(), "nothing reached the remote");
}
