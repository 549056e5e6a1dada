//! `hone eval run` on a file in SWE-bench's format, built here over local repositories: its test
//! lists as JSON strings, keys hone does not use, each task graded by its own held-out tests.

use super::eval_mine::{JOB, RUNNER, calc, commit, script_writing, test, with_script};
use crate::common::repo::git;
use crate::common::*;

/// A new-file patch adding `path` with `body`.
pub(super) fn adding(path: &str, body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let plus: String = lines.iter().map(|l| format!("+{l}\n")).collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{plus}",
        lines.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swe_bench_file_of_three_instances_runs_and_grades() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    // Two repositories whose `add` is wrong, one whose `sub` is: the scripted model fixes `add`.
    let cases = [
        ("alpha", "a - b", "a - b", "test_add", "assert add(1, 2) == 3"),
        ("beta", "a * b", "a - b", "test_add", "assert add(2, 3) == 5"),
        ("gamma", "a + b", "a + b", "test_sub", "assert sub(3, 1) == 2"),
    ];
    let mut lines = String::new();
    for (name, add, sub, id, body) in cases {
        let r = dir.path().join(name);
        std::fs::create_dir_all(&r).unwrap();
        git(&r, &["init", "-q", "-b", "main"]);
        let files = [
            ("calc.py", calc(add, sub, "a // 2", false)),
            ("run_tests.sh", RUNNER.into()),
            ("tests/test_mul.py", test("assert 2 * 3 == 6")),
        ];
        let base = commit(&r, "start", &files);
        let task = serde_json::json!({
            "instance_id": format!("acme__{name}-1"),
            "repo": r.display().to_string(),
            "base_commit": base,
            "problem_statement": format!("`{id}` fails"),
            "test_patch": adding(&format!("tests/{id}.py"), &test(body)),
            "FAIL_TO_PASS": format!("[\"{id}\"]"),
            "PASS_TO_PASS": "[\"test_mul\"]",
            "version": "0.1",
            "created_at": "2026-01-01T00:00:00Z",
        });
        lines.push_str(&format!("{task}\n"));
    }
    let tasks = dir.path().join("swe.jsonl");
    std::fs::write(&tasks, lines).unwrap();
    script_writing(dir.path(), "calc.py", &calc("a + b", "a + b", "a // 2", false));
    std::fs::write(dir.path().join("scripted.yaml"), with_script(JOB)).unwrap();
    let out = dir.path().join("eval");
    let args = ["eval", "run", tasks.to_str().unwrap(), "--job", "scripted.yaml", "--out", out.to_str().unwrap()];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("2 of 3 resolved (0 error(s))"), "{}", run.stdout);
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    let verdicts: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["instance_id"].as_str().unwrap(), o["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [("acme__alpha-1", "resolved"), ("acme__beta-1", "resolved"), ("acme__gamma-1", "unresolved")]
    );
    // Within a total budget: once the finished tasks cost it, no more start, and the line says so.
    let priced = std::fs::read_to_string(dir.path().join("scripted.yaml"))
        .unwrap()
        .replace("script: script.yaml }", "script: script.yaml, pricing: { input: 1000, output: 1000 } }");
    std::fs::write(dir.path().join("priced.yaml"), priced).unwrap();
    let out2 = dir.path().join("eval2");
    let args = [
        "eval",
        "run",
        tasks.to_str().unwrap(),
        "--job",
        "priced.yaml",
        "--out",
        out2.to_str().unwrap(),
        "--concurrency",
        "1",
        "--budget-usd",
        "0.001",
    ];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("2 not run: the budget was spent"), "{}", run.stdout);
    let ran: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("eval.json")).unwrap()).unwrap();
    assert_eq!(ran.as_array().unwrap().len(), 1);
    assert!(ran[0]["cost_usd"].as_f64() > Some(0.001), "{ran}");
    // eval.md's charts are valid Mermaid, the job a point of its resolve rate against its cost.
    if let Some(blocks) = crate::common::mermaid::parse(&[&out2.join("eval.md")]) {
        let points = blocks.iter().find(|b| b["type"] == "quadrantChart").expect("a chart of rate against cost");
        assert_eq!(points["items"], serde_json::json!(["priced.yaml"]), "{points}");
        assert_eq!(points["axes"][2], "0% resolved", "{points}");
    }
    // The source repositories are as they were: each task ran in a copy.
    for (name, ..) in cases {
        assert_eq!(git(&dir.path().join(name), &["status", "--porcelain"]), "");
    }
}

