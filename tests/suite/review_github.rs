//! Review mode on GitHub: the review stand-in proven able to refuse what GitHub refuses (a
//! comment outside the diff, a path not in the PR, a wrong commit, a body too long, another
//! user's review or comment), and its PR diff as GitHub gives it.

use crate::common::mock_github_review::{LOGIN, MockGithubReview, REPO, TOKEN, diff};
use crate::common::repo::TestRepo;
use serde_json::{Value, json};

const BASE: &str = "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\nfn e() {}\nfn f() {}\nfn g() {}\nfn h() {}\nfn i() {}\nfn j() {}\nfn k() {}\nfn l() {}\n";

/// An origin whose `main` has `base`, and a fork's PR #3 (`refs/pull/3/head`, not a branch)
/// changing it to `pr`; the head's sha.
pub(crate) fn fork_pr(base: &[(&str, &str)], pr: &[(&str, &str)]) -> (TestRepo, String) {
    let repo = TestRepo::new(base);
    repo.git(&["checkout", "-q", "-b", "fork-work"]);
    for (name, body) in pr {
        let p = repo.path.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "fork's work"]);
    repo.git(&["push", "-q", "origin", "HEAD:refs/pull/3/head"]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["branch", "-q", "-D", "fork-work"]);
    (repo, head)
}

/// A request to the stand-in with its token (or `token`): status and answer.
async fn send(gh: &MockGithubReview, method: &str, path: &str, body: Option<Value>, token: &str) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut rb = client
        .request(method.parse().unwrap(), format!("{}{path}", gh.url))
        .header("authorization", format!("Bearer {token}"));
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let resp = rb.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn call(gh: &MockGithubReview, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    send(gh, method, path, body, TOKEN).await
}

fn comment(path: &str, start: Option<u64>, line: u64, lines: &str) -> Value {
    let mut c = json!({"path": path, "line": line, "side": "RIGHT", "body": format!("```suggestion\n{lines}```")});
    if let Some(s) = start {
        c["start_line"] = json!(s);
        c["start_side"] = json!("RIGHT");
    }
    c
}

/// PR #3 changes line 2 and line 11 of `src/lib.rs` (two hunks: RIGHT lines 1–5 and 8–12 …) and
/// adds `new.txt`.
async fn standin() -> (TestRepo, String, MockGithubReview) {
    let pr = BASE.replace("fn b() {}", "fn b() { 1 }").replace("fn k() {}", "fn k() { 2 }");
    let (repo, head) = fork_pr(&[("src/lib.rs", BASE)], &[("src/lib.rs", &pr), ("new.txt", "hi\n")]);
    let gh = MockGithubReview::start(&repo.origin).await;
    gh.open_pr(3, "feature", &head, "fork/app");
    (repo, head, gh)
}

