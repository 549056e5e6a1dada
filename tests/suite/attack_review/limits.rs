//! hone's own work after the model keeps to the run's wall time and judges what matters, whatever
//! the content: line diffs that cost minutes, and test names past the caps on what is shown.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use crate::suite::jail_support::{cmd, result_of, spec};
use serde_json::json;

/// The test runner: 1,200 cases fail at the baseline (`t0000` …); a case named in `extra.txt`
/// fails too. The JUnit file is the runner's (test code writes it).
const MANY_FAILING: &str = r#"import sys
cases = ['t%04d' % i for i in range(1200)]
try:
    cases += [l.strip() for l in open('extra.txt') if l.strip()]
except FileNotFoundError:
    pass
with open('junit.xml', 'w') as f:
    f.write('<testsuite name="s">')
    for c in cases:
        f.write('<testcase classname="s" name="%s"><failure message="x"/></testcase>' % c)
    f.write('</testsuite>')
sys.exit(1)
"#;

/// `expect: no-regression`, judged test case by test case: a change that makes one more test
/// fail is a regression, however many failed before and however long the names. Capping the
/// names hone keeps (1,000 cases, 300 characters) must not make the new failure vanish: one that
/// sorts after the first 1,000, or one whose name differs from a failing one only past 300
/// characters, would be accepted as "no worse", committed and reported a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_failing_test_is_not_hidden_by_the_caps_on_test_names() {
    require!(Need::UserNamespaces);
    let long = "p".repeat(400);
    for (name, regression) in [("cap-count", "zz_regression".to_string()), ("cap-length", format!("{long}b"))] {
        let repo = TestRepo::new(&[
            ("run_tests.py", MANY_FAILING),
            ("extra.txt", &format!("{long}a\n")),
            ("src/lib.txt", "hello\n"),
        ]);
        let mock = MockModel::start().await;
        mock.turn(
            call("write_file", json!({"path": "extra.txt", "content": format!("{long}a\n{regression}\n")})),
            false,
        )
        .turn(text("Done."), false);
        let check = r#"  - { name: tests, run: "python3 run_tests.py", expect: no-regression, junit: junit.xml, timeout: 30s }"#;
        let yaml = spec(&repo, name, &mock, OPEN_POLICY, "")
            .replace(r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#, check)
            .replace("max_fix_attempts: 2", "max_fix_attempts: 0");
        let run = run_job(&repo, &yaml, &[]).await;
        let report = run.report();
        assert_eq!(report["status"], "failed", "{name}: the regression was accepted: {}", run.stderr);
        assert!(report["commit"].is_null(), "{name}");
    }
}

/// Lines of `a` and `b` at random, seeded: two such files are the worst case for a line diff.
const AB_LINES: &str = r#"import random, sys
r = random.Random(int(sys.argv[2]))
with open(sys.argv[1], 'w') as f:
    f.write('HEAD\n' + ''.join(r.choice('ab') + '\n' for _ in range(1500000)))
"#;

/// The repository's `after_edit` hook (its formatter, whose code or config the repository and the
/// model control) rewrites a 3 MB file the model patched with other lines: the short diff hone
/// shows the model must not cost more than the run's wall time. (xdiff takes some 20 s on two
/// such files; on the 64 MiB hone reads, hours.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_s_rewrite_of_a_large_file_does_not_outlast_the_wall_time() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("gen.py", AB_LINES)]);
    let mock = MockModel::start().await;
    let patch = "--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-HEAD\n+HEAD2\n";
    mock.turn(cmd("python3 gen.py big.txt 1"), false)
        .turn(call("apply_patch", json!({"patch": patch})), false)
        .turn(text("Done."), false);
    let hooks = "hooks:\n  after_edit:\n    - { name: fmt, run: \"python3 gen.py {files} 2\", timeout: 60s }\n";
    let yaml = spec(&repo, "hook-diff", &mock, OPEN_POLICY, hooks)
        .replace("max_wall_time: 60s", "max_wall_time: 8s")
        .replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let started = std::time::Instant::now();
    let run = run_job(&repo, &yaml, &[]).await;
    let took = started.elapsed();
    // Before the bound it took 44 s; the margin is wide so that a slow machine does not fail it.
    assert!(took < std::time::Duration::from_secs(30), "the run took {took:?} with a wall time of 8s\n{}", run.stderr);
    let note = result_of(&mock, 1);
    assert!(note.contains("[hook `fmt` changed big.txt"), "the model is told: {note}");
}

/// `n` lines of `a` and `b` at random (a fixed sequence).
fn ab_lines(n: usize, mut seed: u64) -> String {
    let mut s = String::with_capacity(n * 2);
    for _ in 0..n {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s.push(if seed >> 63 == 1 { 'a' } else { 'b' });
        s.push('\n');
    }
    s
}

/// A hostile repository commits files that a line diff finds costly once rewritten (each under
/// the byte limit, so each is diffed), and the model's one command rewrites them all: the guards'
/// diffs after the model must not take hone minutes past the run's wall time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guards_diff_of_costly_rewrites_does_not_outlast_the_wall_time() {
    require!(Need::UserNamespaces);
    let bodies: Vec<(String, String)> = (0..16).map(|i| (format!("data/f{i:02}.txt"), ab_lines(300_000, i))).collect();
    let mut files: Vec<(&str, &str)> = vec![("status.txt", "broken\n"), ("check.sh", CHECK_SH)];
    files.extend(bodies.iter().map(|(p, b)| (p.as_str(), b.as_str())));
    let repo = TestRepo::new(&files);
    let mock = MockModel::start().await;
    mock.turn(cmd("for f in data/*.txt; do tac $f > t && mv t $f; done"), false).turn(text("Done."), false);
    let yaml = spec(&repo, "costly-diff", &mock, OPEN_POLICY, "")
        .replace("max_wall_time: 60s", "max_wall_time: 8s")
        .replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let started = std::time::Instant::now();
    let run = run_job(&repo, &yaml, &[]).await;
    let took = started.elapsed();
    // Before the bound it ran until the harness killed it (120 s); a wide margin for slow machines.
    assert!(took < std::time::Duration::from_secs(40), "the run took {took:?} with a wall time of 8s\n{}", run.stderr);
    let guard = run.report()["policy"]["guard"].to_string();
    assert!(guard.contains("could not be diffed within the run's wall time"), "{guard}");
    assert!(run.report()["saved_ref"].is_null());
    assert!(repo.is_clean(), "{}", repo.git(&["status", "--porcelain"]));
}
