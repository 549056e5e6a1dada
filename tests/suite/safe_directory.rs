//! A checkout owned by another user (a container job on the runner's checkout, a self-hosted
//! runner): hone works in it where git's `safe.directory` lets git, and otherwise stops at
//! intake (exit 2) naming the setting and the command that adds it. Root only: only root can
//! hand a fresh clone to another user.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

/// A user that owns nothing on the machine.
const OTHER: &str = "12345:12345";

fn give_away(repo: &TestRepo) {
    let st = std::process::Command::new("chown").args(["-R", OTHER, repo.path.to_str().unwrap()]).status().unwrap();
    assert!(st.success(), "chown");
}

/// A home whose `.gitconfig` holds `gitconfig`, and the environment that makes it the only
/// config git (and hone) would read besides the command line's.
fn home_with(dir: &std::path::Path, gitconfig: &str) -> Vec<(String, String)> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".gitconfig"), gitconfig).unwrap();
    let h = home.display().to_string();
    [("HOME", h.as_str()), ("XDG_CONFIG_HOME", &format!("{h}/.config")), ("GIT_CONFIG_NOSYSTEM", "1")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_of_another_user_not_in_safe_directory_stops_at_intake() {
    require!(Need::Root);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let real = repo.path.canonicalize().unwrap().display().to_string();
    // The control: `safe.directory` names another checkout only.
    let env = home_with(repo.dir.path(), "[safe]\n\tdirectory = /srv/elsewhere\n");
    commit_spec(&repo, &format!("{}pr: {{ enabled: false }}\n", job_yaml("safedir", &mock.base_url, false)));
    give_away(&repo);
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = run_in(&repo.path, &["run", SPEC], &env_ref, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("safe.directory") && said.contains("owned by another user"), "{said}");
    assert!(said.contains(&format!("git config --global --add safe.directory {real}")), "{said}");
    assert!(mock.requests().is_empty(), "no model request before intake passed");
    // git agrees: it refuses this checkout with the same config.
    let git = std::process::Command::new("git").args(["status"]).current_dir(&repo.path).envs(env).output().unwrap();
    assert!(!git.status.success(), "git worked where hone refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_of_another_user_in_safe_directory_works_to_a_commit_with_git_in_the_jail() {
    require!(Need::Root);
    // `DIR/*` is a pattern only from git 2.46 on; an older git lists no directory by it.
    let forms: &[&str] = if git_at_least(2, 46) { &["{path}", "*", "{parent}/*"] } else { &["{path}", "*"] };
    for listed in forms {
        let repo = broken_repo();
        let mock = MockModel::start().await;
        mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
            .turn(text("Set status.txt to fixed."), false);
        let real = repo.path.canonicalize().unwrap();
        let value = listed
            .replace("{path}", &real.display().to_string())
            .replace("{parent}", &real.parent().unwrap().display().to_string());
        let env = home_with(repo.dir.path(), &format!("[safe]\n\tdirectory = {value}\n"));
        // A check that runs git in the jail: it works there too.
        let check = "verify:\n  - { name: git, run: \"git status --porcelain\", timeout: 30s }\n";
        let y = job_yaml("safedir", &mock.base_url, false).replace("verify:\n", check);
        commit_spec(&repo, &format!("{y}pr: {{ enabled: false }}\n"));
        give_away(&repo);
        let git = std::process::Command::new("git").args(["status"]).current_dir(&repo.path).envs(env.clone()).output();
        assert!(git.unwrap().status.success(), "the control: git works in it with safe.directory = {value}");
        let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let run = run_in(&repo.path, &["run", SPEC], &env_ref, repo.path.join(".hone/reports")).await;
        assert_eq!(run.code, 0, "safe.directory = {value}: {}\n{}", run.stdout, run.stderr);
        assert!(run.report()["commit"]["sha"].is_string(), "safe.directory = {value}");
        assert_eq!(committed(&repo, "hone/safedir"), ["status.txt"]);
    }
}

/// A remote on this machine (pushed to in process) owned by another user: as git would refuse
/// to push there, so does hone, until `safe.directory` lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_remote_of_another_user_is_pushed_to_only_where_safe_directory_lists_it() {
    require!(Need::Root);
    for listed in [false, true] {
        let repo = broken_repo();
        let mock = MockModel::start().await;
        mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
            .turn(text("Set status.txt to fixed."), false);
        let origin = repo.origin.canonicalize().unwrap().display().to_string();
        let value = if listed { origin.clone() } else { "/srv/elsewhere".into() };
        let env = home_with(repo.dir.path(), &format!("[safe]\n\tdirectory = {value}\n"));
        commit_spec(&repo, &format!("{}pr: {{ enabled: false }}\n", job_yaml("safedir", &mock.base_url, false)));
        let st = std::process::Command::new("chown").args(["-R", OTHER, &origin]).status().unwrap();
        assert!(st.success());
        let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let run = run_in(&repo.path, &["run", SPEC], &env_ref, repo.path.join(".hone/reports")).await;
        let pushed = std::process::Command::new("git")
            .args(["-c", "safe.directory=*", "rev-parse", "--verify", "-q", "refs/heads/hone/safedir"])
            .current_dir(&repo.origin)
            .output()
            .unwrap();
        assert_eq!(pushed.status.success(), listed, "listed: {listed}: {}\n{}", run.stdout, run.stderr);
        if !listed {
            let errors = run.report()["errors"].to_string();
            assert!(errors.contains("safe.directory") && errors.contains(&origin), "{errors}");
        }
    }
}

/// Whether the `git` on PATH is at least `major.minor`.
fn git_at_least(major: u32, minor: u32) -> bool {
    let out = std::process::Command::new("git").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = text.split_whitespace().nth(2).unwrap_or("0.0").split('.').map(|n| n.parse::<u32>().unwrap_or(0));
    let (got_major, got_minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    (got_major, got_minor) >= (major, minor)
}
