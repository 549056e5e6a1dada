//! `hone eval mine` on a made history, its tests run in the jail: three bug fixes with tests, a
//! fix whose test never fails first, a flaky test, a refactor, a docs change and a feature with
//! its tests. Exactly the four valid tasks are written; every other commit says why it was left.

use crate::common::repo::git;
use crate::common::*;
use serde_json::Value;
use std::path::Path;

pub(super) const RUNNER: &str = r#"out=junit.xml
echo '<testsuite>' > $out
for t in tests/test_*.py; do
  n=$(basename $t .py)
  if PYTHONPATH=. python3 $t >/dev/null 2>&1; then echo "<testcase name=\"$n\"/>" >> $out
  else echo "<testcase name=\"$n\"><failure/></testcase>" >> $out; fi
done
echo '</testsuite>' >> $out
"#;

pub(super) const JOB: &str = "version: 1\nname: mine\ntask: unused\nmodel: { provider: openai-compatible, name: m, base_url: \"http://127.0.0.1:9/v1\" }\nverify:\n  - { name: tests, run: \"sh run_tests.sh\", junit: junit.xml, timeout: 60s }\n";

/// The flaky test passes and fails by turns: its count is kept in the work tree, where the
/// two runs of the same tree find it.
const FLAKY: &str = "import os\np = '.flaky_count'\nn = int(open(p).read()) if os.path.exists(p) else 0\nopen(p, 'w').write(str(n + 1))\nassert n % 2 == 0\n";

pub(super) fn calc(add: &str, sub: &str, half: &str, neg: bool) -> String {
    let neg = if neg { "def neg(a):\n    return -a\n" } else { "" };
    format!(
        "def add(a, b):\n    return {add}\n\ndef sub(a, b):\n    return {sub}\n\ndef half(a):\n    return {half}\n{neg}"
    )
}

pub(super) fn test(body: &str) -> String {
    format!("from calc import *\n{body}\n")
}

