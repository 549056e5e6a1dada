use super::*;
use serde_json::json;

fn answer(status: u16, body: Value) -> Answer {
    Answer { status, body }
}

#[test]
fn messages_in_every_shape_gitlab_writes() {
    assert_eq!(answer(404, json!({"message": "404 Project Not Found"})).message(), "HTTP 404: 404 Project Not Found");
    let conflict = json!({"message": ["Another open merge request already exists for this source branch: !4"]});
    assert!(answer(409, conflict).message().contains("!4"));
    assert_eq!(
        answer(400, json!({"message": {"title": ["is too long"]}})).message(),
        "HTTP 400: title [\"is too long\"]"
    );
    assert_eq!(answer(400, json!({"error": "title is missing"})).message(), "HTTP 400: title is missing");
    assert_eq!(answer(500, Value::Null).message(), "HTTP 500:");
    assert!(answer(400, json!({"message": "x".repeat(10_000)})).message().len() < 600);
}

#[test]
fn refusals_name_the_scope_or_the_token_kind() {
    let pat = Token::new("glpat-x", "GITLAB_TOKEN", "oauth2");
    let scope = json!({"error": "insufficient_scope", "error_description": "The request requires higher privileges than provided by the access token.", "scope": "api"});
    let e = refusal(&answer(403, scope), &pat, "POST /projects/g%2Fp/merge_requests").unwrap();
    assert!(e.message.contains("lacks the `api` scope") && e.message.contains("GITLAB_TOKEN"), "{}", e.message);
    let e = refusal(&answer(401, json!({"message": "401 Unauthorized"})), &pat, "GET /user").unwrap();
    assert!(e.message.contains("did not accept") && e.hint.as_deref().unwrap().contains("expired"), "{e:?}");
    let e = refusal(&answer(403, json!({"message": "403 Forbidden"})), &pat, "POST x").unwrap();
    assert!(e.hint.as_deref().unwrap().contains("Developer"), "{e:?}");
    let job = Token::new("j", CI_JOB_TOKEN, "gitlab-ci-token");
    let e = refusal(&answer(401, json!({"message": "401 Unauthorized"})), &job, "POST x").unwrap();
    assert!(e.message.contains(CI_JOB_TOKEN) && e.hint.as_deref().unwrap().contains("GITLAB_TOKEN"), "{e:?}");
    assert!(refusal(&answer(409, json!({})), &pat, "x").is_none());
    assert!(refusal(&answer(200, json!({})), &job, "x").is_none());
    assert!(!format!("{e:?}").contains("glpat-x"));
}

#[test]
fn rate_limits() {
    let mut h = reqwest::header::HeaderMap::new();
    assert_eq!(rate_limit_wait(403, &h, 0), None);
    assert_eq!(rate_limit_wait(429, &h, 0), Some(Duration::from_secs(60)));
    h.insert("ratelimit-reset", "1010".parse().unwrap());
    assert_eq!(rate_limit_wait(429, &h, 1000), Some(Duration::from_secs(10)));
    h.insert("retry-after", "3".parse().unwrap());
    assert_eq!(rate_limit_wait(429, &h, 1000), Some(Duration::from_secs(3)));
    assert_eq!(rate_limit_wait(200, &h, 1000), None);
}

#[test]
fn project_paths() {
    for ok in ["acme/app", "group/sub/app", "a.b/c_d-e+f"] {
        assert!(is_project_path(ok), "{ok}");
    }
    for bad in ["app", "acme/", "/app", "acme/../x", "acme/app?x=1", "acme/app#x", "acme/a b", "acme/%2e"] {
        assert!(!is_project_path(bad), "{bad}");
    }
}
