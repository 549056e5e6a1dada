//! Review mode on GitLab. The stand-in first (driven with reqwest, not hone): a merge request's
//! versions and diff computed from the repositories, draft notes published together, a note on
//! a line outside the diff dropped with GitLab's validation message, suggestions applied as
//! GitLab applies them.

use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
use crate::common::repo::{TestRepo, git};
use serde_json::{Value, json};

const APP: &str = "/api/v4/projects/acme%2Fapp";
const BOT: (&str, &str) = ("private-token", "glpat-bot");

fn lib(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

const BASE: [&str; 12] = ["l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "l9", "l10", "l11", "l12"];

pub struct ForkMr {
    pub gl: MockGitLab,
    pub repo: TestRepo,
    pub iid: u64,
    _dir: tempfile::TempDir,
}

/// `acme/app` and its fork `someone/app`, whose branch `feature` changes `src/lib.rs` (line 3
/// edited, a line added after line 6), renames `old.txt` and adds `docs/new.md`; merge request
/// !1 from the fork, and the `api` token `glpat-bot` of a project bot of `acme/app`.
pub async fn fork_mr() -> ForkMr {
    let repo = TestRepo::new(&[("src/lib.rs", &lib(&BASE)), ("old.txt", "a\nb\nc\n")]);
    let dir = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(dir.path()).await;
    gl.add_project("acme/app", &repo.path);
    gl.fork("acme/app", "someone/app");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let mut changed = BASE.to_vec();
    changed[2] = "L3";
    changed.insert(6, "new");
    std::fs::write(repo.path.join("src/lib.rs"), lib(&changed)).unwrap();
    repo.git(&["mv", "old.txt", "moved.txt"]);
    std::fs::create_dir_all(repo.path.join("docs")).unwrap();
    std::fs::write(repo.path.join("docs/new.md"), "# New\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "feature"]);
    repo.git(&["push", "-q", gl.bare("someone/app").to_str().unwrap(), "feature"]);
    let iid = gl.add_mr("acme/app", "feature", "main", "Feature", "someone", Some("someone/app"));
    gl.add_token("glpat-bot", Token { kind: Kind::Project, scopes: &["api"], user: "", project: Some("acme/app") });
    ForkMr { gl, repo, iid, _dir: dir }
}

pub async fn call(gl: &MockGitLab, method: &str, path: &str, auth: (&str, &str), body: Option<Value>) -> (u16, Value) {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(test_ca()).unwrap()).unwrap();
    let client = reqwest::Client::builder().tls_certs_only([ca]).build().unwrap();
    let mut req = client.request(method.parse().unwrap(), format!("{}{path}", gl.base)).header(auth.0, auth.1);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = tokio::time::timeout(std::time::Duration::from_secs(30), req.send()).await.unwrap().unwrap();
    let status = resp.status().as_u16();
    (status, serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null))
}

/// The position of a note on `path` at `new_line` (and `old_line`) of the latest version.
async fn position(f: &ForkMr, path: &str, new_line: u64, old_line: Option<u64>) -> Value {
    let (_, versions) = call(&f.gl, "GET", &format!("{APP}/merge_requests/{}/versions", f.iid), BOT, None).await;
    let v = &versions[0];
    let mut p = json!({"position_type": "text", "base_sha": v["base_commit_sha"], "start_sha": v["start_commit_sha"],
                       "head_sha": v["head_commit_sha"], "old_path": path, "new_path": path, "new_line": new_line});
    if let Some(o) = old_line {
        p["old_line"] = o.into();
    }
    p
}

async fn draft(f: &ForkMr, note: &str, position: Option<Value>) -> (u16, Value) {
    let mut body = json!({"note": note});
    if let Some(p) = position {
        body["position"] = p;
    }
    call(&f.gl, "POST", &format!("{APP}/merge_requests/{}/draft_notes", f.iid), BOT, Some(body)).await
}

async fn bulk_publish(f: &ForkMr) -> u16 {
    call(&f.gl, "POST", &format!("{APP}/merge_requests/{}/draft_notes/bulk_publish", f.iid), BOT, None).await.0
}

#[tokio::test]
async fn versions_and_diffs_are_the_fork_branchs_and_the_target_keeps_its_head() {
    let f = fork_mr().await;
    let (status, versions) = call(&f.gl, "GET", &format!("{APP}/merge_requests/1/versions"), BOT, None).await;
    assert_eq!(status, 200, "{versions}");
    let head = git(&f.repo.path, &["rev-parse", "feature"]);
    let main = git(&f.repo.path, &["rev-parse", "main"]);
    assert_eq!(versions[0]["head_commit_sha"], head.as_str());
    assert_eq!(
        (versions[0]["base_commit_sha"].as_str(), versions[0]["start_commit_sha"].as_str()),
        (Some(&*main), Some(&*main))
    );
    let target = git(&f.gl.bare("acme/app"), &["rev-parse", "refs/merge-requests/1/head"]);
    assert_eq!(target, head, "the target project holds the fork's head");
    f.gl.too_large("moved.txt");
    let (_, diffs) = call(&f.gl, "GET", &format!("{APP}/merge_requests/1/diffs?per_page=2&page=1"), BOT, None).await;
    let (_, more) = call(&f.gl, "GET", &format!("{APP}/merge_requests/1/diffs?per_page=2&page=2"), BOT, None).await;
    let all: Vec<&Value> = diffs.as_array().unwrap().iter().chain(more.as_array().unwrap()).collect();
    let by = |p: &str| all.iter().find(|d| d["new_path"] == p).copied().unwrap_or_else(|| panic!("{p}: {all:?}"));
    assert_eq!(by("docs/new.md")["new_file"], true);
    assert_eq!(by("docs/new.md")["diff"], "@@ -0,0 +1 @@\n+# New\n");
    assert_eq!(
        (by("moved.txt")["renamed_file"].as_bool(), by("moved.txt")["old_path"].as_str()),
        (Some(true), Some("old.txt"))
    );
    assert_eq!((by("moved.txt")["too_large"].as_bool(), by("moved.txt")["diff"].as_str()), (Some(true), Some("")));
    let lib_diff = by("src/lib.rs")["diff"].as_str().unwrap();
    assert!(
        lib_diff.starts_with("@@ -1,9 +1,10 @@") && lib_diff.contains("-l3\n+L3\n") && lib_diff.contains("+new\n"),
        "{lib_diff}"
    );
    // A push to the fork makes a new version, newest first.
    f.repo.git(&["commit", "-q", "--allow-empty", "-m", "more"]);
    f.repo.git(&["push", "-q", f.gl.bare("someone/app").to_str().unwrap(), "feature"]);
    let (_, versions) = call(&f.gl, "GET", &format!("{APP}/merge_requests/1/versions"), BOT, None).await;
    assert_eq!(versions.as_array().unwrap().len(), 2);
    assert_eq!(versions[0]["head_commit_sha"], git(&f.repo.path, &["rev-parse", "feature"]).as_str());
    assert!(f.gl.violations().is_empty(), "{:#?}", f.gl.violations());
}

/// GitLab takes any position on a draft note and checks it when publishing: a line outside the
/// diff, or an unchanged line named by its new number only, is no line of the diff and the note
/// is dropped (the stand-in records GitLab's validation message as a violation).
#[tokio::test]
async fn a_draft_note_on_a_line_outside_the_diff_is_dropped_when_published() {
    let f = fork_mr().await;
    let added = position(&f, "src/lib.rs", 7, None).await;
    let unchanged = position(&f, "src/lib.rs", 8, Some(7)).await;
    let new_number_only = position(&f, "src/lib.rs", 8, None).await;
    let outside = position(&f, "src/lib.rs", 12, Some(11)).await;
    for (note, p) in [("added", added), ("unchanged", unchanged), ("half", new_number_only), ("outside", outside)] {
        let (status, d) = draft(&f, note, Some(p)).await;
        assert_eq!(status, 201, "GitLab keeps any draft: {d}");
    }
    assert_eq!(draft(&f, "summary", None).await.0, 201);
    assert_eq!(bulk_publish(&f).await, 204);
    let published: Vec<String> =
        f.gl.discussions("acme/app", 1).iter().map(|d| d["notes"][0]["body"].as_str().unwrap().to_string()).collect();
    assert_eq!(published, ["added", "unchanged", "summary"]);
    let v = f.gl.violations();
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v.iter().all(|m| m.contains("must be a valid line code")), "{v:#?}");
    assert!(f.gl.drafts("acme/app", 1).is_empty(), "every draft is gone after publishing");
    let summary = &f.gl.discussions("acme/app", 1)[2]["notes"][0];
    assert_eq!((summary["type"].as_str(), summary["resolvable"].as_bool()), (Some("DiscussionNote"), Some(true)));
}

