//! Attempts, continued: a run killed during its tries, replaying a try, and a fleet whose
//! repositories a later try rescued.

use super::attempts::{assert_left_as_it_was, places_left, tries_yaml, write};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_during_its_tries_loses_nothing_and_blocks_nothing() {
    require!(Need::UserNamespaces);
    use super::killed::{kill_group, killed_id, spawn_run, wait_until};
    let repo = broken_repo();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    for (k, m) in [(1, &m1), (2, &m2)] {
        let started = marks.join(format!("started-{k}"));
        m.turn(write("status.txt", &format!("try {k} was here\n")), false)
            .turn(call("run_cmd", json!({ "command": format!("touch {} && sleep 300", started.display()) })), false);
    }
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let yaml = with_policy(&repo, &tries_yaml("killed", &[&m1, &m2], None, ""), &policy);
    commit_spec(&repo, &yaml);
    let child = spawn_run(&repo.path, &[]);
    let all = marks.clone();
    tokio::task::spawn_blocking(move || {
        wait_until("both tries' commands", || (1..=2).all(|k| all.join(format!("started-{k}")).exists()))
    })
    .await
    .unwrap();
    let id = killed_id(&repo);
    kill_group(child);
    assert_eq!(repo.git(&["worktree", "list", "--porcelain"]).matches("worktree ").count(), 3, "the trees are there");
    // The next run recovers: each try's work is saved, the trees are gone; it goes on.
    for m in [&m1, &m2] {
        m.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    }
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "the next run is not blocked: {}\n{}", run.stderr, run.read("report.json"));
    let report = run.report();
    let saved: Vec<String> = (1..=2).map(|k| format!("refs/hone/killed/killed-{id}-try-{k}")).collect();
    assert_eq!(report["recovered"]["tries_saved"], json!(saved), "{:#}", report["recovered"]);
    for (k, r) in saved.iter().enumerate() {
        assert_eq!(repo.show(r, "status.txt"), format!("try {} was here", k + 1));
    }
    assert!(report["warnings"].to_string().contains("its tries' work was saved"));
    assert_left_as_it_was(&repo);
    let left = places_left(&id);
    assert!(left.is_empty(), "the killed run's place was left: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_tries_replays_the_chosen_try_or_any_other() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    // Try 1's command says where it ran: its worktree, which replay reads as the clone.
    m1.turn(call("run_cmd", json!({"command": "pwd"})), false)
        .turn(write("status.txt", "nearly\n"), false)
        .turn(text("Done."), false);
    m2.turn(call("run_cmd", json!({"command": "sh check.sh"})), false)
        .turn(write("status.txt", "fixed\n"), false)
        .turn(text("Fixed."), false);
    let yaml = with_policy(&repo, &tries_yaml("replayed", &[&m1, &m2], None, ""), OPEN_POLICY);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["chosen"]["number"], 2);
    drop((m1, m2));
    // No model server: each try's answers come from its transcript, in its own worktree's paths.
    let dir = run.report_dir.to_str().unwrap();
    for (args, ended) in [(vec!["replay", dir], "success"), (vec!["replay", dir, "--try", "1"], "failed")] {
        let r = run_in(&repo.path, &args, &[], repo.path.join("unused-replay")).await;
        assert_eq!(r.code, 0, "{args:?}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("did what the recorded one did") && r.stdout.contains(&format!("ended {ended}")),
            "{args:?}: {}",
            r.stdout
        );
        assert!(r.stderr.contains("made 2 tries"), "{}", r.stderr);
    }
    let missing = run_in(&repo.path, &["replay", dir, "--try", "3"], &[], repo.path.join("unused-replay")).await;
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("try-3.transcript.jsonl"), "{}", missing.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_counts_the_repositories_a_later_try_rescued() {
    let dir = tempfile::tempdir().unwrap();
    let tail = "pr: { enabled: false }\ngit: { push: false }\nattempts:\n  - model: { provider: script, script: nothing.yaml }\n  - model: { provider: script, script: script.yaml }\n";
    let fleet = fleet_of_one(dir.path(), "rescue", tail);
    std::fs::write(dir.path().join("nothing.yaml"), "turns:\n  - content: Nothing to do.\n").unwrap();
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    assert_eq!(
        (report["rescued"].as_u64(), report["repos"][0]["rescued_by"].as_u64()),
        (Some(1), Some(2)),
        "{report:#}"
    );
    let summary = std::fs::read_to_string(dir.path().join("ws/fleet-summary.md")).unwrap();
    assert!(summary.contains("1 rescued by a later try") && summary.contains("(try 2)"), "{summary}");
    // The clone the fleet worked in holds no worktree of the tries.
    let clones: Vec<_> = std::fs::read_dir(dir.path().join("ws/repos")).unwrap().filter_map(Result::ok).collect();
    assert_eq!(clones.len(), 1);
    let trees = crate::common::repo::git(&clones[0].path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(trees.matches("worktree ").count(), 1, "{trees}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_keeps_its_own_limits_and_the_job_s_still_hold() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    m1.turn(call("list_dir", json!({})), false).turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    m2.turn(call("list_dir", json!({})), false).turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    // Try 1 may make one request; try 2 has the job's ten.
    let yaml = tries_yaml("limits", &[&m1, &m2], None, "").replacen(
        "max_delay: 20ms } }\n",
        "max_delay: 20ms } }\n    limits: { max_turns: 1 }\n",
        1,
    );
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{yaml}", run.stderr);
    assert_eq!((m1.requests().len(), m2.requests().len()), (1, 3));
    let report = run.report();
    let t = &report["tries"];
    assert_eq!((t[0]["status"].as_str(), t[0]["turns"].as_u64()), (Some("budget_exhausted"), Some(1)), "{t:#}");
    assert!(t[0]["errors"][0]["message"].as_str().unwrap().contains("turn budget (1)"), "{t:#}");
    assert_eq!(report["chosen"]["number"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autofix_with_tries_starts_every_try_from_the_pr_head_and_pushes_the_winner() {
    use super::autofix::{TOKEN, expect_comment_written, mount_pr, origin_head, repo_with_pr_branch};
    let repo = repo_with_pr_branch();
    let head = origin_head(&repo);
    let gh = wiremock::MockServer::start().await;
    mount_pr(&gh, &head, "acme/app").await;
    expect_comment_written(&gh, json!([]), ("POST", "/repos/acme/app/issues/3/comments", "hone:autofix")).await;
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    // Each try reads the file as the PR's head has it; the first gives up, the second fixes it.
    m1.turn(call("read_file", json!({"path": "status.txt"})), false).turn(text("Cannot fix it."), false);
    m2.turn(call("read_file", json!({"path": "status.txt"})), false)
        .turn(write("status.txt", "fixed\n"), false)
        .turn(text("Fixed."), false);
    let yaml = tries_yaml("autofix", &[&m1, &m2], None, "");
    let uri = gh.uri();
    let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", uri.as_str())];
    let run = run_job_with(&repo, &yaml, &["--pr", "3"], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!((report["chosen"]["number"].as_u64(), report["pr"]["operation"].as_str()), (Some(2), Some("updated")));
    for m in [&m1, &m2] {
        let read = serde_json::to_string(&m.requests()[1].body).unwrap();
        assert!(read.contains("broken by the PR"), "a try did not start from the PR's head: {read}");
    }
    let new_head = origin_head(&repo);
    assert_eq!(git_rev(&repo, &format!("{new_head}^")), head, "the winner is pushed on top of the PR's head");
    gh.verify().await;
    run.assert_no_secret(TOKEN);
    assert_left_as_it_was(&repo);
}

fn git_rev(repo: &crate::common::repo::TestRepo, rev: &str) -> String {
    crate::common::repo::git(&repo.origin, &["rev-parse", rev])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_try_runs_setup_in_its_own_worktree_and_the_first_takes_the_baseline() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    for m in [&m1, &m2] {
        m.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    }
    // The check passes only where setup made its file: in each try's own worktree.
    let yaml = tries_yaml("setup", &[&m1, &m2], None, "")
        .replace("run: \"sh check.sh\"", "run: \"test -f made-by-setup && sh check.sh\"")
        .replace("verify:\n", "setup:\n  - { name: deps, run: \"touch made-by-setup\" }\nverify:\n");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{yaml}", run.stderr);
    let report = run.report();
    let accepted: Vec<bool> =
        report["tries"].as_array().unwrap().iter().map(|t| t["accepted"].as_bool().unwrap()).collect();
    assert_eq!(accepted, [true, true], "{:#}", report["tries"]);
    let events = run.events();
    for k in 1..=2 {
        assert!(events.iter().any(|e| e["try"] == k && e["type"] == "setup_completed"), "try {k} ran no setup");
    }
    // One baseline, taken by the first try.
    let baselines = events.iter().filter(|e| e["type"] == "verify_started" && e["attempt"] == 0).count();
    assert_eq!(baselines, 1);
    assert!(events.iter().any(|e| e["type"] == "verify_started" && e["attempt"] == 0 && e["try"] == 1));
    // What setup made is never part of the change.
    assert!(!repo.git(&["ls-tree", "-r", "--name-only", "hone/setup"]).contains("made-by-setup"));
    assert_left_as_it_was(&repo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_s_before_verify_hooks_are_given_its_own_files() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    for m in [&m1, &m2] {
        m.turn(write("status.txt", "broken\nfixed\n"), false).turn(text("Done."), false);
    }
    // The hook keeps the change's last line: only a hook given the try's own files fixes it.
    let hooks = "hooks:\n  before_verify:\n    - { name: tidy, run: \"sed -i 1d {files}\" }\n";
    let yaml = format!("{}{hooks}", tries_yaml("hooked", &[&m1, &m2], None, ""))
        .replace("run: \"sh check.sh\"", "run: \"test $(wc -l < status.txt) -eq 1 && sh check.sh\"");
    let run = run_job(&repo, &with_policy(&repo, &yaml, OPEN_POLICY), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let accepted: Vec<bool> =
        run.report()["tries"].as_array().unwrap().iter().map(|t| t["accepted"].as_bool().unwrap()).collect();
    assert_eq!(accepted, [true, true]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_a_cascade_stopped_never_wins() {
    require!(Need::UserNamespaces);
    // The check passes at the baseline: try 2 passes without changing anything.
    let repo = crate::common::repo::TestRepo::new(&[("status.txt", "fixed\n"), ("check.sh", CHECK_SH)]);
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    // Try 1 fails its first round (try 2 starts), then is midway through its fix, a change in
    // its tree, when try 2 passes: it is stopped with that change.
    let midway = format!("echo partial > status.txt && touch {}/midway", marks.display());
    m1.turn(write("status.txt", "worse\n"), false)
        .turn(text("Done."), false)
        .turn(call("run_cmd", json!({ "command": midway })), false);
    m1.push(crate::common::mock_model::Reply::Stall(vec![]));
    let wait =
        format!("i=0; while test ! -e {}/midway && test $i -lt 2400; do sleep 0.05; i=$((i+1)); done", marks.display());
    m2.turn(write("wait.sh", &wait), false)
        .turn(call("run_cmd", json!({ "command": "sh wait.sh && rm wait.sh" })), false);
    m2.turn(text("Nothing needs changing."), false);
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let yaml =
        tries_yaml("stopped", &[&m1, &m2], Some("cascade"), "").replace("max_fix_attempts: 0", "max_fix_attempts: 1");
    let run = run_job(&repo, &with_policy(&repo, &yaml, &policy), &[]).await;
    assert!(marks.join("midway").exists(), "{}", run.stderr);
    let report = run.report();
    let t = &report["tries"];
    assert_eq!((t[0]["outcome"].as_str(), t[0]["status"].as_str()), (Some("stopped"), Some("cancelled")), "{t:#}");
    assert!(t[0]["errors"][0]["message"].as_str().unwrap().contains("another try passed"), "{t:#}");
    assert!(t[0]["files_changed"].as_u64() > Some(0), "try 1 was stopped with a change: {t:#}");
    // The half-made change of the stopped try never lands: the run changed nothing.
    assert_eq!(report["status"], "no_change", "{:#}", report["errors"]);
    assert!(report["chosen"].is_null());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_left_as_it_was(&repo);
}
