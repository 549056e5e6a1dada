//! The stand-in's REST API: merge requests and notes as GitLab keeps them, its answers to tokens
//! and scopes, rate limiting, and the violations it records against GitLab's API description.

use super::{Lab, commit_branch, git, lab, personal, url_as};
use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Auth, Kind, Token};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const APP: &str = "/api/v4/projects/acme%2Fapp";

/// One API request with a `PRIVATE-TOKEN` (or the header given as `name: value`); status,
/// headers and JSON body (`Null` when not JSON).
async fn call(lab: &Lab, method: &str, path: &str, auth: (&str, &str), body: Option<Value>) -> (u16, HeaderMap, Value) {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(test_ca()).unwrap()).unwrap();
    let client = reqwest::Client::builder().tls_certs_only([ca]).build().unwrap();
    let mut req = client.request(method.parse().unwrap(), format!("{}{path}", lab.gl.base)).header(auth.0, auth.1);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = tokio::time::timeout(std::time::Duration::from_secs(30), req.send()).await.unwrap().unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null);
    (status, headers, body)
}

const DEV: (&str, &str) = ("private-token", "glpat-dev");

/// `lab()` with the `api` token `glpat-dev` of user `dev`, and branch `feature` pushed.
async fn lab_with_branch() -> Lab {
    let lab = lab().await;
    lab.gl.add_token("glpat-dev", personal(&["api"], "dev"));
    commit_branch(&lab.repo, "feature");
    let (ok, err) =
        git(&lab.repo.path, &["push", &url_as(&lab.gl.base, "oauth2", "glpat-dev", "acme/app"), "feature"]).await;
    assert!(ok, "{err}");
    lab
}

fn create_body(title: &str) -> Value {
    json!({"source_branch": "feature", "target_branch": "main", "title": title})
}

#[tokio::test]
async fn merge_request_create_conflict_update_close_and_notes() {
    let lab = lab_with_branch().await;
    let alice = lab.gl.add_user("alice");
    let mut body = create_body("Draft: Fix the check");
    body.as_object_mut().unwrap().extend(
        json!({"description": "d", "labels": "hone,bot", "assignee_ids": [alice], "reviewer_ids": [alice],
               "remove_source_branch": true, "squash": true})
        .as_object()
        .unwrap()
        .clone(),
    );
    let (status, _, mr) = call(&lab, "POST", &format!("{APP}/merge_requests"), DEV, Some(body)).await;
    assert_eq!(status, 201, "{mr}");
    assert_eq!(
        (mr["iid"].as_u64(), mr["draft"].as_bool(), mr["state"].as_str()),
        (Some(1), Some(true), Some("opened"))
    );
    assert_eq!(mr["labels"], json!(["hone", "bot"]));
    assert_eq!(
        (mr["assignees"][0]["id"].as_u64(), mr["reviewers"][0]["username"].as_str()),
        (Some(alice), Some("alice"))
    );
    assert_eq!(mr["source_project_id"], mr["target_project_id"]);
    assert_eq!(mr["sha"].as_str().unwrap(), lab.repo.git(&["rev-parse", "feature"]));
    assert!(mr["web_url"].as_str().unwrap().ends_with("/acme/app/-/merge_requests/1"));

    let (status, _, conflict) =
        call(&lab, "POST", &format!("{APP}/merge_requests"), DEV, Some(create_body("Again"))).await;
    assert_eq!(status, 409);
    assert_eq!(conflict, json!({"message": ["Another open merge request already exists for this source branch: !1"]}));
    let (status, headers, list) =
        call(&lab, "GET", &format!("{APP}/merge_requests?source_branch=feature&state=opened&per_page=1"), DEV, None)
            .await;
    assert_eq!((status, list.as_array().unwrap().len()), (200, 1));
    assert_eq!(headers["x-total"], "1");

    let update = json!({"title": "Fix the check", "add_labels": "extra", "description": "new"});
    let (status, _, mr) = call(&lab, "PUT", &format!("{APP}/merge_requests/1"), DEV, Some(update)).await;
    assert_eq!((status, mr["draft"].as_bool()), (200, Some(false)), "{mr}");
    assert_eq!(mr["labels"], json!(["hone", "bot", "extra"]));
    let (_, _, mr) =
        call(&lab, "PUT", &format!("{APP}/merge_requests/1"), DEV, Some(json!({"state_event": "close"}))).await;
    assert_eq!(mr["state"], "closed");
    let (status, _, _) = call(&lab, "POST", &format!("{APP}/merge_requests"), DEV, Some(create_body("New"))).await;
    assert_eq!(status, 201, "a closed merge request blocks a new one");
    let (status, _, _) =
        call(&lab, "PUT", &format!("{APP}/merge_requests/1"), DEV, Some(json!({"state_event": "reopen"}))).await;
    assert_eq!(status, 409, "reopened beside another open one");
    assert!(lab.gl.violations().is_empty(), "{:#?}", lab.gl.violations());
}