#[tokio::test]
async fn drafts_are_their_authors_and_writing_them_needs_the_api_scope() {
    let f = fork_mr().await;
    f.gl.add_token("glpat-read", Token { kind: Kind::Personal, scopes: &["read_api"], user: "reader", project: None });
    let read = ("private-token", "glpat-read");
    let (status, body) =
        call(&f.gl, "POST", &format!("{APP}/merge_requests/1/draft_notes"), read, Some(json!({"note": "x"}))).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("insufficient_scope")));
    let theirs = f.gl.add_draft("acme/app", 1, "someone", "their pending note");
    let (_, mine) = draft(&f, "mine", None).await;
    let (_, listed) = call(&f.gl, "GET", &format!("{APP}/merge_requests/1/draft_notes"), BOT, None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "only the caller's drafts: {listed}");
    let gone = call(&f.gl, "DELETE", &format!("{APP}/merge_requests/1/draft_notes/{theirs}"), BOT, None).await.0;
    assert_eq!(gone, 404, "another's draft is not found");
    assert_eq!(bulk_publish(&f).await, 204);
    assert_eq!(f.gl.drafts("acme/app", 1).len(), 1, "another user's draft stays pending");
    let note = f.gl.discussions("acme/app", 1)[0]["notes"][0].clone();
    assert_eq!(note["body"], "mine");
    // A note is deleted by its author only; a position must be complete.
    let other = f.gl.add_note("acme/app", 1, "someone", "not yours");
    let refused = call(&f.gl, "DELETE", &format!("{APP}/merge_requests/1/notes/{other}"), BOT, None).await.0;
    assert_eq!(refused, 403);
    let deleted = call(&f.gl, "DELETE", &format!("{APP}/merge_requests/1/notes/{}", note["id"]), BOT, None).await.0;
    assert_eq!(deleted, 204);
    let (status, body) = draft(&f, "x", Some(json!({"position_type": "text", "new_path": "a", "new_line": 1}))).await;
    assert_eq!(status, 400, "{body}");
    assert!(f.gl.violations().iter().any(|v| v.contains("position")), "{:#?}", f.gl.violations());
    let _ = mine;
}

