//! Attempts (`attempts:`): several tries of the task, each in its own worktree and jail, the
//! repository's checks choosing the one that lands. Each try has its own mock model, so that
//! what each try does is scripted and what each was asked is recorded.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// A model block for one try, on its own mock.
pub(super) fn try_model(m: &MockModel, tail: &str) -> String {
    format!(
        "  - model: {{ provider: openai-compatible, name: mock-model, base_url: {}, api_key_env: HONE_TEST_API_KEY, stream: false, retry: {{ max_attempts: 2, initial_delay: 10ms, max_delay: 20ms }}{tail} }}\n",
        m.base_url
    )
}

/// The job, with one try per mock (`strategy` when given) and no fix attempts: a try whose check
/// fails ends there.
pub(super) fn tries_yaml(name: &str, mocks: &[&MockModel], strategy: Option<&str>, model_tail: &str) -> String {
    let mut y = job_yaml(name, &mocks[0].base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    match strategy {
        Some(s) => {
            y.push_str(&format!("attempts:\n  strategy: {s}\n  tries:\n"));
            for m in mocks {
                y.push_str(&format!("  {}", try_model(m, model_tail)));
            }
        }
        None => {
            y.push_str("attempts:\n");
            for m in mocks {
                y.push_str(&try_model(m, model_tail));
            }
        }
    }
    y
}

pub(super) fn write(path: &str, content: &str) -> crate::common::mock_model::Turn {
    call("write_file", json!({"path": path, "content": content}))
}

pub(super) fn tries(report: &Value) -> &Vec<Value> {
    report["tries"].as_array().expect("the report lists the tries")
}

/// What the run `run_id`'s tries left in the temp dir (their private place, the trees in it).
pub(super) fn places_left(run_id: &str) -> Vec<String> {
    let run8: String = run_id.chars().take(8).collect();
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with(&format!("hone-try-{run8}-")))
        .collect()
}

