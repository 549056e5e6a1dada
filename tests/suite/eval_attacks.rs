//! `hone eval` attacked: an agent that reaches outside the grading tree through a link it
//! committed, one that rewrites the test runner, a run that never worked, two jobs named alike,
//! a commit whose tests hang in mining, a report's place taken by a link.

use super::eval_mine::{JOB, RUNNER, calc, commit, script_writing, test, with_script};
use super::eval_swebench::adding;
use crate::common::repo::git;
use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// A repository `calc` with `add` wrong, and a task file (SWE-bench's format) whose held-out
/// test is `test_path`; the task file's path.
fn task_over(dir: &Path, test_path: &str) -> std::path::PathBuf {
    let r = dir.join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let files = [("calc.py", calc("a - b", "a - b", "a // 2", false)), ("run_tests.sh", RUNNER.into())];
    let base = commit(&r, "start", &[&files[..], &[("tests/test_mul.py", test("assert 2 * 3 == 6"))][..]].concat());
    let name = Path::new(test_path).file_stem().unwrap().to_str().unwrap().to_string();
    let task = serde_json::json!({
        "instance_id": "acme__calc-1",
        "repo": r.display().to_string(),
        "base_commit": base,
        "problem_statement": "`add` subtracts",
        "test_patch": adding(test_path, &test("assert add(1, 2) == 3")),
        "FAIL_TO_PASS": [name],
        "PASS_TO_PASS": ["test_mul"],
    });
    let tasks = dir.join("tasks.jsonl");
    std::fs::write(&tasks, format!("{task}\n")).unwrap();
    tasks
}

/// `hone eval run` of `tasks` with each job in `jobs` into `dir/eval`: its outcomes.
async fn eval(dir: &Path, tasks: &Path, jobs: &[&str], more: &[&str]) -> Vec<Value> {
    let out = dir.join("eval");
    let mut args = vec!["eval", "run", tasks.to_str().unwrap(), "--out", out.to_str().unwrap()];
    for j in jobs {
        args.extend(["--job", j]);
    }
    args.extend(more);
    let run = run_in(dir, &args, &[], dir.join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    all.as_array().unwrap().clone()
}

/// The agent commits a link where the held-out test's directory goes, to a directory outside:
/// grading writes the test inside its own tree, never through the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_the_agent_committed_never_takes_the_held_out_tests_outside() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let tasks = task_over(dir.path(), "tests2/test_add.py");
    let link = format!("ln -s {} tests2", victim.display());
    let script = format!(
        "turns:\n  - tool_calls:\n      - {{ name: run_cmd, arguments: {{ command: {} }} }}\n  - content: Done.\n",
        serde_json::to_string(&link).unwrap()
    );
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    std::fs::write(dir.path().join("open.yaml"), OPEN_POLICY).unwrap();
    std::fs::write(dir.path().join("linking.yaml"), with_script(JOB) + "policy: open.yaml\n").unwrap();
    let all = eval(dir.path(), &tasks, &["linking.yaml"], &[]).await;
    assert_eq!(all[0]["verdict"], "unresolved", "{all:?}");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "hone wrote through the agent's link");
}

/// The agent makes the test runner report every test passing: grading runs the start's runner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_rewrites_the_test_runner_is_graded_by_the_real_one() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let tasks = task_over(dir.path(), "tests/test_add.py");
    let lying =
        "echo '<testsuite><testcase name=\"test_add\"/><testcase name=\"test_mul\"/></testsuite>' > junit.xml\n";
    script_writing(dir.path(), "run_tests.sh", lying);
    std::fs::write(dir.path().join("lying.yaml"), with_script(JOB)).unwrap();
    let all = eval(dir.path(), &tasks, &["lying.yaml"], &[]).await;
    assert_eq!((&all[0]["status"], &all[0]["verdict"]), (&"success".into(), &"unresolved".into()), "{all:?}");
}