#[tokio::test]
async fn notes_are_kept_and_edited_by_their_author_only() {
    let lab = lab_with_branch().await;
    lab.gl.add_token("glpat-alice", personal(&["api"], "alice"));
    lab.gl.add_token("job-1", Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });
    let iid = lab.gl.add_mr("acme/app", "feature", "main", "Fix", "dev", None);
    let notes = format!("{APP}/merge_requests/{iid}/notes");

    let (status, _, note) = call(&lab, "POST", &notes, DEV, Some(json!({"body": "first"}))).await;
    assert_eq!((status, note["author"]["username"].as_str()), (201, Some("dev")), "{note}");
    let id = note["id"].as_u64().unwrap();
    let (status, _, note) = call(&lab, "PUT", &format!("{notes}/{id}"), DEV, Some(json!({"body": "edited"}))).await;
    assert_eq!((status, note["body"].as_str()), (200, Some("edited")));
    let alice = ("private-token", "glpat-alice");
    let (status, _, _) = call(&lab, "PUT", &format!("{notes}/{id}"), alice, Some(json!({"body": "mine"}))).await;
    assert_eq!(status, 403, "another user edited dev's note");
    let job = ("job-token", "job-1");
    let (status, _, list) = call(&lab, "GET", &notes, job, None).await;
    assert_eq!((status, list[0]["body"].as_str()), (200, Some("edited")), "a job token reads notes");
    let (status, _, body) = call(&lab, "POST", &notes, job, Some(json!({"body": "from the job"}))).await;
    assert_eq!((status, body), (401, json!({"message": "401 Unauthorized"})), "a job token wrote a note");
    assert_eq!(lab.gl.notes("acme/app", iid).len(), 1);
    assert!(lab.gl.violations().is_empty(), "{:#?}", lab.gl.violations());
}

#[tokio::test]
async fn unknown_parameters_wrong_types_and_unknown_operations_are_violations() {
    let lab = lab_with_branch().await;
    let mut body = create_body("Fix");
    body["draft"] = json!(true);
    let (status, _, mr) = call(&lab, "POST", &format!("{APP}/merge_requests"), DEV, Some(body)).await;
    assert_eq!((status, mr["draft"].as_bool()), (201, Some(false)), "GitLab ignores `draft`, so must the stand-in");
    let (status, _, err) =
        call(&lab, "PUT", &format!("{APP}/merge_requests/1"), DEV, Some(json!({"squash": "maybe"}))).await;
    assert_eq!((status, err), (400, json!({"error": "squash is invalid"})));
    let (status, _, err) = call(&lab, "POST", &format!("{APP}/merge_requests"), DEV, Some(json!({"title": "t"}))).await;
    assert_eq!((status, err), (400, json!({"error": "source_branch is missing, target_branch is missing"})));
    let (status, _, _) = call(&lab, "GET", &format!("{APP}/merge_requests/1/approval_state"), DEV, None).await;
    assert_eq!(status, 404);
    let (status, _, err) = call(&lab, "GET", "/api/v4/projects/acme/app", DEV, None).await;
    assert_eq!((status, err), (404, json!({"error": "404 Not Found"})), "an unencoded path found the project");

    let v = lab.gl.violations();
    let expect = [
        "unknown parameter `draft`",
        "`squash` is not a boolean",
        "`source_branch` missing",
        "approval_state",
        "/projects/acme/app",
    ];
    for e in expect {
        assert!(v.iter().any(|x| x.contains(e)), "no violation with {e:?} in {v:#?}");
    }
    assert_eq!(v.len(), expect.len() + 1, "{v:#?}"); // target_branch missing too
}

