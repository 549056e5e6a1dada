//! Publishing a review against the GitHub review stand-in (tests/common/mock_github_review,
//! included here so that `publish` is tested before the run calls it): suggestions and patch give
//! hone's commit, re-runs never pile up reviews, only hone's own reviews are touched, pages are
//! counted by hone, bodies fit GitHub's limit, and GitHub's refusals are errors.

use super::*;
use crate::git::test_git::git;
use standin::{LOGIN, MockGithubReview, TOKEN};
use std::path::Path;

#[path = "../../../tests/common/mock_github_review/mod.rs"]
#[allow(dead_code)]
mod standin;

/// `git apply` of `patch` in `work` (nothing when empty), then the work tree's tree id.
fn apply_patch_and_tree(work: &Path, patch: &str) -> String {
    if !patch.is_empty() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), patch).unwrap();
        git(work, &["apply", file.path().to_str().unwrap()]);
    }
    git(work, &["add", "-A"]);
    git(work, &["write-tree"])
}

const BASE: &str = "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\nfn e() {}\nfn f() {}\nfn g() {}\nfn h() {}\nfn i() {}\nfn j() {}\nfn k() {}\nfn l() {}\n";

/// An origin whose `main` has `src/lib.rs`; a fork's PR #3 (`refs/pull/3/head`) changes lines 2
/// and 11 and adds `new.txt`; a clone at the PR's head where hone commits. (origin, clone, head).
struct Setup {
    _dir: tempfile::TempDir,
    origin: std::path::PathBuf,
    work: std::path::PathBuf,
    head: String,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (origin, work) = (dir.path().join("origin.git"), dir.path().join("work"));
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
    git(dir.path(), &["init", "-q", "-b", "main", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/lib.rs"), BASE).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "base"]);
    git(&work, &["push", "-q", origin.to_str().unwrap(), "main"]);
    std::fs::write(work.join("src/lib.rs"), pr_lib()).unwrap();
    std::fs::write(work.join("new.txt"), "one\ntwo\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "fork's work"]);
    git(&work, &["push", "-q", origin.to_str().unwrap(), "HEAD:refs/pull/3/head"]);
    let head = git(&work, &["rev-parse", "HEAD"]);
    Setup { _dir: dir, origin, work, head }
}

/// hone's commit on the PR head: `edit` changes the work tree; its sha.
fn hone_commit(s: &Setup, edit: impl FnOnce(&Path)) -> String {
    git(&s.work, &["checkout", "-q", "-f", "--detach", &s.head]);
    edit(&s.work);
    git(&s.work, &["add", "-A"]);
    git(&s.work, &["commit", "-q", "-m", "hone"]);
    git(&s.work, &["rev-parse", "HEAD"])
}

/// `src/lib.rs` at the PR's head.
fn pr_lib() -> String {
    BASE.replace("fn b() {}", "fn b() { 1 }").replace("fn k() {}", "fn k() { 2 }")
}

/// hone's usual change: lines 1–3 rewritten (inside the PR's first hunk), line 7 (outside the
/// diff), `new.txt` (added by the PR: all of it in the diff), and a new file.
fn usual(w: &Path) {
    let lib = pr_lib().replace("fn b() { 1 }\nfn c() {}\n", "fn b() { 1 + 1 }\nfn c() { 3 }\n");
    std::fs::write(w.join("src/lib.rs"), lib.replace("fn g() {}", "fn g() { 7 }")).unwrap();
    std::fs::write(w.join("new.txt"), "one\n2\n").unwrap();
    std::fs::write(w.join("added.md"), "# Added\n").unwrap();
}

async fn start(s: &Setup) -> (MockGithubReview, GitHub, crate::git::Workspace) {
    let gh = MockGithubReview::start(&s.origin).await;
    gh.open_pr(3, "feature", &s.head, "fork/app");
    let client = GitHub::new(&gh.url, TOKEN, "acme", "app", Default::default()).unwrap();
    let ws = crate::git::Workspace::open(&s.work, Vec::new()).unwrap();
    (gh, client, ws)
}

fn input<'a>(s: &'a Setup, commit: Option<&'a str>, body: &'a str) -> Input<'a> {
    Input { number: 3, head_sha: &s.head, commit_sha: commit, job: "lint", body, login: None }
}

/// The patch in a review body's `diff` block.
fn patch_in(body: &str) -> String {
    let start = body.find("```diff\n").map(|i| i + "```diff\n".len());
    start.map(|i| body[i..body[i..].find("\n```\n").map_or(body.len(), |j| i + j + 1)].to_string()).unwrap_or_default()
}

/// The live reviews hone wrote (not superseded).
fn live(gh: &MockGithubReview) -> Vec<(standin::Review, Vec<standin::Comment>)> {
    gh.reviews(3).into_iter().filter(|(r, _)| r.user == LOGIN && !r.body.contains("\nSuperseded by ")).collect()
}

#[tokio::test]
async fn a_review_on_a_fork_pr_carries_suggestions_and_the_rest_as_a_patch() {
    let s = setup();
    let commit = hone_commit(&s, usual);
    let (gh, client, ws) = start(&s).await;
    let report = publish(&client, &ws, &input(&s, Some(&commit), "Verified: `check` passed.")).await.unwrap();
    assert_eq!(gh.refused(), vec![], "GitHub would take this review");
    let reviews = gh.reviews(3);
    assert_eq!(reviews.len(), 1);
    let (review, comments) = &reviews[0];
    assert_eq!((review.event.as_str(), review.commit_id.as_str()), ("COMMENT", s.head.as_str()));
    assert!(review.body.starts_with(&marker("lint")) && review.body.contains("Verified: `check` passed."));
    let multi = comments.iter().find(|c| c.path == "src/lib.rs").unwrap();
    assert_eq!((multi.start_line, multi.line), (Some(2), 3), "a multi-line suggestion");
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert_eq!((report.operation, report.suggestions), (ReviewOperation::Created, 2));
    assert_eq!(report.in_patch, vec!["added.md: new file", "src/lib.rs: lines outside the pull request's diff"]);
    assert_eq!(
        report.url.as_deref(),
        Some(format!("https://github.example/acme/app/pull/3#pullrequestreview-{}", review.id).as_str())
    );
    // The author's view: commit the suggestions, then apply the patch; that is hone's commit.
    git(&s.work, &["checkout", "-q", "-f", "--detach", &s.head]);
    for path in ["src/lib.rs", "new.txt"] {
        std::fs::write(s.work.join(path), gh.apply_suggestions(3, path)).unwrap();
    }
    assert_eq!(
        apply_patch_and_tree(&s.work, &patch_in(&review.body)),
        git(&s.work, &["rev-parse", &format!("{commit}^{{tree}}")])
    );
}

#[tokio::test]
async fn a_second_run_updates_or_replaces_and_never_duplicates() {
    let s = setup();
    let first = hone_commit(&s, usual);
    let (gh, client, ws) = start(&s).await;
    publish(&client, &ws, &input(&s, Some(&first), "first run")).await.unwrap();
    // The same change again (another commit, same content): the body is edited in place.
    let again = hone_commit(&s, usual);
    let r = publish(&client, &ws, &input(&s, Some(&again), "second run")).await.unwrap();
    assert_eq!((r.operation, r.superseded.len()), (ReviewOperation::Updated, 0));
    assert_eq!(gh.reviews(3).len(), 1);
    assert!(gh.reviews(3)[0].0.body.contains("second run"));
    assert_eq!(gh.count("POST", "/repos/acme/app/pulls/3/reviews"), 1);
    // Another change: a new review, the old one superseded (its comments gone).
    let other = hone_commit(&s, |w| std::fs::write(w.join("new.txt"), "one\nTWO\n").unwrap());
    let r = publish(&client, &ws, &input(&s, Some(&other), "third run")).await.unwrap();
    let reviews = gh.reviews(3);
    assert_eq!((r.operation, r.superseded.clone()), (ReviewOperation::Created, vec![reviews[0].0.id]));
    assert!(
        reviews[0].1.is_empty() && reviews[0].0.body.contains(&format!("Superseded by {}", r.url.clone().unwrap()))
    );
    assert_eq!(live(&gh).len(), 1);
    assert_eq!(gh.apply_suggestions(3, "new.txt"), "one\nTWO\n");
    // Verified that nothing needs to change: the live review says so and loses its suggestions.
    let r = publish(&client, &ws, &input(&s, None, "Nothing to change.")).await.unwrap();
    assert_eq!(r.operation, ReviewOperation::Updated);
    let l = live(&gh);
    assert_eq!((l.len(), l[0].1.len()), (1, 0));
    assert!(l[0].0.body.contains("Nothing to change."));
    assert_eq!(gh.reviews(3).len(), 2);
    assert_eq!(gh.refused(), vec![]);
}

#[tokio::test]
async fn a_review_marker_planted_by_another_user_is_not_hones() {
    let s = setup();
    let commit = hone_commit(&s, usual);
    let (gh, client, ws) = start(&s).await;
    // Mallory copies what hone would write, digest and all.
    publish(&client, &ws, &input(&s, Some(&commit), "x")).await.unwrap();
    let copied = gh.reviews(3)[0].0.body.clone();
    let planted = gh.seed_review(3, "mallory", &copied, &s.head);
    gh.with(|st| st.reviews.retain(|r| r.user != LOGIN));
    gh.with(|st| st.comments.clear());
    let r = publish(&client, &ws, &input(&s, Some(&commit), "x")).await.unwrap();
    assert_eq!((r.operation, r.superseded.len()), (ReviewOperation::Created, 0));
    let reviews = gh.reviews(3);
    assert_eq!(reviews.iter().find(|(r, _)| r.id == planted).unwrap().0.body, copied, "untouched");
    assert_eq!(live(&gh).len(), 1);
    assert_eq!(gh.refused(), vec![], "no attempt to edit Mallory's review");
    // With nothing to change and no review of hone's, nothing is posted at all.
    gh.with(|st| st.reviews.retain(|r| r.user != LOGIN));
    let r = publish(&client, &ws, &input(&s, None, "x")).await.unwrap();
    assert_eq!(r.operation, ReviewOperation::None);
    assert_eq!(gh.refused(), vec![]);
}

#[tokio::test]
async fn pages_are_counted_by_hone_and_hostile_file_names_stay_inert() {
    let s = setup();
    let commit = hone_commit(&s, usual);
    let (gh, client, ws) = start(&s).await;
    let mut extra: Vec<serde_json::Value> = (0..150)
        .map(|i| serde_json::json!({"filename": format!("../../etc/x{i}\n`"), "status": "added", "patch": "@@ -0,0 +1,999 @@"}))
        .collect();
    extra.push(serde_json::json!({"filename": 7, "patch": null}));
    gh.with(|st| st.extra_files = extra);
    let r = publish(&client, &ws, &input(&s, Some(&commit), "x")).await.unwrap();
    assert_eq!(gh.with(|st| st.followed_link.clone()), Vec::<String>::new(), "the Link header is not followed");
    let pages: Vec<String> = gh.seen().into_iter().filter(|q| q.path.ends_with("/files")).map(|q| q.query).collect();
    assert_eq!(pages, vec!["per_page=100&page=1", "per_page=100&page=2"]);
    assert_eq!(r.suggestions, 2);
    assert!(gh.reviews(3)[0].1.iter().all(|c| c.path == "src/lib.rs" || c.path == "new.txt"));
    assert_eq!(gh.refused(), vec![]);
}

#[tokio::test]
async fn a_body_over_githubs_limit_is_cut_and_a_moved_head_gets_no_review() {
    let s = setup();
    let commit = hone_commit(&s, |w| {
        usual(w);
        std::fs::write(w.join("big.txt"), "a line of a large new file\n".repeat(5000)).unwrap();
    });
    let (gh, client, ws) = start(&s).await;
    publish(&client, &ws, &input(&s, Some(&commit), "x")).await.unwrap();
    let body = gh.reviews(3)[0].0.body.clone();
    assert!(body.chars().count() <= body::GITHUB_MAX_BODY && body.contains("`change.patch` artifact"));
    // The PR moved on meanwhile: hone posts nothing (GitHub would place the suggestions by another
    // commit's diff, or refuse them), and says why.
    git(&s.work, &["push", "-q", s.origin.to_str().unwrap(), &format!("{commit}:refs/pull/3/head"), "--force"]);
    gh.open_pr(3, "feature", &commit, "fork/app");
    gh.with(|st| st.reviews.clear());
    let e = publish(&client, &ws, &input(&s, Some(&commit), "y")).await.unwrap_err();
    assert_eq!(e.code, Code::Forge);
    assert!(e.message.contains("moved on while hone worked"), "{}", e.message);
    assert_eq!(gh.count("POST", "/repos/acme/app/pulls/3/reviews"), 1, "nothing posted for the old head");
}

#[test]
fn only_a_review_by_hones_login_that_starts_with_the_marker_is_hones() {
    let m = marker("lint");
    let r = |id: u64, login: &str, body: String| {
        json!({"id": id, "user": {"login": login}, "body": body, "commit_id": "c",
               "html_url": format!("https://github.com/acme/app/pull/3#pullrequestreview-{id}")})
    };
    let own = |v: &Value| own_review(v, "hone-bot", &m).map(|o| o.id);
    assert_eq!(own(&r(1, "mallory", format!("{m}\nplanted"))), None);
    assert_eq!(own(&r(2, "hone-bot", format!("quote: {m}"))), None);
    assert_eq!(own(&r(3, "hone-bot", format!("{m}\nmine"))), Some(3));
    assert_eq!(own(&r(4, "hone-bot", marker("lint2"))), None, "another job's marker");
    assert_eq!(own(&json!({"id": 5, "user": null, "body": m})), None);
    let o = own_review(&r(6, "hone-bot", format!("{m}\nSuperseded by x.")), "hone-bot", &m).unwrap();
    assert!(o.superseded(&m));
}

#[test]
fn only_a_plain_https_review_url_is_written_into_a_body() {
    let url = |u: &str| review_url(&json!({"html_url": u}));
    assert!(url("https://github.com/acme/app/pull/3#pullrequestreview-7").is_some());
    for bad in ["http://x/y", "https://x/y) [click](https://evil", "https://x/<img>", "javascript:alert(1)"] {
        assert_eq!(url(bad), None, "{bad}");
    }
}
