//! hone's push never runs a program of the remote's choosing: a repository on this machine (a
//! path or a `file://` URL) is pushed to in process, so none of its hooks or config programs run;
//! a remote inside the work tree is refused; and a URL that git could read as an option is
//! refused before git sees it.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::{TestRepo, git};
use crate::common::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every hook git's receive side runs.
const HOOKS: [&str; 7] = [
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "reference-transaction",
    "proc-receive",
    "push-to-checkout",
];

/// A bare repository at `at` holding `main` of `repo`, whose every receive hook (and
/// `proc-receive`, through `receive.procReceiveRefs`) appends its name to `marker`.
fn hooked_bare(repo: &TestRepo, at: &Path, marker: &Path) {
    git(at.parent().unwrap(), &["init", "-q", "--bare", at.to_str().unwrap()]);
    git(&repo.path, &["push", "-q", at.to_str().unwrap(), "main"]);
    git(at, &["config", "receive.procReceiveRefs", "refs/heads"]);
    for hook in HOOKS {
        let p = at.join("hooks").join(hook);
        std::fs::write(&p, format!("#!/bin/sh\necho {hook} >> '{}'\nexit 0\n", marker.display())).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A run that fixes the check and pushes `hone/remotejob` to the work tree's `origin`.
async fn run_push(repo: &TestRepo) -> Run {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
    let yaml = format!("{}pr: {{ enabled: false }}\n", job_yaml("remotejob", &mock.base_url, false));
    run_job(repo, &yaml, &[]).await
}

fn ran(marker: &Path) -> String {
    std::fs::read_to_string(marker).unwrap_or_default()
}

/// A local bare remote outside the work tree (as a path and as a `file://` URL) takes the push,
/// and none of its hooks runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_remotes_hooks_never_run() {
    for form in ["path", "file"] {
        let repo = broken_repo();
        let marker = repo.dir.path().join("hook-ran");
        let bare = repo.dir.path().join("hooked.git");
        hooked_bare(&repo, &bare, &marker);
        let url = match form {
            "path" => bare.display().to_string(),
            _ => format!("file://{}", bare.display()),
        };
        repo.git(&["config", "remote.origin.url", &url]);
        let run = run_push(&repo).await;
        assert_eq!(run.code, 0, "{form}: {}\n{}", run.stderr, run.report()["errors"]);
        let sha = run.report()["commit"]["sha"].as_str().unwrap().to_string();
        assert_eq!(git(&bare, &["rev-parse", "refs/heads/hone/remotejob"]), sha, "{form}: the remote took the push");
        assert_eq!(ran(&marker), "", "{form}: the remote's hooks ran on the host");
    }
}

/// A second run replaces hone's own branch on a local remote, with the lease it read (the lease
/// itself: `forge::local`'s unit tests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_local_push_replaces_hones_branch() {
    let repo = broken_repo();
    let bare = repo.dir.path().join("plain.git");
    hooked_bare(&repo, &bare, &repo.dir.path().join("unused"));
    repo.git(&["config", "remote.origin.url", bare.to_str().unwrap()]);
    let first = run_push(&repo).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let sha = first.report()["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/hone/remotejob"]), sha);
    let second = run_push(&repo).await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let again = second.report()["commit"]["sha"].as_str().unwrap().to_string();
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/hone/remotejob"]), again);
}

/// A bare repository committed inside the work tree, with an executable hook, named by
/// `.git/config` as `./ci/mirror.git`: hone refuses it, and the hook never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_inside_the_work_tree_is_refused() {
    let repo = broken_repo();
    let marker = repo.dir.path().join("hook-ran");
    let mirror = repo.path.join("ci/mirror.git");
    std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
    hooked_bare(&repo, &mirror, &marker);
    repo.git(&["add", "-f", "ci"]);
    repo.git(&["commit", "-q", "-m", "a mirror"]);
    repo.git(&["push", "-q", repo.origin.to_str().unwrap(), "main"]);
    repo.git(&["config", "remote.origin.url", "./ci/mirror.git"]);
    let run = run_push(&repo).await;
    assert_eq!(ran(&marker), "", "the committed repository's hooks ran on the host");
    assert_ne!(run.code, 0, "nothing was pushed, so the run cannot succeed: {}", run.stderr);
    let errors = run.report()["errors"].to_string();
    assert!(errors.contains("inside the work tree"), "the run does not say why: {errors}");
    // The same repository named by its absolute path, or through a symlink outside the tree.
    let link = repo.dir.path().join("elsewhere.git");
    std::os::unix::fs::symlink(&mirror, &link).unwrap();
    for url in [mirror.display().to_string(), link.display().to_string()] {
        repo.git(&["config", "remote.origin.url", &url]);
        let run = run_push(&repo).await;
        assert_eq!(ran(&marker), "", "{url}: the committed repository's hooks ran on the host");
        assert!(run.report()["errors"].to_string().contains("inside the work tree"), "{url}: {}", run.stderr);
    }
}

/// A remote URL that reads as an option (`--upload-pack=CMD@host:path`) is refused by hone
/// itself; git never runs CMD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_that_reads_as_an_option_is_refused() {
    let repo = broken_repo();
    let home = tempfile::tempdir().unwrap();
    for url in [
        "--upload-pack=cd;touch${IFS}pwned;x@h:p",
        "-oProxyCommand=cd;touch${IFS}pwned@h:p",
        "u@-oProxyCommand=cd;touch${IFS}pwned:p",
    ] {
        repo.git(&["config", "remote.origin.url", url]);
        let mock = MockModel::start().await;
        mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
            .turn(text("Set status.txt to fixed."), false);
        let yaml = format!("{}pr: {{ enabled: false }}\n", job_yaml("remotejob", &mock.base_url, false));
        let run = run_job_env(&repo, &yaml, &[("HOME", home.path().to_str().unwrap())]).await;
        assert!(!home.path().join("pwned").exists(), "{url}: git ran the command");
        assert_ne!(run.code, 0, "{url}: {}", run.stderr);
        let errors = run.report()["errors"].to_string();
        assert!(errors.contains("begins with `-`"), "{url}: hone did not refuse it itself: {errors}");
    }
}