/// A runner that runs the test files it is given (all of them without any), naming each case by
/// the path as given: a case named `./tests/…` ran because hone put in `{test_files}`. It needs
/// what its repository's setup makes.
pub(super) const SELECTING: &str = r#"test -f .deps || exit 3
out=junit.xml
echo '<testsuite>' > $out
if [ $# -eq 0 ]; then set -- tests/test_*.py; fi
for t in "$@"; do
  if PYTHONPATH=. python3 $t >/dev/null 2>&1; then echo "<testcase name=\"$t\"/>" >> $out
  else echo "<testcase name=\"$t\"><failure/></testcase>" >> $out; fi
done
echo '</testsuite>' >> $out
"#;

/// SWE-bench's files name a repository `owner/name`: a repositories file says where each is (one
/// served over HTTP by a real git server, one a local path), the setup its trees need and the
/// command that runs its tests, there given the held-out test files alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositories_file_places_each_repository_with_its_setup_and_test_command() {
    require!(Need::UserNamespaces);
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    let server = crate::common::git_http::GitHttp::start(&served, crate::common::git_http::Mode::Open).await;
    let mut lines = String::new();
    for name in ["remote", "local"] {
        let r = dir.path().join(name);
        std::fs::create_dir_all(&r).unwrap();
        git(&r, &["init", "-q", "-b", "main"]);
        let files = [
            ("calc.py", calc("a - b", "a - b", "a // 2", false)),
            ("run_tests.sh", SELECTING.into()),
            ("tests/test_mul.py", test("assert False, 'not a graded test: never run for grading'")),
        ];
        let base = commit(&r, "start", &files);
        let task = serde_json::json!({
            "instance_id": format!("acme__{name}-1"),
            "repo": format!("acme/{name}"),
            "base_commit": base,
            "problem_statement": "`add` subtracts",
            "test_patch": adding("tests/test_add.py", &test("assert add(1, 2) == 3")),
            "FAIL_TO_PASS": ["./tests/test_add.py"],
            "PASS_TO_PASS": [],
        });
        lines.push_str(&format!("{task}\n"));
    }
    crate::common::git_http::serve_copy_of(&served, "remote.git", &dir.path().join("remote"));
    let url = format!("{}/remote.git", server.base);
    let repos = format!(
        "version: 1\nrepos:\n  acme/remote:\n    source: {url}\n    setup: [\"touch .deps\"]\n    test: \"sh run_tests.sh {{test_files}}\"\n  acme/local:\n    source: local\n    setup: [\"touch .deps\"]\n    test: \"sh run_tests.sh {{test_files}}\"\n"
    );
    std::fs::write(dir.path().join("repos.yaml"), repos).unwrap();
    std::fs::write(dir.path().join("swe.jsonl"), lines).unwrap();
    script_writing(dir.path(), "calc.py", &calc("a + b", "a - b", "a // 2", false));
    std::fs::write(dir.path().join("scripted.yaml"), with_script(JOB)).unwrap();
    let out = dir.path().join("eval");
    let o = out.to_str().unwrap();
    let args = ["eval", "run", "swe.jsonl", "--job", "scripted.yaml", "--repos", "repos.yaml", "--out", o, "--json"];
    let run = run_in(dir.path(), &args, &[], dir.path().join("u")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // With --json, stdout is JSON lines alone: an outcome per task as it finished, then the totals.
    let said: Vec<serde_json::Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(said.iter().filter(|l| l["event"] == "eval_outcome" && l["verdict"] == "resolved").count(), 2);
    let done = said.last().unwrap();
    assert_eq!(
        (&done["event"], &done["jobs"][0]["resolved"], &done["not_run"]),
        (&"eval_done".into(), &2.into(), &0.into())
    );
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    for o in all.as_array().unwrap() {
        assert_eq!(o["verdict"], "resolved", "{all}");
        // The agent's own checks ran the whole suite: the held-out file's name never reached it.
        let report = std::fs::read_to_string(out.join(o["dir"].as_str().unwrap()).join("reports/report.json")).unwrap();
        assert!(report.contains("sh run_tests.sh"), "{report}");
        assert!(!report.contains("test_add"), "the agent's run learnt the held-out test file: {report}");
    }
    assert!(server.seen().iter().any(|s| s.path.contains("remote.git")), "the remote repository was cloned over HTTP");
    assert!(server.credentials().is_empty(), "no credentials offered: {:?}", server.credentials());
}