#[tokio::test]
async fn the_review_standin_gives_the_pr_and_its_diff_as_github_does() {
    let (_repo, head, gh) = standin().await;
    let (status, pr) = call(&gh, "GET", &format!("/repos/{REPO}/pulls/3"), None).await;
    assert_eq!(
        (status, pr["head"]["sha"].as_str(), pr["head"]["repo"]["full_name"].as_str()),
        (200, Some(head.as_str()), Some("fork/app"))
    );
    let (_, files) = call(&gh, "GET", &format!("/repos/{REPO}/pulls/3/files?per_page=100&page=1"), None).await;
    let files = files.as_array().unwrap();
    assert_eq!(files.len(), 2);
    let lib = files.iter().find(|f| f["filename"] == "src/lib.rs").unwrap();
    let patch = lib["patch"].as_str().unwrap();
    assert!(patch.starts_with("@@ -1,5 +1,5 @@") && !patch.contains("+++") && !patch.ends_with('\n'), "{patch}");
    assert_eq!(diff::right_ranges(patch), vec![(1, 5), (8, 12)]);
    assert_eq!(files.iter().find(|f| f["filename"] == "new.txt").unwrap()["status"], "added");
    let (_, page2) = call(&gh, "GET", &format!("/repos/{REPO}/pulls/3/files?per_page=1&page=2"), None).await;
    assert_eq!(page2.as_array().unwrap().len(), 1, "paginated");
    let (status, _) = send(&gh, "GET", &format!("/repos/{REPO}/pulls/3"), None, "wrong").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn the_review_standin_refuses_what_github_refuses() {
    let (_repo, head, gh) = standin().await;
    let post = |comments: Vec<Value>, commit: &str, body: String| json!({"commit_id": commit, "event": "COMMENT", "body": body, "comments": comments});
    let at = format!("/repos/{REPO}/pulls/3/reviews");
    let line_refused =
        json!({"message": "Unprocessable Entity", "errors": ["Line could not be resolved"], "status": "422"});
    for (why, c) in [
        ("a line outside the diff", comment("src/lib.rs", None, 7, "x\n")),
        ("a range across two hunks", comment("src/lib.rs", Some(4), 9, "x\n")),
        ("a LEFT side", json!({"path": "src/lib.rs", "line": 2, "side": "LEFT", "body": "x"})),
    ] {
        let (status, answer) = call(&gh, "POST", &at, Some(post(vec![c], &head, "b".into()))).await;
        assert_eq!((status, &answer), (422, &line_refused), "{why}");
    }
    let (status, answer) =
        call(&gh, "POST", &at, Some(post(vec![comment("other.rs", None, 1, "x\n")], &head, "b".into()))).await;
    assert_eq!((status, answer["errors"][0].as_str()), (422, Some("Path could not be resolved")));
    let (status, _) = call(&gh, "POST", &at, Some(post(vec![], &"0".repeat(40), "b".into()))).await;
    assert_eq!(status, 422, "a commit that is not the head");
    let (status, _) = call(&gh, "POST", &at, Some(post(vec![], &head, "x".repeat(65_537)))).await;
    assert_eq!(status, 422, "a body too long");
    assert!(gh.reviews(3).is_empty(), "nothing of a refused review is kept");
    assert_eq!(gh.refused().len(), 6);

    // A review inside the diff is taken, and its suggestions apply.
    let good =
        vec![comment("src/lib.rs", Some(1), 2, "fn a() {}\nfn b() { 1 + 1 }\n"), comment("src/lib.rs", None, 11, "")];
    let (status, review) = call(&gh, "POST", &at, Some(post(good, &head, "mine".into()))).await;
    assert_eq!((status, review["user"]["login"].as_str()), (200, Some(LOGIN)));
    let want = BASE.replace("fn b() {}", "fn b() { 1 + 1 }").replace("fn k() {}\n", "");
    assert_eq!(gh.apply_suggestions(3, "src/lib.rs"), want);

    // Another user's review and comment are not hone's to change.
    let theirs = gh.seed_review(3, "mallory", "planted", &head);
    let their_comment = gh.seed_comment(theirs, "mallory", "src/lib.rs", 2, "hi");
    let (status, _) = call(&gh, "PUT", &format!("{at}/{theirs}"), Some(json!({"body": "edited"}))).await;
    assert_eq!(status, 403);
    let (status, _) = call(&gh, "DELETE", &format!("/repos/{REPO}/pulls/comments/{their_comment}"), None).await;
    assert_eq!(status, 403);
    let mine = review["id"].as_u64().unwrap();
    let (status, _) = call(&gh, "PUT", &format!("{at}/{mine}"), Some(json!({"body": "x".repeat(65_537)}))).await;
    assert_eq!(status, 422);
    let (status, _) = call(&gh, "PUT", &format!("{at}/{mine}"), Some(json!({"body": "edited"}))).await;
    assert_eq!(status, 200);
    let reviews = gh.reviews(3);
    assert_eq!((reviews[0].0.body.as_str(), reviews[1].0.body.as_str()), ("edited", "planted"));
}