#[tokio::test]
async fn live_suggestions_apply_as_gitlab_applies_them_and_resolved_ones_do_not() {
    let f = fork_mr().await;
    // Lines 2..=4 (l2, L3, l4) become one line; line 7 (new) is deleted.
    let body = "<!-- m -->\n````suggestion:-2+0\nl2-4 ```\n````\n";
    assert_eq!(draft(&f, body, Some(position(&f, "src/lib.rs", 4, Some(4)).await)).await.0, 201);
    assert_eq!(draft(&f, "```suggestion:-0+0\n```", Some(position(&f, "src/lib.rs", 7, None).await)).await.0, 201);
    assert_eq!(
        draft(&f, "```suggestion:-0+0\nA\n```", Some(position(&f, "src/lib.rs", 1, Some(1)).await)).await.0,
        201
    );
    assert_eq!(bulk_publish(&f).await, 204);
    let discussions = f.gl.discussions("acme/app", 1);
    let third = discussions[2]["id"].as_str().unwrap().to_string();
    let (status, _) = call(
        &f.gl,
        "PUT",
        &format!("{APP}/merge_requests/1/discussions/{third}"),
        BOT,
        Some(json!({"resolved": true})),
    )
    .await;
    assert_eq!(status, 200);
    let applied = f.gl.apply_suggestions("acme/app", 1, "src/lib.rs").unwrap();
    assert_eq!(applied, lib(&["l1", "l2-4 ```", "l5", "l6", "l7", "l8", "l9", "l10", "l11", "l12"]));
    assert!(f.gl.violations().is_empty(), "{:#?}", f.gl.violations());
}