#[tokio::test]
async fn tokens_are_answered_as_gitlab_answers_them() {
    let lab = lab().await;
    lab.gl.add_token("glpat-read", personal(&["read_api"], "dev"));
    lab.gl.add_token("glpat-repo", personal(&["read_repository"], "dev"));
    lab.gl.add_token("job-1", Token { kind: Kind::Job, scopes: &[], user: "dev", project: Some("acme/app") });

    let (status, headers, body) =
        call(&lab, "POST", &format!("{APP}/merge_requests"), ("private-token", "glpat-read"), Some(create_body("t")))
            .await;
    let insufficient = json!({"error": "insufficient_scope", "scope": "api",
        "error_description": "The request requires higher privileges than provided by the access token."});
    assert_eq!((status, body), (403, insufficient));
    assert!(headers.get("www-authenticate").is_none(), "GitLab sends no challenge with insufficient_scope");
    let (status, _, project) = call(&lab, "GET", APP, ("authorization", "Bearer glpat-read"), None).await;
    assert_eq!((status, project["path_with_namespace"].as_str()), (200, Some("acme/app")));
    let (status, _, body) = call(&lab, "GET", "/api/v4/user", ("private-token", "glpat-nope"), None).await;
    assert_eq!((status, body), (401, json!({"message": "401 Unauthorized"})));
    let (status, _, body) = call(&lab, "GET", "/api/v4/user", ("private-token", "glpat-repo"), None).await;
    assert_eq!((status, body["scope"].as_str()), (403, Some("api read_api read_user")));
    let (status, _, body) =
        call(&lab, "GET", "/api/v4/personal_access_tokens/self", ("private-token", "glpat-repo"), None).await;
    assert_eq!((status, body["scopes"].clone()), (200, json!(["read_repository"])), "a token cannot read itself");
    let (status, _, _) = call(&lab, "GET", APP, ("job-token", "job-1"), None).await;
    assert_eq!(status, 404, "GitLab ignores a job token on /projects/:id: the private project is not found");
    let (status, _, _) = call(&lab, "GET", "/api/v4/user", ("job-token", "job-1"), None).await;
    assert_eq!(status, 401);
    let (status, _, users) =
        call(&lab, "GET", "/api/v4/users?username=DEV", ("private-token", "glpat-read"), None).await;
    assert_eq!((status, users[0]["username"].as_str()), (200, Some("dev")));
    assert!(lab.gl.requests().iter().any(|r| r.auth == Auth::Bearer("glpat-read".into())), "requests record the auth");
    assert!(lab.gl.violations().is_empty(), "{:#?}", lab.gl.violations());
}

#[tokio::test]
async fn projects_are_found_by_id_or_encoded_path_and_forks_target_their_upstream() {
    let lab = lab_with_branch().await;
    let nested = lab.gl.add_project("group/sub/project", &lab.repo.origin);
    let fork = lab.gl.fork("acme/app", "someone/app");
    let found = [
        ("/api/v4/projects/1", 1),
        ("/api/v4/projects/group%2Fsub%2Fproject", nested),
        ("/api/v4/projects/someone%2Fapp", fork),
    ];
    for (path, id) in found {
        let (status, _, p) = call(&lab, "GET", path, DEV, None).await;
        assert_eq!(
            (status, p["id"].as_u64(), p["default_branch"].as_str()),
            (200, Some(id), Some("main")),
            "{path}: {p}"
        );
    }
    let mut body = create_body("From the fork");
    body["target_project_id"] = json!(1);
    let (status, _, mr) = call(&lab, "POST", "/api/v4/projects/someone%2Fapp/merge_requests", DEV, Some(body)).await;
    assert_eq!(status, 201, "{mr}");
    assert_eq!((mr["project_id"].as_u64(), mr["source_project_id"].as_u64()), (Some(1), Some(fork)));
    assert_eq!(lab.gl.mrs("acme/app").len(), 1);
    assert!(lab.gl.violations().is_empty(), "{:#?}", lab.gl.violations());
}

#[tokio::test]
async fn throttled_requests_get_429_with_retry_after_then_succeed() {
    let lab = lab().await;
    lab.gl.add_token("glpat-read", personal(&["read_api"], "dev"));
    lab.gl.rate_limit_next(1);
    let (status, headers, _) = call(&lab, "GET", "/api/v4/user", ("private-token", "glpat-read"), None).await;
    assert_eq!(
        (status, &headers["retry-after"], &headers["ratelimit-remaining"]),
        (429, &"1".parse().unwrap(), &"0".parse().unwrap())
    );
    let (status, headers, _) = call(&lab, "GET", "/api/v4/user", ("private-token", "glpat-read"), None).await;
    assert_eq!(status, 200);
    for h in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-observed"] {
        assert!(headers.contains_key(h), "no {h}");
    }
    assert_eq!(lab.gl.throttled(), 1);
}