/// The repository holds no worktree but its own, and the checkout is as it was.
pub(super) fn assert_left_as_it_was(repo: &TestRepo) {
    assert_eq!(repo.head_branch(), "main");
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
    let trees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(trees.matches("worktree ").count(), 1, "worktrees left behind: {trees}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_three_tries_the_small_passing_change_wins_and_the_others_are_kept_as_refs() {
    let repo = broken_repo();
    let (m1, m2, m3) = (MockModel::start().await, MockModel::start().await, MockModel::start().await);
    m1.turn(write("status.txt", "worse\n"), false).turn(text("Done."), false);
    let big: String = (0..40).map(|i| format!("line {i}\n")).collect();
    m2.turn(
        write("status.txt", "fixed\n").with_call("write_file", &json!({"path": "big.txt", "content": big}).to_string()),
        false,
    )
    .turn(text("Fixed, and wrote a lot."), false);
    m3.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    let run = run_job(&repo, &tries_yaml("three", &[&m1, &m2, &m3], None, ""), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "success");
    assert_eq!(report["chosen"], json!({"number": 3, "why": "lines"}));
    let t = tries(&report);
    assert_eq!(t.len(), 3);
    assert_eq!(
        (t[0]["outcome"].as_str(), t[0]["status"].as_str(), t[0]["accepted"].as_bool()),
        (Some("not_chosen"), Some("failed"), Some(false))
    );
    assert_eq!((t[1]["outcome"].as_str(), t[1]["accepted"].as_bool()), (Some("not_chosen"), Some(true)));
    assert_eq!((t[2]["outcome"].as_str(), t[2]["accepted"].as_bool()), (Some("chosen"), Some(true)));
    assert!(t[1]["lines_changed"].as_u64() > t[2]["lines_changed"].as_u64(), "{t:?}");
    // The winner alone is committed; every try's change is kept on its ref, with its patch.
    let branch = "hone/three";
    assert_eq!(repo.show(branch, "status.txt"), "fixed");
    assert!(repo.git(&["ls-tree", "--name-only", branch]).lines().all(|f| f != "big.txt"));
    assert_eq!(repo.show("refs/hone/three/attempts/1", "status.txt"), "worse");
    assert!(repo.show("refs/hone/three/attempts/2", "big.txt").contains("line 39"));
    assert_eq!(t[1]["refname"], "refs/hone/three/attempts/2");
    assert!(run.read("try-2.patch").contains("+line 39"));
    assert!(run.read("try-3.patch").contains("+fixed"));
    assert!(run.read("try-1.transcript.jsonl").contains("worse"));
    // Each try asked its own model; the events say which try they belong to.
    assert_eq!((m1.requests().len(), m2.requests().len(), m3.requests().len()), (2, 2, 2));
    let events = run.events();
    for k in 1..=3 {
        assert!(events.iter().any(|e| e["try"] == k && e["type"] == "turn_completed"), "no event of try {k}");
    }
    // The report, the summary and JUnit explain the choice.
    let summary = run.read("summary.md");
    assert!(summary.contains("## Tries"), "{summary}");
    assert!(summary.contains("Try 3 was chosen"), "{summary}");
    assert!(summary.contains("fewer changed lines"), "{summary}");
    let junit = run.read("junit.xml");
    assert!(junit.contains("hone.three.tries"), "{junit}");
    assert!(junit.contains("name=\"try-1.check\""), "{junit}");
    assert_junit_valid(&run.report_dir.join("junit.xml"));
    assert_left_as_it_was(&repo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_starts_the_next_try_only_when_the_earlier_failed() {
    let repo = broken_repo();
    let (m1, m2, m3) = (MockModel::start().await, MockModel::start().await, MockModel::start().await);
    m1.turn(text("Nothing to do."), false);
    m2.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    m3.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    let run = run_job(&repo, &tries_yaml("cascade", &[&m1, &m2, &m3], Some("cascade"), ""), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["chosen"]["number"], 2);
    assert_eq!(m3.requests().len(), 0, "the third try must never start");
    let t = tries(&report);
    assert_eq!((t[0]["status"].as_str(), t[1]["outcome"].as_str()), (Some("failed"), Some("chosen")));
    assert_eq!(t[2]["outcome"], "not_started");
    assert!(t[2]["errors"][0]["message"].as_str().unwrap().contains("an earlier try passed"), "{t:?}");
    assert_eq!(repo.show("hone/cascade", "status.txt"), "fixed");
    assert_left_as_it_was(&repo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_whose_first_try_passes_asks_no_other_model() {
    let repo = broken_repo();
    let (m1, m2, m3) = (MockModel::start().await, MockModel::start().await, MockModel::start().await);
    m1.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    let run = run_job(&repo, &tries_yaml("first", &[&m1, &m2, &m3], Some("cascade"), ""), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!((m1.requests().len(), m2.requests().len(), m3.requests().len()), (2, 0, 0));
    let report = run.report();
    let outcomes: Vec<&str> = tries(&report).iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["chosen", "not_started", "not_started"]);
    assert_eq!(report["chosen"], json!({"number": 1, "why": "only_one"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_whose_change_a_guard_refuses_never_wins() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    // Try 1 passes with the smaller change, but its change carries the API key.
    m1.turn(
        write("status.txt", "fixed\n").with_call("write_file", &json!({"path": "k.txt", "content": KEY}).to_string()),
        false,
    )
    .turn(text("Fixed."), false);
    m2.turn(
        write("status.txt", "fixed\n")
            .with_call("write_file", &json!({"path": "notes.txt", "content": "a\nb\nc\nd\n"}).to_string()),
        false,
    )
    .turn(text("Fixed, with notes."), false);
    let run = run_job(&repo, &tries_yaml("guard", &[&m1, &m2], None, ""), &["--dry-run"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let t = tries(&report);
    assert_eq!((t[0]["outcome"].as_str(), t[0]["accepted"].as_bool()), (Some("refused"), Some(true)));
    assert!(t[0]["refused"][0].as_str().unwrap().contains("secret"), "{t:?}");
    assert_eq!(report["chosen"], json!({"number": 2, "why": "only_one"}));
    // A change that carries a secret is kept nowhere: no ref, no patch.
    assert!(t[0]["refname"].is_null() && t[0]["patch"].is_null());
    assert!(repo.git(&["for-each-ref", "refs/hone/guard/attempts/1"]).is_empty());
    assert!(!run.report_dir.join("try-1.patch").exists());
    assert_eq!(repo.show("hone/guard", "notes.txt"), "a\nb\nc\nd");
    // The PR body shows the tries and why the winner won.
    let body = run.read("pr.md");
    assert!(
        body.contains("### Tries") && body.contains("Try 2 was chosen") && body.contains("refused by a guard"),
        "{body}"
    );
    for f in ["report.json", "summary.md", "pr.md", "try-2.patch", "try-1.transcript.jsonl", "events.jsonl"] {
        assert!(!run.read(f).contains(KEY), "{f} shows the key");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_budget_holds_across_tries_and_stops_starting_them() {
    let repo = broken_repo();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    m1.turn(text("Nothing to do."), false);
    m2.turn(write("status.txt", "fixed\n"), false).turn(text("Fixed."), false);
    // 20 output tokens at $1000 a million: $0.02 a turn; one answer of at most 10 tokens: $0.01.
    let priced = ", pricing: { input: 0.001, cached_input: 0.001, output: 1000 }, max_output_tokens: 10";
    let yaml = tries_yaml("budget", &[&m1, &m2], Some("cascade"), priced)
        .replace("max_fix_attempts: 0 }", "max_fix_attempts: 0, max_cost_usd: 0.025 }")
        .replace(
            "  api_key_env: HONE_TEST_API_KEY\n",
            "  api_key_env: HONE_TEST_API_KEY\n  pricing: { input: 0.001, output: 1000 }\n",
        );
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(m2.requests().len(), 0, "the second try could not afford one answer");
    let report = run.report();
    let t = tries(&report);
    assert_eq!(t[1]["outcome"], "not_started");
    assert_eq!(t[1]["errors"][0]["code"], "E_BUDGET");
    let why = t[1]["errors"][0]["message"].as_str().unwrap();
    assert!(
        why.contains("never started: the cost budget ($0.025") && why.contains("spent by the earlier tries"),
        "{why}"
    );
    assert!(report["warnings"].to_string().contains("try 2 never started"), "{}", report["warnings"]);
    assert!(report["cost"]["usd"].as_f64().unwrap() <= 0.025);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_during_three_tries_stops_them_all_and_reports_each() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let marker = format!("hone-tries-cancel-{}", std::process::id());
    let mocks = [MockModel::start().await, MockModel::start().await, MockModel::start().await];
    for (k, m) in mocks.iter().enumerate() {
        let started = marks.join(format!("started-{}", k + 1));
        let cmd = format!("touch {} && sh -c 'sleep 300; echo {marker}' & sleep 300", started.display());
        m.turn(write("status.txt", "partial\n"), false).turn(call("run_cmd", json!({ "command": cmd })), false);
    }
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let yaml = with_policy(&repo, &tries_yaml("sigint", &[&mocks[0], &mocks[1], &mocks[2]], None, ""), &policy);
    commit_spec(&repo, &yaml);
    let child = spawn_job(Path::new(env!("CARGO_BIN_EXE_hone")), &repo.path);
    let all = marks.clone();
    tokio::task::spawn_blocking(move || {
        for k in 1..=3 {
            wait_for_file(&all.join(format!("started-{k}")), Duration::from_secs(120));
        }
    })
    .await
    .unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path.join(".hone/reports/report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "cancelled");
    let t = tries(&report);
    assert_eq!(t.len(), 3);
    for (k, tr) in t.iter().enumerate() {
        assert_eq!(tr["status"], "cancelled", "try {}: {tr}", k + 1);
        // Each try's partial work is kept on its ref.
        assert_eq!(repo.show(&format!("refs/hone/sigint/attempts/{}", k + 1), "status.txt"), "partial");
    }
    let alive = survivors(&marker);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
    assert_left_as_it_was(&repo);
    let left = places_left(report["run_id"].as_str().unwrap());
    assert!(left.is_empty(), "the tries' place was left: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tries_writing_the_same_path_do_not_see_each_other() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (m1, m2) = (MockModel::start().await, MockModel::start().await);
    // Each writes shared.txt, then waits until the other has written its own (bounded), then
    // reads it back: both writes happen before either read.
    for (m, me, other) in [(&m1, "one", "two"), (&m2, "two", "one")] {
        let script = format!(
            "echo {me} > shared.txt\ntouch {d}/wrote-{me}\ni=0\nwhile test ! -e {d}/wrote-{other} && test $i -lt 2400; do sleep 0.05; i=$((i+1)); done\nprintf 'read: '\ncat shared.txt\n",
            d = marks.display()
        );
        m.turn(write("wait.sh", &script), false)
            .turn(call("run_cmd", json!({ "command": "sh wait.sh" })), false)
            .turn(text("Done."), false);
    }
    let policy = format!("{OPEN_POLICY}paths:\n  sandbox_writable: [\"{}\"]\n", marks.display());
    let run = run_job(&repo, &with_policy(&repo, &tries_yaml("same", &[&m1, &m2], None, ""), &policy), &[]).await;
    assert!(marks.join("wrote-one").exists() && marks.join("wrote-two").exists(), "{}", run.stderr);
    let said = |m: &MockModel| serde_json::to_string(&m.requests().last().unwrap().body).unwrap();
    assert!(said(&m1).contains("read: one") && !said(&m1).contains("read: two"), "{}", said(&m1));
    assert!(said(&m2).contains("read: two") && !said(&m2).contains("read: one"), "{}", said(&m2));
    assert!(run.read("try-1.patch").contains("+one") && run.read("try-2.patch").contains("+two"));
    assert_left_as_it_was(&repo);
}