/// A model that cannot be reached: every task is an error of the evaluation, not unresolved. A
/// job that would not commit is graded by what it changed all the same. Two jobs with one file
/// name in two dirs each get their own place; and a second run into the same out dir works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_did_not_cause_is_an_error_and_jobs_named_alike_stay_apart() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let tasks = task_over(dir.path(), "tests/test_add.py");
    script_writing(dir.path(), "calc.py", &calc("a + b", "a - b", "a // 2", false));
    for (d, job) in [
        ("a", with_script(JOB).replace("script.yaml", "../script.yaml") + "git: { commit: false }\n"),
        ("b", JOB.into()),
    ] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
        std::fs::write(dir.path().join(d).join("job.yaml"), job).unwrap();
    }
    for _ in 0..2 {
        let all = eval(dir.path(), &tasks, &["a/job.yaml", "b/job.yaml"], &[]).await;
        let verdicts: Vec<(&str, &str)> =
            all.iter().map(|o| (o["config"].as_str().unwrap(), o["verdict"].as_str().unwrap())).collect();
        assert_eq!(verdicts, [("a/job.yaml", "resolved"), ("b/job.yaml", "error")], "{all:?}");
        assert!(all[1]["error"].as_str().is_some_and(|e| !e.is_empty()), "{all:?}");
        assert_ne!(all[0]["dir"], all[1]["dir"]);
    }
}

/// In mining, a commit whose tests hang is left out saying so, and the others are still mined;
/// the mined id names the start, never the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mining_goes_on_past_a_commit_whose_tests_hang() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("calc");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    let job = JOB.replace("timeout: 60s", "timeout: 1s");
    let files = [("calc.py", calc("a - b", "a + b", "a // 2", false)), ("run_tests.sh", RUNNER.into())];
    commit(&r, "start", &[&files[..], &[("job.yaml", job)][..]].concat());
    let hangs = "import signal\nfrom calc import *\nif sub(3, 1) != 2:\n    signal.pause()\n";
    let hung = commit(
        &r,
        "Fix sub",
        &[("calc.py", calc("a - b", "a - b", "a // 2", false)), ("tests/test_sub_hangs.py", hangs.into())],
    );
    let fix =
        [("calc.py", calc("a + b", "a - b", "a // 2", false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))];
    let fixed = commit(&r, "Fix add", &fix);
    let tasks = dir.path().join("tasks.jsonl");
    let mined =
        run_in(&r, &["eval", "mine", "--job", "job.yaml", "--out", tasks.to_str().unwrap()], &[], dir.path().join("u"))
            .await;
    assert_eq!(mined.code, 0, "{}\n{}", mined.stdout, mined.stderr);
    assert!(mined.stdout.contains(" 1 task(s)"), "{}", mined.stdout);
    let task: Value = serde_json::from_str(std::fs::read_to_string(&tasks).unwrap().trim()).unwrap();
    assert_eq!(task["problem_statement"], "Fix add");
    let id = task["instance_id"].as_str().unwrap();
    assert!(!id.contains(&fixed[..12]) && id.contains(&hung[..12]), "the id names the start: {id}");
    let dropped = std::fs::read_to_string(tasks.with_extension("dropped.jsonl")).unwrap();
    let line = dropped.lines().find(|l| l.contains(&hung)).unwrap();
    assert!(line.contains("could not be judged") && line.contains("timeout"), "{line}");
}

/// A link put where a report goes (the out dir is the user's, but a link there could be
/// anyone's): the report replaces the link, and what it pointed at is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_replaces_a_link_in_its_place() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let tasks = task_over(dir.path(), "tests/test_add.py");
    script_writing(dir.path(), "calc.py", &calc("a + b", "a - b", "a // 2", false));
    std::fs::write(dir.path().join("fixing.yaml"), with_script(JOB)).unwrap();
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep\n").unwrap();
    std::fs::create_dir_all(dir.path().join("eval")).unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("eval/eval.md")).unwrap();
    let all = eval(dir.path(), &tasks, &["fixing.yaml"], &[]).await;
    assert_eq!(all[0]["verdict"], "resolved", "{all:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    assert!(!std::fs::symlink_metadata(dir.path().join("eval/eval.md")).unwrap().is_symlink());
}