// ---- End to end, through `hone run job.yaml --pr 1 --review` ----

/// hone reviews the fork's merge request !1: a two-line fix inside its diff and a new file.
async fn run_review(f: &ForkMr) -> crate::common::Run {
    use crate::common::mock_model::{MockModel, call, text};
    let model = MockModel::start().await;
    let mut fixed = BASE.to_vec();
    (fixed[2], fixed[3]) = ("L3 fixed", "l4 fixed");
    fixed.insert(6, "new");
    model
        .turn(call("write_file", json!({"path": "src/lib.rs", "content": lib(&fixed)})), false)
        .turn(call("write_file", json!({"path": "added.md", "content": "# Added\n"})), false)
        .turn(text("Fixed line 3 and 4."), false);
    let spec =
        crate::common::job_yaml("glreview", &model.base_url, false).replace("run: \"sh check.sh\"", "run: \"true\"");
    let yaml = format!("{spec}forge: {{ gitlab_url: \"{}\" }}\n", f.gl.base);
    let ca = test_ca().display().to_string();
    let env = [("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str()), ("GITLAB_TOKEN", "glpat-bot")];
    crate::common::run_job_with(&f.repo, &yaml, &["--pr", "1", "--review"], &env).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_of_a_fork_merge_request_is_one_set_of_notes_and_a_second_run_does_not_duplicate() {
    let f = fork_mr().await;
    f.repo.git(&["checkout", "-q", "main"]);
    f.repo.git(&["config", "remote.origin.url", &f.gl.git_url("acme/app")]);
    let fork_head = git(&f.gl.bare("someone/app"), &["rev-parse", "refs/heads/feature"]);
    let run = run_review(&f).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let review = &run.report()["review"];
    assert_eq!((review["operation"].as_str(), review["suggestions"].as_u64()), (Some("created"), Some(1)), "{review}");
    assert!(review["in_patch"].to_string().contains("added.md"), "{review}");
    let bodies = |f: &ForkMr| -> Vec<String> {
        f.gl.discussions("acme/app", 1)
            .iter()
            .map(|d| d["notes"][0]["body"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let first = bodies(&f);
    assert_eq!(first.len(), 2, "a summary and one suggestion: {first:#?}");
    assert!(first.iter().any(|b| b.contains("```suggestion:-1+0")), "a two-line suggestion: {first:#?}");
    let mut fixed = BASE.to_vec();
    (fixed[2], fixed[3]) = ("L3 fixed", "l4 fixed");
    fixed.insert(6, "new");
    assert_eq!(f.gl.apply_suggestions("acme/app", 1, "src/lib.rs").as_deref(), Some(lib(&fixed).as_str()));
    // Nothing pushed: not to the fork, and on the target only what the harness pushed (main).
    assert_eq!(git(&f.gl.bare("someone/app"), &["rev-parse", "refs/heads/feature"]), fork_head);
    let target_heads = git(&f.gl.bare("acme/app"), &["for-each-ref", "--format=%(refname)", "refs/heads"]);
    assert_eq!(target_heads, "refs/heads/main", "no branch pushed to the target");
    assert!(f.gl.violations().is_empty(), "{:#?}", f.gl.violations());
    run.assert_no_secret("glpat-bot");

    let run = run_review(&f).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.report()["review"]["operation"], "updated");
    assert_eq!(bodies(&f).len(), 2, "still one review: {:#?}", bodies(&f));
    assert!(f.gl.violations().is_empty(), "{:#?}", f.gl.violations());
}
