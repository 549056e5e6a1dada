use super::*;
use serde_json::json;

#[test]
fn repository_paths_are_plain_names() {
    for ok in ["acme/app", "a-b/c.d_e", "A/b"] {
        assert!(is_repo_path(ok), "{ok}");
    }
    for bad in ["acme", "acme/app/x", "../app", "acme/..", "acme/a%2Fb", "acme/a b", "/app", "acme/"] {
        assert!(!is_repo_path(bad), "{bad}");
    }
}

#[test]
fn refusals_name_the_token_and_the_scope() {
    let a = Answer { status: 401, body: json!({"message": "token is required"}) };
    let e = refusal(&a, "FORGEJO_TOKEN", "GET /user").unwrap();
    assert!(e.to_string().contains("FORGEJO_TOKEN"), "{e}");
    let scope = json!({"message": "token does not have at least one of required scope(s): [write:issue]"});
    let e = refusal(&Answer { status: 403, body: scope }, "FORGEJO_TOKEN", "POST x").unwrap();
    assert!(e.to_string().contains("lacks a scope"), "{e}");
    assert!(refusal(&Answer { status: 403, body: json!({"message": "no"}) }, "T", "x").is_none());
    let m = Answer { status: 422, body: json!({"message": "bad\u{1b}[31m", "errors": ["title"]}) }.message();
    assert_eq!(m, "HTTP 422: bad[31m (title)");
}

#[test]
fn rate_limits_are_waited_out() {
    let mut h = reqwest::header::HeaderMap::new();
    assert_eq!(rate_limit_wait(200, &h), None);
    assert_eq!(rate_limit_wait(429, &h), Some(Duration::from_secs(60)));
    h.insert("retry-after", "3".parse().unwrap());
    assert_eq!(rate_limit_wait(429, &h), Some(Duration::from_secs(3)));
}
