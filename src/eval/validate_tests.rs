//! Mining a made history end to end (both stages): three bug fixes with tests, a fix whose test
//! never fails first, a flaky test, a refactor, a docs change and a feature with its tests. The
//! tests are Python files a shell runner turns into a JUnit report; here they run without a jail
//! (the jail is the command's concern, not mining's).

use super::super::mine::{Filters, Why, candidates};
use super::*;
use std::path::PathBuf;

const RUNNER: &str = r#"out=junit.xml
echo '<testsuite>' > $out
for t in tests/test_*.py; do
  n=$(basename $t .py)
  if PYTHONPATH=. python3 $t >/dev/null 2>&1; then echo "<testcase name=\"$n\"/>" >> $out
  else echo "<testcase name=\"$n\"><failure/></testcase>" >> $out; fi
done
echo '</testsuite>' >> $out
"#;

/// The module under test, with each function right or wrong.
fn calc(add: &str, sub: &str, half: &str, neg: bool) -> String {
    let neg = if neg { "def neg(a):\n    return -a\n" } else { "" };
    format!(
        "def add(a, b):\n    return {add}\n\ndef sub(a, b):\n    return {sub}\n\ndef half(a):\n    return {half}\n{neg}"
    )
}

fn test(body: &str) -> String {
    format!("from calc import *\n{body}\n")
}

/// The flaky test passes and fails by turns (its state is kept outside the repository).
const FLAKY: &str = "import os\np = os.environ['FLAKY_STATE']\nn = int(open(p).read()) if os.path.exists(p) else 0\nopen(p, 'w').write(str(n + 1))\nassert n % 2 == 0\n";

/// `c`'s four runs in a task repository made under `scratch`, judged.
async fn validate<T: Tester>(
    src: &Path,
    c: &Candidate,
    scratch: &Path,
    tester: &T,
) -> Result<Result<Graded, Dropped>, HoneError> {
    let root = prepare(src, c, scratch)?;
    runs(src, c, &root, &tester.open(&root, &c.tests).await?, tester).await
}

struct Plain {
    state: PathBuf,
}

impl Tester for Plain {
    type Tree = PathBuf;

    async fn open(&self, root: &Path, _tests: &[String]) -> Result<PathBuf, HoneError> {
        Ok(root.to_path_buf())
    }

    async fn outcomes(&self, root: &PathBuf) -> Result<Outcomes, HoneError> {
        let out = std::process::Command::new("sh")
            .arg("run_tests.sh")
            .current_dir(root)
            .env("FLAKY_STATE", &self.state)
            // As the jail's commands have it: a fix the same size as the code it replaces, written
            // within the second the tests ran, would otherwise run from stale bytecode.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .map_err(|e| HoneError::new(Code::Io, e.to_string()))?;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let xml =
            std::fs::read_to_string(root.join("junit.xml")).map_err(|e| HoneError::new(Code::Io, e.to_string()))?;
        crate::verify::junit_in::outcomes(&xml).map_err(|e| HoneError::new(Code::Io, e.to_string()))
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Write `files` and commit them as `message`; the commit's id.
fn commit(dir: &Path, message: &str, files: &[(&str, String)]) -> git2::Oid {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message]);
    git2::Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap()
}

