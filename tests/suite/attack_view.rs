//! Review of issue 40 (the jail's view is built, `.git` carries no credential): credentials still
//! in the view. Each test is a place CI or a tool leaves a credential that the new view shows
//! raw: test code the model wrote (`cred_probe`) reads it, prints it encoded, and it must reach
//! no sink (the model's requests, the transcript, the reports, the pushed branch).

use super::cred_probe::*;
use super::jail_support::{cmd, fix, result_of, spec};
use crate::common::mock_model::MockModel;
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use std::path::Path;

/// The token actions/checkout persists into each submodule's config (`submodules: true`).
const SUBMODULE_TOKEN: &str = "ghs_SubmoduleSlashCanary0123456789ab";
/// The token of a second repository actions/checkout put in the workspace (`path: other`).
const SECOND_TOKEN: &str = "ghs_SecondCheckoutCanary0123456789ab";
/// A RubyGems API key (`~/.gem/credentials`, as `gem signin` and rubygems' release actions write).
const GEM_KEY: &str = "rubygems_5f0c2b9d8e7f6a5b4c3d2e1f0aCanaryKey";
/// A password in uv's plaintext credentials store (`uv auth login`).
const UV_PASSWORD: &str = "pypi-UvStoreCanary0123456789abcdef";
/// An npm token in the global npmrc of an nvm-installed node (`npm config set --global`).
const NPM_TOKEN: &str = "npm_NvmGlobalNpmrcCanary0123456789ab";

/// A repository whose submodule sits at `libs/foo` (so git names it `libs/foo` and keeps its git
/// dir in `.git/modules/libs/foo`), with actions/checkout's persisted header in that config.
fn repo_with_slash_submodule(token: &str) -> (TestRepo, String) {
    let repo = broken_repo();
    let src = repo.dir.path().join("foo-src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(src.join("lib.txt"), "lib\n").unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "lib"]);
    let url = src.display().to_string();
    repo.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", &url, "libs/foo"]);
    repo.git(&["commit", "-q", "-m", "add the submodule"]);
    repo.git(&["push", "-q", "origin", "main"]);
    assert!(repo.path.join(".git/modules/libs/foo/config").is_file(), "git keeps the submodule elsewhere");
    let (header, b64) = extraheader(token);
    git(&repo.path.join("libs/foo"), &["config", "--local", "http.https://github.com/.extraheader", &header]);
    (repo, b64)
}

/// actions/checkout with `submodules: true` and persisted credentials writes the header into each
/// submodule's config. A submodule whose name holds a `/` (any submodule below the top
/// directory) keeps its config in `.git/modules/<a>/<b>/config`, which the view shows raw. The
/// intake registered the token, so the probe's encodings are redacted; the jail must not show it
/// at all (the first line), and a form the redactor does not know (each
/// letter and digit shifted by one) must reach no sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submodule_below_the_top_keeps_no_persisted_extraheader_in_the_view() {
    require!(Need::UserNamespaces);
    let (repo, b64) = repo_with_slash_submodule(SUBMODULE_TOKEN);
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &[".git/modules/libs/foo/config"], &[]);
    mock.turn(cmd("grep -ci extraheader .git/modules/libs/foo/config"), false);
    let reveal =
        "sed -n 's/.*basic //p' .git/modules/libs/foo/config | base64 -d | cut -d: -f2 | tr 'A-Za-z0-9' 'B-ZAb-za1-90'";
    mock.turn(cmd(reveal), false);
    fix(&mock);
    let yaml = spec(&repo, "slashsub", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let shifted = rot1(SUBMODULE_TOKEN);
    let mut problems = sinks.all_leaks(&[
        ("the submodule's token", SUBMODULE_TOKEN),
        ("the submodule header's base64", &b64),
        ("the submodule's token shifted by one", &shifted),
    ]);
    problems.extend(probe_problems(&mock, probe_turn));
    let count = result_of(&mock, 2);
    if !count.contains("exit code: 1") {
        problems.push(format!("the jail shows the submodule's extraheader: `grep -ci extraheader` said {count}"));
    }
    assert_none(&problems, &mock, probe_turn);
}

