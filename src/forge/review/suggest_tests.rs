//! The planner's property: the suggestions applied to the head, then `git apply` of the patch,
//! give exactly the commit's tree, for every shape of change; and what goes where.

use super::*;
use crate::git::test_git::git;
use std::path::Path;

/// A file: path, content, executable.
type File<'a> = (&'a str, &'a [u8], bool);

fn write_all(dir: &Path, files: &[File<'_>]) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().unwrap() != ".git" {
            if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) }.unwrap();
        }
    }
    for (path, content, exec) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(if *exec { 0o755 } else { 0o644 })).unwrap();
    }
}

/// A repository with a head commit and hone's commit on it.
pub(crate) struct Case {
    pub dir: tempfile::TempDir,
    pub head: Oid,
    pub commit: Oid,
}

pub(crate) fn case(head: &[File<'_>], commit: &[File<'_>]) -> Case {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    write_all(dir.path(), head);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "head"]);
    let head = Oid::from_str(&git(dir.path(), &["rev-parse", "HEAD"])).unwrap();
    write_all(dir.path(), commit);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "hone"]);
    let commit = Oid::from_str(&git(dir.path(), &["rev-parse", "HEAD"])).unwrap();
    Case { dir, head, commit }
}

/// Every line of every path commentable.
fn everything(paths: &[&str]) -> Commentable {
    let mut c = Commentable::default();
    paths.iter().for_each(|p| c.add(p, "@@ -1,1 +1,1000000 @@"));
    c
}

fn plan_of(c: &Case, commentable: &Commentable) -> ReviewPlan {
    let repo = Repository::open(c.dir.path()).unwrap();
    plan(&repo, c.head, c.commit, commentable).unwrap()
}

/// Apply `s` to `text` as GitHub commits a suggestion: lines `start..=end` replaced.
pub(crate) fn apply_one(text: &str, s: &Suggestion) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: String = lines[..s.start as usize - 1].concat();
    s.lines.iter().for_each(|l| out.push_str(&format!("{l}\n")));
    out.push_str(&lines[s.end as usize..].concat());
    out
}

/// The property: suggestions applied to the head's files, then the patch, give the commit's tree.
fn assert_round_trip(c: &Case, plan: &ReviewPlan) {
    let d = c.dir.path();
    git(d, &["checkout", "-q", "-f", "--detach", &c.head.to_string()]);
    git(d, &["clean", "-q", "-fdx"]);
    let mut by_path: BTreeMap<&str, Vec<&Suggestion>> = BTreeMap::new();
    plan.suggestions.iter().for_each(|s| by_path.entry(&s.path).or_default().push(s));
    for (path, mut list) in by_path {
        list.sort_by_key(|s| std::cmp::Reverse(s.start));
        let mut text = std::fs::read_to_string(d.join(path)).unwrap();
        list.iter().for_each(|s| text = apply_one(&text, s));
        std::fs::write(d.join(path), text).unwrap();
    }
    if !plan.patch.is_empty() {
        let p = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(p.path(), &plan.patch).unwrap();
        git(d, &["apply", "--whitespace=nowarn", p.path().to_str().unwrap()]);
    }
    git(d, &["add", "-A"]);
    let want = git(d, &["rev-parse", &format!("{}^{{tree}}", c.commit)]);
    assert_eq!(git(d, &["write-tree"]), want, "suggestions + patch != commit\n{plan:#?}");
}

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

#[test]
fn hunks_become_suggestions_on_the_head_lines() {
    let new = "top\nl1\nL2\nl3\nl5\nl6\nl7\nl8\nl9\nl10\nend\n";
    let c = case(&[("a.txt", TEN.as_bytes(), false)], &[("a.txt", new.as_bytes(), false)]);
    let plan = plan_of(&c, &everything(&["a.txt"]));
    let got: Vec<(u32, u32, Vec<&str>)> =
        plan.suggestions.iter().map(|s| (s.start, s.end, s.lines.iter().map(String::as_str).collect())).collect();
    assert_eq!(
        got,
        vec![
            (1, 2, vec!["top", "l1", "L2"]), // insert at top (anchored to line 1) touching line 2's change
            (4, 4, vec![]),                  // line 4 deleted
            (10, 10, vec!["l10", "end"]),    // insert at the end, repeating line 10
        ]
    );
    assert!(plan.patch.is_empty() && plan.in_patch.is_empty(), "{plan:#?}");
    assert_round_trip(&c, &plan);
}