#[tokio::test]
async fn mining_finds_the_four_tasks_and_says_why_each_other_commit_was_left_out() {
    let src = tempfile::tempdir().unwrap();
    let s = src.path();
    git(s, &["init", "-q", "-b", "main"]);
    let (bad_add, bad_sub, bad_half) = ("a - b", "a + b", "a // 3");
    let start = commit(
        s,
        "start",
        &[
            ("calc.py", calc(bad_add, bad_sub, bad_half, false)),
            ("run_tests.sh", RUNNER.into()),
            ("tests/test_mul.py", test("assert 2 * 3 == 6")),
            ("README.md", "calc\n".into()),
        ],
    );
    let fix_add = commit(
        s,
        "Fix add",
        &[("calc.py", calc("a + b", bad_sub, bad_half, false)), ("tests/test_add.py", test("assert add(1, 2) == 3"))],
    );
    let docs = commit(s, "Docs", &[("README.md", "calc, documented\n".into())]);
    let fix_sub = commit(
        s,
        "Fix sub",
        &[("calc.py", calc("a + b", "a - b", bad_half, false)), ("tests/test_sub.py", test("assert sub(3, 1) == 2"))],
    );
    let never = commit(
        s,
        "Tidy add",
        &[("calc.py", calc("b + a", "a - b", bad_half, false)), ("tests/test_add2.py", test("assert add(2, 2) == 4"))],
    );
    let refactor = commit(s, "Refactor", &[("calc.py", calc("b + a", "-(b - a)", bad_half, false))]);
    let fix_half = commit(
        s,
        "Fix half",
        &[("calc.py", calc("b + a", "-(b - a)", "a // 2", false)), ("tests/test_half.py", test("assert half(8) == 4"))],
    );
    let feature = commit(
        s,
        "Feature: neg",
        &[("calc.py", calc("b + a", "-(b - a)", "a // 2", true)), ("tests/test_neg.py", test("assert neg(2) == -2"))],
    );
    let flaky = commit(
        s,
        "Fix add again",
        &[("calc.py", calc("a + b", "-(b - a)", "a // 2", true)), ("tests/test_flaky.py", FLAKY.into())],
    );

    let repo = git2::Repository::open(s).unwrap();
    let mined = candidates(&repo, flaky, &Filters::default()).unwrap();
    let skipped: Vec<(git2::Oid, Why)> = mined.skipped.iter().map(|k| (k.commit, k.why)).collect();
    assert_eq!(skipped, [(refactor, Why::NoTests), (docs, Why::NoCode), (start, Why::Root)]);
    let scratch = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let tester = Plain { state: state.path().join("flaky") };
    let mut tasks = Vec::new();
    let mut dropped = Vec::new();
    for c in &mined.candidates {
        match validate(s, c, scratch.path(), &tester).await.unwrap() {
            Ok(g) => tasks.push((c.commit, g)),
            Err(d) => dropped.push((c.commit, d)),
        }
    }
    let found: Vec<git2::Oid> = tasks.iter().map(|(c, _)| *c).collect();
    assert_eq!(found, [feature, fix_half, fix_sub, fix_add], "{dropped:?}");
    let (_, add) = tasks.iter().find(|(c, _)| *c == fix_add).unwrap();
    assert_eq!(
        (add.fail_to_pass.as_slice(), add.pass_to_pass.as_slice()),
        (&["test_add".to_string()][..], &["test_mul".to_string()][..])
    );
    let (_, neg) = tasks.iter().find(|(c, _)| *c == feature).unwrap();
    assert_eq!(neg.fail_to_pass, ["test_neg"]);
    assert!(neg.pass_to_pass.contains(&"test_half".to_string()) && neg.pass_to_pass.len() == 5, "{neg:?}");
    assert_eq!(dropped[0], (flaky, Dropped::Flaky(vec!["test_flaky".into()])));
    assert_eq!(dropped[1], (never, Dropped::NeverFailsFirst));
    assert!(dropped[0].1.words().contains("flaky") && dropped[1].1.words().contains("no test fails"));
}

/// A fix that needs a file that is neither source nor test (data the code reads) is a task: the
/// runs with the fix have the commit's every non-test file, as SWE-bench's gold patch has.
#[tokio::test]
async fn a_fix_s_data_files_come_with_its_source() {
    let src = tempfile::tempdir().unwrap();
    let s = src.path();
    git(s, &["init", "-q", "-b", "main"]);
    let reads = "def add(a, b):\n    return a + b + int(open('offset.txt').read())\n";
    commit(s, "start", &[("calc.py", reads.into()), ("offset.txt", "1\n".into()), ("run_tests.sh", RUNNER.into())]);
    let fix = commit(
        s,
        "Fix the offset",
        &[
            ("calc.py", format!("# The offset is data.\n{reads}")),
            ("offset.txt", "0\n".into()),
            ("tests/test_add.py", test("assert add(1, 2) == 3")),
        ],
    );
    let repo = git2::Repository::open(s).unwrap();
    let mined = candidates(&repo, fix, &Filters::default()).unwrap();
    assert_eq!(mined.candidates[0].others, ["offset.txt"]);
    let (scratch, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tester = Plain { state: state.path().join("flaky") };
    let judged = validate(s, &mined.candidates[0], scratch.path(), &tester).await.unwrap();
    assert_eq!(judged.map(|g| g.fail_to_pass), Ok(vec!["test_add".to_string()]));
}