/// A workflow that checks out a second repository into the workspace (actions/checkout with
/// `repository:` and `path: other`, ignored by the first) leaves that token persisted in
/// `other/.git/config`. Neither the view's git configs nor the credentials found in the checkout
/// look there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_checkout_in_the_workspace_keeps_no_persisted_extraheader_in_the_view() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "other/\n")]);
    let other = repo.path.join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("README"), "other\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "other"]);
    git(&other, &["remote", "add", "origin", "https://github.com/org/other"]);
    let (header, b64) = extraheader(SECOND_TOKEN);
    git(&other, &["config", "--local", "http.https://github.com/.extraheader", &header]);
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &["other/.git/config"], &[]);
    fix(&mock);
    let yaml = spec(&repo, "secondco", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("the second checkout's token", SECOND_TOKEN), ("its header's base64", &b64)]);
    problems.extend(probe_problems(&mock, probe_turn));
    assert_none(&problems, &mock, probe_turn);
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Toolchain places the view shows whole hold credentials of their own: RubyGems' API key in
/// `~/.gem/credentials` (GEM_HOME's default, shown whole), uv's credentials store in
/// `~/.local/share/uv/credentials/` (UV_PYTHON_INSTALL_DIR's default root, shown whole), and
/// the global npmrc of an nvm-installed node (`~/.nvm/versions/node/*/etc/npmrc`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_inside_toolchain_places_of_the_home_reach_no_sink() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let home = repo.dir.path().join("home");
    let gem = home.join(".gem/credentials");
    put(&gem, &format!("---\n:rubygems_api_key: {GEM_KEY}\n"));
    let uv = home.join(".local/share/uv/credentials/credentials.toml");
    put(
        &uv,
        &format!(
            "[[credential]]\nservice = \"https://upload.pypi.org/legacy/\"\nusername = \"__token__\"\npassword = \"{UV_PASSWORD}\"\n"
        ),
    );
    put(&home.join(".local/share/uv/python/.lock"), "");
    let npmrc = home.join(".nvm/versions/node/v20.11.1/etc/npmrc");
    put(&npmrc, &format!("//registry.npmjs.org/:_authToken={NPM_TOKEN}\n"));
    put(&home.join(".nvm/nvm.sh"), "# nvm\n");
    let files = [&gem, &uv, &npmrc].map(|p| p.display().to_string());
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &files.each_ref().map(String::as_str), &[]);
    fix(&mock);
    let yaml = spec(&repo, "toolcreds", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let home_var = home.display().to_string();
    let run = run_job_env(&repo, &yaml, &[("HOME", &home_var)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[
        ("~/.gem/credentials's API key", GEM_KEY),
        ("uv's stored password", UV_PASSWORD),
        ("nvm node's global npmrc token", NPM_TOKEN),
    ]);
    problems.extend(probe_problems(&mock, probe_turn));
    assert_none(&problems, &mock, probe_turn);
}

/// A password in `~/.netrc` (one of the home's masks).
const NETRC_PASSWORD: &str = "NetrcPasswordCanary0123456789abcd";
/// gh's token at its default place (`~/.config/gh/hosts.yml`, another mask).
const GH_TOKEN: &str = "gho_HomeMaskCanary0123456789abcdefgh";

/// The masks of the home are a second line "where a toolchain place or the policy shows them
/// after all" (plan.rs, `HOME_MASKS`). A policy that shows the home read-only
/// (`paths.sandbox_readable: [$HOME]`, say for a tool the view lacks) is bound after the masks
/// were made, over them: `~/.netrc` and `~/.config/gh` are read in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_masks_hold_where_the_policy_shows_the_home() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let home = repo.dir.path().join("home");
    let netrc = home.join(".netrc");
    put(&netrc, &format!("machine example.com login ci password {NETRC_PASSWORD}\n"));
    let gh = home.join(".config/gh/hosts.yml");
    put(&gh, &format!("github.com:\n    oauth_token: {GH_TOKEN}\n    user: ci\n"));
    let files = [&netrc, &gh].map(|p| p.display().to_string());
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &files.each_ref().map(String::as_str), &[]);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_readable: [{}]\n", home.display());
    let yaml = spec(&repo, "homemasks", &mock, &policy, "pr: { enabled: false }\n");
    let home_var = home.display().to_string();
    let run = run_job_env(&repo, &yaml, &[("HOME", &home_var)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[("~/.netrc's password", NETRC_PASSWORD), ("gh's token", GH_TOKEN)]);
    problems.extend(probe_problems(&mock, probe_turn));
    assert_none(&problems, &mock, probe_turn);
}

/// A key file that `GOOGLE_APPLICATION_CREDENTIALS` names is hidden in the work tree; but a CI
/// step's `git add -A` staged it before the run (`repo.allow_dirty`), so its blob is in the
/// object store the jail's git reads: `git show :path` prints it. The intake registered its
/// secrets, so a form the redactor does not know is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_file_staged_before_the_run_is_not_read_through_the_index() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let (creds, key) = service_account("eeee");
    std::fs::write(repo.path.join("gha-creds-eeee.json"), creds).unwrap();
    repo.git(&["add", "gha-creds-eeee.json"]);
    let gac = repo.path.join("gha-creds-eeee.json").display().to_string();
    let mock = MockModel::start().await;
    mock.turn(cmd("git show :gha-creds-eeee.json | tr 'A-Za-z0-9' 'B-ZAb-za1-90'"), false);
    fix(&mock);
    let yaml = spec(&repo, "staged", &mock, OPEN_POLICY, "repo: { allow_dirty: true }\npr: { enabled: false }\n");
    let run = run_job_env(&repo, &yaml, &[("GOOGLE_APPLICATION_CREDENTIALS", &gac)]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let problems = sinks.all_leaks(&[("the staged key", &key), ("the staged key shifted by one", &rot1(&key))]);
    assert!(problems.is_empty(), "{problems:#?}\n`git show :gha-creds-eeee.json` said: {}", result_of(&mock, 0));
    // Prevented, not redacted: the run stops at intake and says what to unstage.
    assert_eq!(run.code, 2, "the run should stop at intake: {}", run.stderr);
    assert!(
        run.stderr.contains("`gha-creds-eeee.json` is staged in the index")
            && run.stderr.contains("git restore --staged -- gha-creds-eeee.json"),
        "{}",
        run.stderr
    );
    assert!(mock.requests().is_empty(), "no model request was made");
}

/// An outcome is a promise: a file the model's command made where the policy denies reading
/// (`deploy.pem`) is never committed, and the run says so rather than leave it out in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_denied_file_the_run_made_is_left_out_of_the_change_and_said() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(cmd("printf 'not a key\\n' > deploy.pem"), false);
    fix(&mock);
    let yaml = spec(&repo, "leftout", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(result_of(&mock, 0).starts_with("exit code: 0"), "{}", result_of(&mock, 0));
    let committed = repo.git(&["show", "--stat", "--format=", "hone/leftout"]);
    assert!(committed.contains("status.txt") && !committed.contains("deploy.pem"), "{committed}");
    let warnings = run.report()["warnings"].to_string();
    assert!(warnings.contains("left out of the change: `deploy.pem`"), "{warnings}");
}
