//! Attacks on the jail (issue 10) through the repository's files: no program run by hone's own
//! git from a planted `.git`, nothing written outside through a `.git` symlink, no read-denied
//! content read, no hang on a FIFO, and no file left behind in ignored paths. Each test scripts a
//! hostile model's tool calls (or a hostile repository) through the real binary; the shared
//! helpers are in `jail_support`.

use super::jail_support::{all_tool_results, cmd, fix, result_of, spec, write};
use crate::common::mock_model::{MockModel, call};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// Files beneath `dir` (not following symlinks), with their contents; symlinks as `-> target`.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
            if m.file_type().is_symlink() {
                out.insert(rel, format!("-> {}", std::fs::read_link(&p).unwrap().display()));
            } else if m.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                walk(root, &p, out);
            } else if m.is_file() {
                out.insert(rel, String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned());
            } else {
                out.insert(rel, format!("<special file {:?}>", m.file_type()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What differs between two `tree`s: entries added, removed or changed.
fn tree_changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in after {
        match before.get(k) {
            None => out.push(format!("{k} was created")),
            Some(b) if b != v => out.push(format!("{k} was changed")),
            _ => {}
        }
    }
    out.extend(before.keys().filter(|k| !after.contains_key(*k)).map(|k| format!("{k} was removed")));
    out
}

// 1. ------------------------------------------------------------------------------------------

/// A program planted in the repository's git settings that hone's own push would run, and a
/// marker (outside the repository) it leaves when it runs. `how` plants it.
async fn push_attack(how: &str) -> Vec<String> {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let marker = repo.dir.path().join(format!("planted-program-ran-{how}"));
    let prog = |pack: &str| format!("touch {}; {pack}", marker.display());
    match how {
        // A repository that arrives with the settings (the .git guard's snapshot includes them).
        "arrives-with-uploadpack-and-receivepack" => {
            repo.git(&["config", "remote.origin.uploadpack", &prog("git-upload-pack")]);
            repo.git(&["config", "remote.origin.receivepack", &prog("git-receive-pack")]);
        }
        // Model code writes `.git/commondir`, pointing git at a copy of `.git` whose config it
        // wrote; the .git guard does not look at `commondir`.
        "model-writes-commondir" => {
            let script = format!(
                "set -e\nmkdir -p .git/c\ncp -a .git/objects .git/refs .git/HEAD .git/config .git/c/\ngit config -f .git/c/config remote.origin.uploadpack '{}'\ngit config -f .git/c/config remote.origin.receivepack '{}'\necho c > .git/commondir\necho PLANTED\n",
                prog("git-upload-pack"),
                prog("git-receive-pack")
            );
            mock.turn(write("plant.sh", &script), false).turn(cmd("sh plant.sh; rm -f plant.sh"), false);
        }
        // Model code edits `.git/config` itself.
        "model-writes-config" => {
            let script = format!(
                "set -e\ngit config remote.origin.uploadpack '{}'\ngit config remote.origin.receivepack '{}'\ngit config core.sshCommand '{}'\necho PLANTED\n",
                prog("git-upload-pack"),
                prog("git-receive-pack"),
                prog("ssh")
            );
            mock.turn(write("plant.sh", &script), false).turn(cmd("sh plant.sh; rm -f plant.sh"), false);
        }
        other => unreachable!("{other}"),
    }
    fix(&mock);
    let name = format!("push-{}", how.split('-').next_back().unwrap());
    let yaml = spec(&repo, &name, &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job_env(&repo, &yaml, &[("GITHUB_TOKEN", "ghp_jailpushcanary0123456789")]).await;
    let mut problems = Vec::new();
    if marker.exists() {
        problems.push(format!("{how}: hone's own git (ls-remote/push) ran the planted program on the host"));
    }
    let pushed = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/hone/{name}")])
        .current_dir(&repo.origin)
        .output()
        .is_ok_and(|o| o.status.success());
    if run.code != 0 || !pushed {
        problems.push(format!(
            "{how}: the run should succeed and push its branch to origin (exit {}, pushed: {pushed}): {}",
            run.code,
            run.stdout.trim()
        ));
    }
    problems
}

/// Item 1: whatever the repository's `.git` says (`uploadpack`, `receivepack`, `core.sshCommand`,
/// `commondir`), hone's push and ls-remote run no program from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cannot_make_hones_push_run_a_program() {
    require!(Need::UserNamespaces);
    let mut problems = Vec::new();
    for how in ["arrives-with-uploadpack-and-receivepack", "model-writes-commondir", "model-writes-config"] {
        problems.extend(push_attack(how).await);
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

// 4. ------------------------------------------------------------------------------------------

/// Item 4: `.git/hooks` and `.git/config` replaced by symlinks to a directory and a file outside
/// the repository: hone restores, reads and writes nothing through them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_git_dir_is_never_written_through() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let outside = tempfile::tempdir().unwrap();
    let hooks = outside.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    std::fs::write(hooks.join("keep-me.txt"), "a host file\n").unwrap();
    let config = outside.path().join("config");
    let original = std::fs::read_to_string(repo.path.join(".git/config")).unwrap();
    std::fs::write(&config, format!("{original}[user]\n\tname = outside\n")).unwrap();
    let before = tree(outside.path());
    let mock = MockModel::start().await;
    let script = format!(
        "set -e\nmv .git/hooks .git/hooks.orig\nln -s {} .git/hooks\nmv .git/config .git/config.orig\nln -s {} .git/config\necho SWAPPED\n",
        hooks.display(),
        config.display()
    );
    mock.turn(write("swap.sh", &script), false).turn(cmd("sh swap.sh; rm -f swap.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, "gitlinks", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let changed = tree_changes(&before, &tree(outside.path()));
    assert!(
        changed.is_empty(),
        "hone wrote through .git symlinks outside the repository: {changed:#?}\nthe command said: {}\nhone said: {}",
        result_of(&mock, 1),
        run.stdout.trim()
    );
}

// 7. ------------------------------------------------------------------------------------------

/// Item 7: a read-denied file (`.env`) cannot be read through a glob, a recursive grep or a
/// symlink, and a hardlink cannot expose `.git/config`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_deny_paths_cannot_be_read_by_any_command() {
    require!(Need::UserNamespaces);
    let env_canary = "readdeny-env-canary-7Hq2Zx";
    let config_canary = "gitconfig-canary-Kp4Wm9";
    let repo = TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        (".env", &format!("API_CANARY={env_canary}\n")),
    ]);
    repo.git(&["config", "hone.canary", config_canary]);
    let mock = MockModel::start().await;
    let attempts = [
        cmd("cat .en?"),
        cmd("grep -r API_CANARY ."),
        cmd("ln -s .env x && cat x"),
        call("read_file", json!({"path": "x"})),
        cmd("ln .git/config y && cat y"),
        call("read_file", json!({"path": "y"})),
    ];
    let described = [
        "cat .en?",
        "grep -r API_CANARY .",
        "ln -s .env x && cat x",
        "read_file x (the symlink)",
        "ln .git/config y && cat y",
        "read_file y (the hardlink)",
    ];
    for t in &attempts {
        mock.turn(t.clone(), false);
    }
    mock.turn(cmd("rm -f x y"), false);
    fix(&mock);
    let yaml = spec(&repo, "readdeny", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let mut leaked = Vec::new();
    for (i, what) in described.iter().enumerate() {
        let r = result_of(&mock, i);
        if r.contains(env_canary) {
            leaked.push(format!("`{what}` read .env: {r}"));
        }
        if r.contains(config_canary) {
            leaked.push(format!("`{what}` exposed .git/config: {r}"));
        }
    }
    assert!(leaked.is_empty(), "{leaked:#?}");
    assert!(!all_tool_results(&mock).contains(env_canary), "the .env canary reached the model");
    assert_eq!(run.code, 0, "{}", run.stdout);
}

// 8. ------------------------------------------------------------------------------------------

/// Item 8: a FIFO in `.git/hooks` (read by the .git guard) and `read_file` on a FIFO never hang
/// hone: it ends within its wall-time budget and writes its reports. Both runs go at once; a hang
/// is the harness killing hone after 120 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_never_hangs_a_tool_or_the_guard() {
    require!(Need::UserNamespaces);
    let limits = "limits: { max_turns: 10, max_wall_time: 60s, max_fix_attempts: 2 }";
    let short = "limits: { max_turns: 10, max_wall_time: 15s, max_fix_attempts: 2 }";
    let (guard_repo, tool_repo) = (broken_repo(), broken_repo());
    let (guard_mock, tool_mock) = (MockModel::start().await, MockModel::start().await);
    guard_mock.turn(cmd("python3 -c \"import os; os.mkfifo('.git/hooks/post-checkout')\""), false);
    fix(&guard_mock);
    tool_mock
        .turn(cmd("mkfifo f"), false)
        .turn(call("read_file", json!({"path": "f"})), false)
        .turn(cmd("rm -f f"), false);
    fix(&tool_mock);
    let guard_yaml = spec(&guard_repo, "fifoguard", &guard_mock, OPEN_POLICY, "").replace(limits, short);
    let tool_yaml = spec(&tool_repo, "fifotool", &tool_mock, OPEN_POLICY, "").replace(limits, short);
    assert!(guard_yaml.contains(short) && tool_yaml.contains(short));
    let started = std::time::Instant::now();
    let (guard_run, tool_run) =
        tokio::join!(run_job(&guard_repo, &guard_yaml, &[]), run_job(&tool_repo, &tool_yaml, &[]));
    let took = started.elapsed();
    let mut hung = Vec::new();
    for (what, run) in [("a FIFO in .git/hooks", &guard_run), ("read_file on a FIFO", &tool_run)] {
        if run.code == -1 {
            hung.push(format!("{what}: hone hung and was killed by the test harness after {took:?}"));
        } else if !run.report_dir.join("report.json").is_file() {
            hung.push(format!("{what}: hone exited {} without writing report.json", run.code));
        }
    }
    assert!(hung.is_empty(), "{hung:#?}");
    let tool = result_of(&tool_mock, 1);
    assert!(tool.starts_with("error"), "read_file on a FIFO should be an error result: {tool}");
}

// 11. -----------------------------------------------------------------------------------------

/// Item 11: files a run wrote in ignored paths (`.venv/evil.pth`, `build/x`) are gone after it,
/// whether it succeeds or fails, and an ignored directory that was there before is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_paths_the_run_wrote_are_gone_after_it() {
    require!(Need::UserNamespaces);
    let mut problems = Vec::new();
    for succeed in [true, false] {
        let repo =
            TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", ".venv/\nbuild/\n")]);
        let venv = repo.path.join(".venv");
        std::fs::create_dir_all(venv.join("lib/site-packages")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(venv.join("lib/site-packages/ok.py"), "X = 1\n").unwrap();
        let before = tree(&venv);
        let mock = MockModel::start().await;
        mock.turn(cmd("echo 'import os' > .venv/evil.pth && mkdir -p build && echo x > build/x"), false);
        let name = if succeed { "ignored-ok" } else { "ignored-failed" };
        if succeed {
            fix(&mock);
        } else {
            mock.turn(
                call(
                    "finish",
                    json!({"outcome": "blocked", "summary": "Wrote build output.", "reason": "cannot fix it"}),
                ),
                false,
            );
        }
        let yaml = spec(&repo, name, &mock, OPEN_POLICY, "");
        let run = run_job(&repo, &yaml, &[]).await;
        let wrote = result_of(&mock, 0);
        if !wrote.starts_with("exit code: 0") {
            problems.push(format!("{name}: the command did not write the files: {wrote}"));
        }
        if run.code != if succeed { 0 } else { 1 } {
            problems.push(format!("{name}: unexpected exit {}: {}", run.code, run.stdout));
        }
        let changed = tree_changes(&before, &tree(&venv));
        if !changed.is_empty() {
            problems.push(format!("{name}: .venv is not as it was: {changed:?}"));
        }
        if repo.path.join("build").exists() {
            problems.push(format!("{name}: build/ was left: {:?}", tree(&repo.path.join("build"))));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Protection holds past its limits: an ignored directory past the 64 that get an overlay is
/// read-only, not writable, and a policy's writable tree that holds the whole repository does not
/// make `.git` or the ignored entries writable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protection_holds_past_the_overlay_limit_and_under_a_writable_parent() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "cache*/\n")]);
    for i in 0..70 {
        let d = repo.path.join(format!("cache{i:02}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("keep.txt"), "as it was\n").unwrap();
    }
    let git_config = std::fs::read_to_string(repo.path.join(".git/config")).unwrap();
    let parent = repo.path.parent().unwrap().display().to_string();
    let mock = MockModel::start().await;
    let script =
        "echo evil > cache69/keep.txt; echo evil > cache00/keep.txt; echo '[alias]' >> .git/config; echo done\n";
    mock.turn(write("w.sh", script), false).turn(cmd("sh w.sh; rm -f w.sh"), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{parent}\"]\n");
    let yaml = spec(&repo, "limits", &mock, &policy, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let wrote = result_of(&mock, 1);
    assert!(wrote.contains("done"), "the command did not run: {wrote}");
    for i in [0, 69] {
        let got = std::fs::read_to_string(repo.path.join(format!("cache{i:02}/keep.txt"))).unwrap();
        assert_eq!(got, "as it was\n", "cache{i:02} was written: {wrote}");
    }
    assert_eq!(std::fs::read_to_string(repo.path.join(".git/config")).unwrap(), git_config, "{wrote}");
    assert_eq!(run.code, 0, "{}", run.stderr);
}
