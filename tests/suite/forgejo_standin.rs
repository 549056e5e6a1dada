//! The Forgejo stand-in (`common::mock_forgejo`) checks what it is sent against Forgejo's API
//! description: driven here with plain reqwest and git, not with hone, so that hone's Forgejo
//! tests rest on a stand-in that is itself proven to refuse what Forgejo's API does not declare.

use crate::common::git_http::test_ca;
use crate::common::mock_forgejo::MockForgejo;
use crate::common::repo::TestRepo;
use serde_json::{Value, json};

const TOKEN: &str = "fj_standin_token_0123";

struct Forge {
    fj: MockForgejo,
    _repo: TestRepo,
    _dir: tempfile::TempDir,
}

/// An instance with `acme/app` (one commit on `main`, a branch `feature`) and `TOKEN` for the
/// writer `hone-bot`.
async fn forge() -> Forge {
    let repo = TestRepo::new(&[("README.md", "hello\n")]);
    crate::common::repo::git(&repo.path, &["branch", "feature"]);
    let dir = tempfile::tempdir().unwrap();
    let fj = MockForgejo::start(dir.path()).await;
    fj.add_repo("acme/app", &repo.path);
    fj.add_token(TOKEN, "hone-bot");
    fj.add_writer("acme/app", "hone-bot");
    Forge { fj, _repo: repo, _dir: dir }
}

/// One API request with `Authorization: <auth>`; status and JSON body.
async fn call(f: &Forge, method: &str, path: &str, auth: &str, body: Option<Value>) -> (u16, Value) {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(test_ca()).unwrap()).unwrap();
    let client = reqwest::Client::builder().tls_certs_only([ca]).build().unwrap();
    let mut req =
        client.request(method.parse().unwrap(), format!("{}{path}", f.fj.api())).header("authorization", auth);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = tokio::time::timeout(std::time::Duration::from_secs(30), req.send()).await.unwrap().unwrap();
    let status = resp.status().as_u16();
    (status, serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null))
}

fn token() -> String {
    format!("token {TOKEN}")
}

#[tokio::test]
async fn a_body_property_the_schema_does_not_declare_is_refused_and_a_declared_one_accepted() {
    let f = forge().await;
    let declared = json!({"head": "feature", "base": "main", "title": "Fix", "body": "b"});
    let mut undeclared = declared.clone();
    undeclared["draft"] = json!(true); // GitHub's field: Forgejo's CreatePullRequestOption has none
    let (status, body) = call(&f, "POST", "/repos/acme/app/pulls", &token(), Some(undeclared)).await;
    assert_eq!(status, 400, "{body}");
    let v = f.fj.violations();
    assert!(v.len() == 1 && v[0].contains("`draft` is not declared"), "{v:#?}");
    assert!(f.fj.pulls("acme/app").is_empty(), "nothing was created");
    let (status, body) = call(&f, "POST", "/repos/acme/app/pulls", &token(), Some(declared.clone())).await;
    assert_eq!((status, body["number"].as_u64()), (201, Some(1)), "{body}");
    assert_eq!(f.fj.violations().len(), 1, "the declared body added no violation");
    // One open PR per head and base, as Forgejo keeps them.
    let (status, _) = call(&f, "POST", "/repos/acme/app/pulls", &token(), Some(declared)).await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn operations_query_parameters_types_and_required_properties_are_checked() {
    let f = forge().await;
    let cases: [(&str, &str, Option<Value>, &str); 6] = [
        ("GET", "/repos/acme/app/pulls?state=open&per_page=100", None, "`per_page` is not declared"),
        ("GET", "/repos/acme/app/pulls?limit=many", None, "not an integer"),
        ("PUT", "/repos/acme/app/pulls/1/merge", Some(json!({"Do": "merge"})), "no such operation"),
        ("GET", "/projects/acme%2Fapp/merge_requests", None, "no such operation"),
        ("POST", "/repos/acme/app/issues/1/comments", Some(json!({"text": "x"})), "`body` is missing"),
        ("POST", "/repos/acme/app/pulls/1/merge", Some(json!({"Do": "force"})), "`Do` is not a"),
    ];
    for (i, (method, path, body, why)) in cases.into_iter().enumerate() {
        let (status, answer) = call(&f, method, path, &token(), body).await;
        assert_eq!(status, 400, "{method} {path}: {answer}");
        let v = f.fj.violations();
        assert!(v.len() == i + 1 && v[i].contains(why), "{method} {path}: {v:#?}");
    }
    // What Forgejo declares passes: paths with encoded segments, integer parameters.
    for path in [
        "/user",
        "/repos/acme/app/pulls?state=open&limit=50&page=1",
        "/repos/acme/app/branches/feature",
        "/orgs/acme/repos?limit=50&page=1",
    ] {
        let (status, answer) = call(&f, "GET", path, &token(), None).await;
        assert_eq!(status, 200, "{path}: {answer}");
    }
    assert_eq!(f.fj.violations().len(), 6);
}

#[tokio::test]
async fn only_a_known_token_in_forgejos_header_is_accepted() {
    let f = forge().await;
    let (status, me) = call(&f, "GET", "/user", &token(), None).await;
    assert_eq!((status, me["login"].as_str()), (200, Some("hone-bot")));
    assert_eq!(call(&f, "GET", "/user", "token fj_other", None).await.0, 401);
    assert!(f.fj.violations().is_empty());
    assert_eq!(call(&f, "GET", "/user", &format!("Bearer {TOKEN}"), None).await.0, 401);
    assert!(f.fj.violations()[0].contains("not `token"), "{:#?}", f.fj.violations());
}

#[tokio::test]
async fn comments_are_edited_by_their_author_only_and_merges_are_held_to_the_head() {
    let f = forge().await;
    let n = f.fj.add_pull("acme/app", "feature", "main", "Fix", "hone-bot", None);
    let theirs = f.fj.add_comment("acme/app", n, "mallory", "<!-- hone:autofix job=x -->");
    let path = format!("/repos/acme/app/issues/comments/{theirs}");
    assert_eq!(call(&f, "PATCH", &path, &token(), Some(json!({"body": "mine"}))).await.0, 403);
    let head = f.fj.pulls("acme/app")[0]["head"]["sha"].as_str().unwrap().to_string();
    let merge = |sha: &str| json!({"Do": "merge", "head_commit_id": sha});
    assert_eq!(
        call(&f, "POST", &format!("/repos/acme/app/pulls/{n}/merge"), &token(), Some(merge(&"0".repeat(40)))).await.0,
        409
    );
    assert_eq!(
        call(&f, "POST", &format!("/repos/acme/app/pulls/{n}/merge"), &token(), Some(merge(&head))).await.0,
        200
    );
    assert_eq!(f.fj.pulls("acme/app")[0]["merged"], true);
    assert!(f.fj.violations().is_empty(), "{:#?}", f.fj.violations());
}