#[test]
fn adjacent_hunks_merge_and_distant_ones_do_not() {
    let new = "l1\nL2\nl3\nnew\nl4\nl5\nL6\nl7\nl8\nl9\nl10\n";
    let c = case(&[("a.txt", TEN.as_bytes(), false)], &[("a.txt", new.as_bytes(), false)]);
    let plan = plan_of(&c, &everything(&["a.txt"]));
    let ranges: Vec<(u32, u32)> = plan.suggestions.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(ranges, vec![(2, 3), (6, 6)], "{plan:#?}");
    assert_eq!(plan.suggestions[0].lines, vec!["L2", "l3", "new"]);
    assert_round_trip(&c, &plan);
}

#[test]
fn files_a_suggestion_cannot_carry_go_into_the_patch_with_why() {
    let bin: &[u8] = b"\x00\x01binary\x00";
    let head: Vec<File<'_>> = vec![
        ("gone.txt", b"bye\n", false),
        ("old/name.txt", b"one\ntwo\nthree\nfour\nfive\n", false),
        ("run.sh", b"echo hi\n", false),
        ("img.bin", bin, false),
        ("crlf.txt", b"a\r\nb\r\nc\r\n", false),
        ("noeol.txt", b"first\nmid\nlast", false),
    ];
    let commit: Vec<File<'_>> = vec![
        ("new/file.rs", b"fn main() {}\n", false),
        ("new/name.txt", b"one\ntwo\nthree\nfour\nfive\n", false),
        ("run.sh", b"echo hi\n", true),
        ("img.bin", b"\x00\x02binary\x00", false),
        ("crlf.txt", b"a\r\nB\r\nc\r\n", false),
        ("noeol.txt", b"FIRST\nmid\nlast!", false),
    ];
    let c = case(&head, &commit);
    let all = ["new/file.rs", "new/name.txt", "run.sh", "img.bin", "crlf.txt", "noeol.txt", "gone.txt"];
    let plan = plan_of(&c, &everything(&all));
    let why: BTreeMap<&str, &str> = plan.in_patch.iter().map(|(p, w)| (p.as_str(), w.as_str())).collect();
    assert_eq!(why["new/file.rs"], "new file");
    assert_eq!(why["gone.txt"], "deleted file");
    assert_eq!(why["new/name.txt"], "renamed from old/name.txt");
    assert_eq!(why["run.sh"], "file mode changed");
    assert_eq!(why["img.bin"], "binary file");
    assert!(why["crlf.txt"].contains("carriage return"), "{why:?}");
    assert!(why["noeol.txt"].contains("no newline"), "{why:?}");
    // The first line of the file without a final newline is still a plain line.
    let s: Vec<(&str, u32)> = plan.suggestions.iter().map(|s| (s.path.as_str(), s.start)).collect();
    assert_eq!(s, vec![("noeol.txt", 1)]);
    assert!(plan.patch.contains("rename from old/name.txt") && plan.patch.contains("GIT binary patch"));
    assert_round_trip(&c, &plan);
}