pub(super) fn commit(dir: &Path, message: &str, files: &[(&str, String)]) -> String {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// `job` answered by the script in `script.yaml` (no plan).
pub(super) fn with_script(job: &str) -> String {
    job.replace(
        "model: { provider: openai-compatible, name: m, base_url: \"http://127.0.0.1:9/v1\" }",
        "model: { provider: script, script: script.yaml }",
    ) + "plan: false\n"
}

/// `script.yaml` in `dir`: a model that writes `content` to `path`, then says it is done.
pub(super) fn script_writing(dir: &Path, path: &str, content: &str) {
    let content = serde_json::to_string(content).unwrap();
    let script = format!(
        "turns:\n  - tool_calls:\n      - {{ name: write_file, arguments: {{ path: {path}, content: {content} }} }}\n  - content: Done.\n"
    );
    std::fs::write(dir.join("script.yaml"), script).unwrap();
}

/// `hone eval mine` in `r` with its `job.yaml`, its tasks in `dir/tasks.jsonl`: `count` found.
async fn mine_in(dir: &Path, r: &Path, count: usize) -> std::path::PathBuf {
    let tasks = dir.join("tasks.jsonl");
    let mined =
        run_in(r, &["eval", "mine", "--job", "job.yaml", "--out", tasks.to_str().unwrap()], &[], dir.join("u")).await;
    assert!(mined.stdout.contains(&format!(" {count} task(s)")), "{}\n{}", mined.stdout, mined.stderr);
    tasks
}

/// A repository `calc` in `dir` whose first commit has `add` wrong, a passing test and the job.
fn started(dir: &Path) -> std::path::PathBuf {
    let r = dir.join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let files = [("calc.py", calc("a - b", "a - b", "a // 2", false)), ("run_tests.sh", RUNNER.into())];
    let rest = [("tests/test_mul.py", test("assert 2 * 3 == 6")), ("job.yaml", JOB.into())];
    commit(&r, "start", &[&files[..], &rest[..]].concat());
    r
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mining_writes_exactly_the_four_valid_tasks_and_why_each_other_commit_was_left() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let (bad_add, bad_sub, bad_half) = ("a - b", "a + b", "a // 3");
    let files = [("calc.py", calc(bad_add, bad_sub, bad_half, false)), ("run_tests.sh", RUNNER.into())];
    let start = commit(
        &r,
        "start",
        &[&files[..], &[("tests/test_mul.py", test("assert 2 * 3 == 6")), ("job.yaml", JOB.into())]].concat(),
    );
    let fix_add = commit(
        &r,
        "Fix add",
        &[("calc.py", calc("a + b", bad_sub, bad_half, false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))],
    );
    let docs = commit(&r, "Docs", &[("README.md", "calc\n".into())]);
    let fix_sub = commit(
        &r,
        "Fix sub",
        &[("calc.py", calc("a + b", "a - b", bad_half, false)), ("tests/test_sub.py", test("assert sub(3, 1) == 2"))],
    );
    let never = commit(
        &r,
        "Tidy add",
        &[("calc.py", calc("b + a", "a - b", bad_half, false)), ("tests/test_add2.py", test("assert add(2, 2) == 4"))],
    );
    let refactor = commit(&r, "Refactor", &[("calc.py", calc("b + a", "-(b - a)", bad_half, false))]);
    let fix_half = commit(
        &r,
        "Fix half",
        &[("calc.py", calc("b + a", "-(b - a)", "a // 2", false)), ("tests/test_half.py", test("assert half(8) == 4"))],
    );
    let feature = commit(
        &r,
        "Feature: neg",
        &[("calc.py", calc("b + a", "-(b - a)", "a // 2", true)), ("tests/test_neg.py", test("assert neg(2) == -2"))],
    );
    let flaky = commit(
        &r,
        "Fix add again",
        &[("calc.py", calc("a + b", "-(b - a)", "a // 2", true)), ("tests/test_flaky.py", FLAKY.into())],
    );
    let out = dir.path().join("tasks.jsonl");
    let args = ["eval", "mine", "--job", "job.yaml", "--out", out.to_str().unwrap()];
    let run = run_in(&r, &args, &[], dir.path().join("unused")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("4 task(s)") && run.stdout.contains("5 commit(s) left out"), "{}", run.stdout);
    let tasks = lines(&out);
    let starts: Vec<&str> = tasks.iter().map(|t| t["base_commit"].as_str().unwrap()).collect();
    // Each task starts at its fix's parent: the feature's, the half fix's, the sub fix's, the add fix's.
    let parent = |c: &str| git(&r, &["rev-parse", &format!("{c}^")]);
    assert_eq!(starts, [parent(&feature), parent(&fix_half), parent(&fix_sub), parent(&fix_add)]);
    let add = tasks.iter().find(|t| t["problem_statement"] == "Fix add").unwrap();
    assert_eq!(
        (add["FAIL_TO_PASS"].clone(), add["PASS_TO_PASS"].clone()),
        (serde_json::json!(["test_add"]), serde_json::json!(["test_mul"]))
    );
    assert!(add["test_patch"].as_str().unwrap().contains("+assert add(1, 2) == 3"));
    assert!(!add["test_patch"].as_str().unwrap().contains("calc.py"), "the source change is not in the test patch");
    let dropped = lines(&out.with_extension("dropped.jsonl"));
    let why = |c: &str| {
        dropped.iter().find(|d| d["commit"] == c).map(|d| d["why"].as_str().unwrap().to_string()).unwrap_or_default()
    };
    assert!(why(&flaky).contains("flaky: `test_flaky`"), "{dropped:?}");
    assert!(why(&never).contains("no test fails"), "{dropped:?}");
    assert!(why(&refactor).contains("no test"), "{dropped:?}");
    assert!(why(&docs).contains("neither source nor tests"), "{dropped:?}");
    assert!(why(&start).contains("first commit"), "{dropped:?}");
    // Mining left the repository as it was.
    assert_eq!(git(&r, &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_run_grades_each_task_with_its_held_out_tests() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let (bad_add, bad_sub, bad_half) = ("a - b", "a + b", "a // 3");
    // The tests need what setup makes: mining and grading run the job's setup in every tree.
    let runner = format!("test -f .deps || exit 3\n{RUNNER}");
    let job = format!("{JOB}setup:\n  - {{ name: deps, run: \"touch .deps\" }}\n");
    let files = [("calc.py", calc(bad_add, bad_sub, bad_half, false)), ("run_tests.sh", runner)];
    let rest = [("tests/test_mul.py", test("assert 2 * 3 == 6")), ("job.yaml", job.clone())];
    commit(&r, "start", &[&files[..], &rest[..]].concat());
    commit(
        &r,
        "Fix add",
        &[("calc.py", calc("a + b", bad_sub, bad_half, false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))],
    );
    commit(
        &r,
        "Fix sub",
        &[("calc.py", calc("a + b", "a - b", bad_half, false)), ("tests/test_sub.py", test("assert sub(3, 1) == 2"))],
    );
    commit(
        &r,
        "Fix half",
        &[("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_half.py", test("assert half(8) == 4"))],
    );
    let tasks = mine_in(dir.path(), &r, 3).await;
    // The scripted model writes the same module for every task: add and sub right, half wrong.
    script_writing(dir.path(), "calc.py", &calc("a + b", "a - b", bad_half, false));
    std::fs::write(dir.path().join("scripted.yaml"), with_script(&job)).unwrap();
    let out = dir.path().join("eval");
    let args = ["eval", "run", tasks.to_str().unwrap(), "--job", "scripted.yaml", "--out", out.to_str().unwrap()];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("2 of 3 resolved (0 error(s))"), "{}", run.stdout);
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    let verdict = |id_of: &str| {
        let t = lines(&tasks).into_iter().find(|t| t["problem_statement"] == id_of).unwrap();
        let o = all.as_array().unwrap().iter().find(|o| o["instance_id"] == t["instance_id"]).unwrap().clone();
        assert!(o["tokens"].as_u64() > Some(0) && o["turns"] == 2 && o["tries"] == 1, "{o}");
        o["verdict"].as_str().unwrap().to_string()
    };
    assert_eq!(
        (verdict("Fix add"), verdict("Fix sub"), verdict("Fix half")),
        ("resolved".into(), "resolved".into(), "unresolved".into())
    );
    let md = std::fs::read_to_string(out.join("eval.md")).unwrap();
    assert!(md.contains("| `scripted.yaml` | 3 | 2 | 67% | 0 |"), "{md}");
    assert_junit_valid(&out.join("eval-junit.xml"));
    // Again with --resume: nothing finished runs again.
    let again = run_in(dir.path(), &[&args[..], &["--resume"]].concat(), &[], dir.path().join("u")).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("2 of 3 resolved"), "{}", again.stdout);
    assert!(!again.stderr.contains("hone eval: "), "a finished task ran again: {}", again.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_is_out_of_the_agent_s_reach() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = started(dir.path());
    let fix = commit(
        &r,
        "Fix add",
        &[
            ("calc.py", calc("a + b # FIXED", "a - b", "a // 2", false)),
            ("tests/test_add.py", test("assert add(1, 2) == 3 # HELD")),
        ],
    );
    let (fixed, held) = (git(&r, &["rev-parse", "HEAD:calc.py"]), git(&r, &["rev-parse", "HEAD:tests/test_add.py"]));
    let tasks = mine_in(dir.path(), &r, 1).await;
    // The agent looks for the answer every way git (and a search of .git) offers.
    let look = "git log --all --format=%H; git reflog --all; git fsck --lost-found --no-progress; git cat-file --batch-all-objects --batch-check; grep -r -l -a -e FIXED -e HELD .git; echo looked";
    let script = format!(
        "turns:\n  - tool_calls:\n      - {{ name: run_cmd, arguments: {{ command: {} }} }}\n  - content: Found nothing.\n",
        serde_json::to_string(look).unwrap()
    );
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    let job = with_script(JOB) + "policy: open.yaml\n";
    std::fs::write(dir.path().join("looking.yaml"), job).unwrap();
    std::fs::write(dir.path().join("open.yaml"), OPEN_POLICY).unwrap();
    let out = dir.path().join("eval");
    let args = ["eval", "run", tasks.to_str().unwrap(), "--job", "looking.yaml", "--out", out.to_str().unwrap()];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    let place = out.join(all[0]["dir"].as_str().unwrap());
    let said = std::fs::read_to_string(place.join("reports/transcript.jsonl")).unwrap();
    let result = said.lines().find(|l| l.contains("\"tool_result\"")).unwrap();
    assert!(result.contains("looked"), "the search ran: {result}");
    let start = git(&r, &["rev-parse", &format!("{fix}^")]);
    assert!(result.contains(&start), "git ran in the jail and shows the start: {result}");
    for (what, id) in [("the fix commit", &fix), ("the fixed file", &fixed), ("the held-out test", &held)] {
        assert!(!result.contains(id.as_str()), "{what} is in the agent's reach: {result}");
    }
    assert!(!result.contains(".git/"), "a file of .git holds the answer: {result}");
}

/// An agent that writes the held-out test's file itself (a test that always passes) is graded by
/// the test it was set, not by its own: the held-out change goes over the start's files, and the
/// task is unresolved (not an error, which a patch that no longer applies would make it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_writes_the_held_out_tests_is_graded_by_the_real_ones() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = started(dir.path());
    let fix =
        [("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))];
    commit(&r, "Fix add", &fix);
    let tasks = mine_in(dir.path(), &r, 1).await;
    script_writing(dir.path(), "tests/test_add.py", &test("assert True"));
    std::fs::write(dir.path().join("cheat.yaml"), with_script(JOB)).unwrap();
    let out = dir.path().join("eval");
    let args = ["eval", "run", tasks.to_str().unwrap(), "--job", "cheat.yaml", "--out", out.to_str().unwrap()];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    assert_eq!(all[0]["verdict"], "unresolved", "{all}");
    assert!(all[0]["status"].as_str().is_some(), "the agent's run ran: {all}");
}

/// A test command that names `{test_files}` runs, when mining, the candidate's test files alone:
/// a failing test elsewhere never runs, and the task's tests are named as the command got them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mining_runs_a_candidate_s_test_files_alone_when_the_command_names_them() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let job = JOB.replace("run: \"sh run_tests.sh\"", "run: \"sh run_tests.sh {test_files}\"")
        + "setup:\n  - { name: deps, run: \"touch .deps\" }\n";
    let files = [
        ("calc.py", calc("a - b", "a - b", "a // 2", false)),
        ("run_tests.sh", super::eval_swebench::SELECTING.into()),
    ];
    let rest = [("tests/test_mul.py", test("assert False")), ("job.yaml", job)];
    commit(&r, "start", &[&files[..], &rest[..]].concat());
    let fix =
        [("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))];
    commit(&r, "Fix add", &fix);
    let tasks = mine_in(dir.path(), &r, 1).await;
    let task = &lines(&tasks)[0];
    assert_eq!(task["FAIL_TO_PASS"], serde_json::json!(["./tests/test_add.py"]), "{task}");
    assert_eq!(task["PASS_TO_PASS"], serde_json::json!([]), "{task}");
}

/// A cancel while a candidate's tests run: the tasks judged before it are written, the exit
/// code says it was interrupted, and the blocked tests do not outlive hone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_mining_writes_the_tasks_it_had_found() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let files = [("calc.py", calc("a - b", "a + b", "a // 2", false)), ("run_tests.sh", RUNNER.into())];
    commit(&r, "start", &[&files[..], &[("job.yaml", JOB.into())][..]].concat());
    // While `sub` is wrong, its test marks that it started and waits for a signal.
    let blocks = "import signal\nfrom calc import *\nif sub(3, 1) != 2:\n    open('started-hone-eval-cancel', 'w').close()\n    signal.pause()\n";
    commit(
        &r,
        "Fix sub",
        &[("calc.py", calc("a - b", "a - b", "a // 2", false)), ("tests/test_sub_blocks.py", blocks.into())],
    );
    let fix =
        [("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))];
    commit(&r, "Fix add", &fix);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hone"))
        .args(["eval", "mine", "--job", "job.yaml", "--out", tasks.to_str().unwrap()])
        .current_dir(&r)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = tmp.clone();
    tokio::task::spawn_blocking(move || {
        fn found(d: &Path) -> bool {
            std::fs::read_dir(d).into_iter().flatten().flatten().any(|e| {
                e.file_name() == "started-hone-eval-cancel"
                    || (e.file_type().is_ok_and(|t| t.is_dir()) && found(&e.path()))
            })
        }
        let start = std::time::Instant::now();
        while !found(&seen) {
            assert!(start.elapsed() < std::time::Duration::from_secs(120), "the blocking test never started");
            std::thread::park_timeout(std::time::Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled: the 1 task(s) found before it"), "{stderr}");
    let found = lines(&tasks);
    assert_eq!((found.len(), found[0]["problem_statement"].as_str()), (1, Some("Fix add")), "{found:?}");
    assert!(survivors("test_sub_blocks.py").is_empty());
}
