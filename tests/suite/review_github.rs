//! Review mode on GitHub: the review stand-in proven able to refuse what GitHub refuses (a
//! comment outside the diff, a path not in the PR, a wrong commit, a body too long, another
//! user's review or comment), and its PR diff as GitHub gives it.

use crate::common::mock_github_review::{LOGIN, MockGithubReview, REPO, TOKEN, diff};
use crate::common::mock_model::{self, MockModel, text};
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

// ---- End to end, through `hone run job.yaml --pr 3 --review` ----

/// `src/lib.rs` at the fork PR's head: lines 2 and 11 changed.
fn pr_lib() -> String {
    BASE.replace("fn b() {}", "fn b() { 1 }").replace("fn k() {}", "fn k() { 2 }")
}

/// hone's verified change: `src/lib.rs` lines 2–3 (inside the PR's diff: one multi-line
/// suggestion) and line 7 (outside it), `status.txt` (not in the PR at all) and a new file.
fn hones_lib() -> String {
    pr_lib()
        .replace("fn b() { 1 }\nfn c() {}\n", "fn b() { 1 + 1 }\nfn c() { 3 }\n")
        .replace("fn g() {}", "fn g() { 7 }")
}

/// A repository whose check fails, and a fork's PR #3 on it; the stand-in serving it.
async fn fork_pr_repo() -> (TestRepo, String, MockGithubReview) {
    let base = [("status.txt", "broken\n"), ("check.sh", crate::common::CHECK_SH), ("src/lib.rs", BASE)];
    let (repo, head) = fork_pr(&base, &[("src/lib.rs", &pr_lib()), ("new.txt", "one\ntwo\n")]);
    let gh = MockGithubReview::start(&repo.origin).await;
    gh.open_pr(3, "feature", &head, "fork/app");
    (repo, head, gh)
}

async fn run_review(repo: &TestRepo, gh: &MockGithubReview) -> crate::common::Run {
    let model = MockModel::start().await;
    model
        .turn(mock_model::call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(mock_model::call("write_file", json!({"path": "src/lib.rs", "content": hones_lib()})), false)
        .turn(mock_model::call("write_file", json!({"path": "added.md", "content": "# Added\n"})), false)
        .turn(text("Fixed the check."), false);
    let yaml = crate::common::job_yaml("review", &model.base_url, false);
    let env = gh.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    crate::common::run_job_with(repo, &yaml, &["--pr", "3", "--review"], &env).await
}

fn refs(origin: &std::path::Path) -> String {
    crate::common::repo::git(origin, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// The patch in a review body's `diff` block.
fn patch_in(body: &str) -> String {
    let Some(i) = body.find("```diff\n").map(|i| i + "```diff\n".len()) else { return String::new() };
    body[i..body[i..].find("\n```\n").map_or(body.len(), |j| i + j + 1)].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_on_a_fork_pr_gives_suggestions_and_a_patch_and_a_second_run_does_not_duplicate() {
    let (repo, head, gh) = fork_pr_repo().await;
    // Only the harness pushes (the committed spec, to `main`); hone pushes nothing.
    let pushed_by_harness =
        |repo: &TestRepo| format!("refs/heads/main {}\nrefs/pull/3/head {head}", repo.git(&["rev-parse", "main"]));
    let run = run_review(&repo, &gh).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(gh.refused(), vec![], "GitHub would take every request");
    assert_eq!(refs(&repo.origin), pushed_by_harness(&repo), "nothing pushed");
    let report = run.report();
    let review = &report["review"];
    assert_eq!((review["operation"].as_str(), review["suggestions"].as_u64()), (Some("created"), Some(1)), "{review}");
    assert_eq!(review["commit"].as_str(), Some(head.as_str()));
    let in_patch: Vec<&str> = review["in_patch"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(in_patch.contains(&"added.md: new file"), "{in_patch:?}");
    assert!(in_patch.iter().any(|p| p.starts_with("src/lib.rs: lines outside")), "{in_patch:?}");
    assert!(in_patch.iter().any(|p| p.starts_with("status.txt: ")), "{in_patch:?}");
    let reviews = gh.reviews(3);
    assert_eq!(reviews.len(), 1);
    let (posted, comments) = &reviews[0];
    assert_eq!((posted.event.as_str(), posted.commit_id.as_str()), ("COMMENT", head.as_str()));
    assert_eq!(comments.len(), 1);
    assert_eq!((comments[0].start_line, comments[0].line), (Some(2), 3), "a multi-line suggestion");
    assert_eq!(
        review["url"].as_str().unwrap(),
        format!("https://github.example/acme/app/pull/3#pullrequestreview-{}", posted.id)
    );
    // The author commits the suggestion and applies the patch: hone's verified change.
    let author = tempfile::tempdir().unwrap();
    let c = author.path().join("c");
    crate::common::repo::git(author.path(), &["clone", "-q", repo.origin.to_str().unwrap(), c.to_str().unwrap()]);
    crate::common::repo::git(&c, &["fetch", "-q", "origin", "refs/pull/3/head"]);
    crate::common::repo::git(&c, &["checkout", "-q", "FETCH_HEAD"]);
    std::fs::write(c.join("src/lib.rs"), gh.apply_suggestions(3, "src/lib.rs")).unwrap();
    std::fs::write(author.path().join("p.diff"), patch_in(&posted.body)).unwrap();
    crate::common::repo::git(&c, &["apply", author.path().join("p.diff").to_str().unwrap()]);
    for (path, want) in
        [("src/lib.rs", hones_lib()), ("status.txt", "fixed\n".into()), ("added.md", "# Added\n".into())]
    {
        assert_eq!(std::fs::read_to_string(c.join(path)).unwrap(), want, "{path}");
    }
    run.assert_no_secret(crate::common::mock_github_review::TOKEN);

    // The same change again: hone's review is edited, not posted twice.
    let run = run_review(&repo, &gh).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["review"]["operation"], "updated");
    assert_eq!(gh.reviews(3).len(), 1);
    assert_eq!(gh.count("POST", "/repos/acme/app/pulls/3/reviews"), 1);
    assert_eq!(refs(&repo.origin), pushed_by_harness(&repo), "nothing pushed");
    assert_eq!(gh.refused(), vec![]);
}
