//! Mining's first stage over a made history: each kind of commit found or left out, and why.

use super::*;
use git2::Signature;

/// One commit of a made history: its message, the files it writes, when (seconds since the epoch).
struct Made<'a> {
    message: &'a str,
    files: &'a [(&'a str, &'a str)],
    when: i64,
}

/// A repository with `commits`, in order.
fn history(commits: &[Made<'_>]) -> (tempfile::TempDir, Repository, Vec<Oid>) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let mut oids = Vec::new();
    for Made { message, files, when } in commits {
        for (path, text) in *files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let mut index = repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::new("t", "t@example.com", &git2::Time::new(*when, 0)).unwrap();
        let parents: Vec<git2::Commit<'_>> = oids.last().map(|o| repo.find_commit(*o).unwrap()).into_iter().collect();
        let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        oids.push(repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &refs).unwrap());
    }
    (dir, repo, oids)
}

const DAY: i64 = 86_400;

fn eight() -> (tempfile::TempDir, Repository, Vec<Oid>) {
    let many: String = (0..60).map(|i| format!("x{i} = {i}\n")).collect();
    let start = [
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        ("tests/test_calc.py", "# tests\n"),
        ("README.md", "calc\n"),
    ];
    let fix = [("calc.py", "def add(a, b):\n    return a + b\n"), ("tests/test_calc.py", "# add\n")];
    let feature = [("mul.py", "def mul(a, b):\n    return a * b\n"), ("tests/test_mul.py", "# mul\n")];
    history(&[
        Made { message: "start", files: &start, when: DAY },
        Made { message: "Fix add", files: &fix, when: 2 * DAY },
        Made { message: "Docs", files: &[("README.md", "calc, documented\n")], when: 3 * DAY },
        Made { message: "Refactor", files: &[("calc.py", "def add(a, b):\n    return b + a\n")], when: 4 * DAY },
        Made { message: "Feature: mul", files: &feature, when: 5 * DAY },
        Made { message: "More tests", files: &[("tests/test_more.py", "# more\n")], when: 6 * DAY },
        Made {
            message: "Big change",
            files: &[("big.py", many.as_str()), ("tests/test_big.py", "# big\n")],
            when: 7 * DAY,
        },
        Made {
            message: "Fix in lib",
            files: &[("lib/util.py", "U = 1\n"), ("lib/util_test.py", "# u\n")],
            when: 8 * DAY,
        },
    ])
}

#[test]
fn the_commits_that_change_source_and_tests_together_are_found_and_the_others_say_why() {
    let (_dir, repo, c) = eight();
    let f = Filters { max_lines: 40, ..Default::default() };
    let mined = candidates(&repo, c[7], &f).unwrap();
    let found: Vec<Oid> = mined.candidates.iter().map(|k| k.commit).collect();
    assert_eq!(found, [c[7], c[4], c[1]], "newest first");
    let fix = mined.candidates.iter().find(|k| k.commit == c[1]).unwrap();
    assert_eq!((fix.parent, fix.message.as_str()), (c[0], "Fix add"));
    assert_eq!(
        (fix.tests.as_slice(), fix.sources.as_slice()),
        (&["tests/test_calc.py".to_string()][..], &["calc.py".to_string()][..])
    );
    let why: Vec<(Oid, Why)> = mined.skipped.iter().map(|s| (s.commit, s.why)).collect();
    assert_eq!(
        why,
        [
            (c[6], Why::TooLarge(61)),
            (c[5], Why::NoSource),
            (c[3], Why::NoTests),
            (c[2], Why::NoCode),
            (c[0], Why::Root)
        ]
    );
}

#[test]
fn the_filters_narrow_by_path_date_and_count() {
    let (_dir, repo, c) = eight();
    let mut b = globset::GlobSetBuilder::new();
    b.add(globset::Glob::new("lib/**").unwrap());
    let paths = Filters { paths: Some(b.build().unwrap()), ..Default::default() };
    let mined = candidates(&repo, c[7], &paths).unwrap();
    assert_eq!(mined.candidates.iter().map(|k| k.commit).collect::<Vec<_>>(), [c[7]]);
    assert!(mined.skipped.iter().any(|s| s.commit == c[4] && s.why == Why::OutsidePaths));
    let dates = Filters { since: Some(2 * DAY), until: Some(6 * DAY), ..Default::default() };
    let mined = candidates(&repo, c[7], &dates).unwrap();
    assert_eq!(mined.candidates.iter().map(|k| k.commit).collect::<Vec<_>>(), [c[4], c[1]]);
    assert!(mined.skipped.iter().any(|s| s.commit == c[7] && s.why == Why::OutsideDates));
    let one = Filters { count: 1, ..Default::default() };
    assert_eq!(candidates(&repo, c[7], &one).unwrap().candidates.len(), 1);
}

#[test]
fn a_merged_pull_request_s_task_is_its_title_and_body() {
    let gh = "Merge pull request #12 from acme/fix-add\n\nFix add for negative numbers\n\nadd(-1, 1) gave -2.";
    assert_eq!(task_text(gh, true), "Fix add for negative numbers\n\nadd(-1, 1) gave -2.");
    let gl = "Merge branch 'fix' into 'main'\n\nFix add\n\nSee merge request acme/calc!3";
    assert_eq!(task_text(gl, true), "Fix add\n\nSee merge request acme/calc!3");
    assert_eq!(task_text("Merge pull request #3 from a/b", true), "Merge pull request #3 from a/b");
    assert_eq!(task_text("Fix add\n\nIt subtracted.\n", false), "Fix add\n\nIt subtracted.");
    assert_eq!(task_text("Merge sort: stable\n\nbody", false), "Merge sort: stable\n\nbody", "not a merge commit");
}