#[test]
fn hunks_outside_the_pr_diff_go_into_the_patch_after_the_suggestions() {
    let new = "l1\nL2\nl3\nl4\nl5\nl6\nl7\nL8\nl9\nl10\n";
    let c = case(&[("a.txt", TEN.as_bytes(), false)], &[("a.txt", new.as_bytes(), false)]);
    let mut pr = Commentable::default();
    pr.add("a.txt", "@@ -1,3 +1,4 @@\n l1\n+x\n l2\n l3\n");
    let plan = plan_of(&c, &pr);
    assert_eq!(plan.suggestions.len(), 1);
    assert_eq!((plan.suggestions[0].start, plan.suggestions[0].end), (2, 2));
    assert_eq!(plan.in_patch, vec![("a.txt".to_string(), "lines outside the pull request's diff".to_string())]);
    assert!(plan.patch.contains("-l8\n+L8\n") && !plan.patch.contains("+L2"), "{}", plan.patch);
    assert_round_trip(&c, &plan);
    // A file that is not in the PR's diff at all.
    let plan = plan_of(&c, &Commentable::default());
    assert!(plan.suggestions.is_empty());
    assert_round_trip(&c, &plan);
}

#[test]
fn insertions_into_an_empty_file_and_crlf_round_trip() {
    let c = case(
        &[("empty.txt", b"", false), ("w.txt", b"a\r\nb\r\n", false)],
        &[("empty.txt", b"now\n", false), ("w.txt", b"a\r\nb\r\nc\r\n", false)],
    );
    let plan = plan_of(&c, &everything(&["empty.txt", "w.txt"]));
    assert!(plan.suggestions.is_empty(), "{plan:#?}");
    assert_eq!(plan.in_patch.len(), 2);
    assert_round_trip(&c, &plan);
}

#[test]
fn a_change_past_the_bounds_degrades_to_the_patch() {
    let head: String = (1..=400).map(|i| format!("line {i}\n")).collect();
    let new: String =
        (1..=400).map(|i| if i % 3 == 0 { format!("LINE {i}\n") } else { format!("line {i}\n") }).collect();
    let big = "x\n".repeat(MAX_FILE_BYTES / 2 + 1);
    let big2 = format!("y\n{}", &big[2..]);
    let c = case(
        &[("many.txt", head.as_bytes(), false), ("big.txt", big.as_bytes(), false)],
        &[("many.txt", new.as_bytes(), false), ("big.txt", big2.as_bytes(), false)],
    );
    let plan = plan_of(&c, &everything(&["many.txt", "big.txt"]));
    assert_eq!(plan.suggestions.len(), MAX_SUGGESTIONS);
    let why: BTreeMap<&str, &str> = plan.in_patch.iter().map(|(p, w)| (p.as_str(), w.as_str())).collect();
    assert!(why["big.txt"].starts_with("larger than"), "{why:?}");
    assert!(why["many.txt"].contains("more suggestions"), "{why:?}");
    assert_round_trip(&c, &plan);
}

#[test]
fn an_unchanged_commit_plans_nothing() {
    let c = case(&[("a.txt", b"a\n", false)], &[("a.txt", b"a\n", false)]);
    assert_eq!(plan_of(&c, &everything(&["a.txt"])), ReviewPlan::default());
}

mod random {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        // Few distinct lines, so that diffs align in many ways; now and then a CR or no final newline.
        let line = prop_oneof![Just("a"), Just("b"), Just("c"), Just("d\r"), Just("}"), Just("")];
        (prop::collection::vec(line, 0..14), any::<bool>()).prop_map(|(lines, eol)| {
            let mut t: String = lines.iter().map(|l| format!("{l}\n")).collect();
            if !eol && !t.is_empty() {
                t.push('z');
            }
            t
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn suggestions_and_patch_give_the_commit(old in text(), new in text(), from in 1u32..8, len in 0u32..8) {
            let c = case(&[("f.txt", old.as_bytes(), false)], &[("f.txt", new.as_bytes(), false)]);
            let mut pr = Commentable::default();
            pr.add("f.txt", &format!("@@ -1 +{from},{len} @@"));
            let plan = plan_of(&c, &pr);
            for s in &plan.suggestions {
                prop_assert!(pr.allows("f.txt", s.start, s.end));
            }
            assert_round_trip(&c, &plan);
        }
    }
}
