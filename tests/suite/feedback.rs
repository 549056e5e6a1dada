//! The review feedback stand-in (tests/common/mock_feedback.rs) answers as GitHub and GitLab do,
//! so that hone's feedback readers, tested against it in their unit tests
//! (`forge::feedback::tests`, `forge::gitlab::feedback::tests`), can fail for the reasons the real
//! APIs would make them: tokens checked, unknown pull and merge requests 404, lists ordered and
//! paged as documented, and the fields hone's trust decisions read present in their real shape.

use crate::common::mock_feedback::{GH_TOKEN, GL_PROJECT, GL_TOKEN, GhItem, GlNote, MockFeedback};
use serde_json::Value;

async fn get(url: &str, header: (&str, &str)) -> (u16, Value) {
    let resp = reqwest::Client::new().get(url).header(header.0, header.1).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

fn item(login: &str, state: &str, path: Option<&str>, at: &str) -> GhItem {
    GhItem {
        login: login.into(),
        kind: "User".into(),
        association: "MEMBER".into(),
        state: state.into(),
        body: format!("{login} says"),
        path: path.map(str::to_string),
        at: at.into(),
    }
}

#[tokio::test]
async fn the_github_stand_in_checks_the_token_and_answers_in_githubs_shape() {
    let m = MockFeedback::start().await;
    m.review(7, item("a", "CHANGES_REQUESTED", None, "2024-05-01T10:00:00Z"));
    m.review(7, item("b", "PENDING", None, "2024-05-01T11:00:00Z"));
    m.comment(7, item("c", "", Some("src/lib.rs"), "2024-05-01T10:00:00Z"));
    m.comment(7, item("d", "", Some("src/main.rs"), "2024-05-01T11:00:00Z"));
    let auth = format!("Bearer {GH_TOKEN}");
    let reviews = format!("{}/repos/acme/app/pulls/7/reviews", m.url);
    assert_eq!(get(&reviews, ("authorization", "Bearer wrong")).await.0, 401);
    assert_eq!(get(&reviews.replace("/7/", "/8/"), ("authorization", &auth)).await.0, 404);
    let (status, list) = get(&reviews, ("authorization", &auth)).await;
    assert_eq!(status, 200);
    let r = &list[0];
    assert_eq!((r["user"]["login"].as_str(), r["user"]["type"].as_str()), (Some("a"), Some("User")));
    assert_eq!((r["author_association"].as_str(), r["state"].as_str()), (Some("MEMBER"), Some("CHANGES_REQUESTED")));
    assert_eq!(r["submitted_at"].as_str(), Some("2024-05-01T10:00:00Z"));
    assert!(list[1]["submitted_at"].is_null(), "a pending review is not submitted");
    let (_, one) = get(&format!("{reviews}?per_page=1&page=2"), ("authorization", &auth)).await;
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["user"]["login"].as_str(), Some("b"), "oldest first, paged");
    let comments = format!("{}/repos/acme/app/pulls/7/comments", m.url);
    let (_, asc) = get(&comments, ("authorization", &auth)).await;
    assert_eq!(
        (asc[0]["path"].as_str(), asc[0]["created_at"].as_str()),
        (Some("src/lib.rs"), Some("2024-05-01T10:00:00Z"))
    );
    let (_, desc) = get(&format!("{comments}?sort=created&direction=desc"), ("authorization", &auth)).await;
    assert_eq!(desc[0]["path"].as_str(), Some("src/main.rs"));
}

#[tokio::test]
async fn the_gitlab_stand_in_checks_the_token_and_answers_in_gitlabs_shape() {
    let m = MockFeedback::start().await;
    m.member(30, 30);
    let note = |author, body: &str, path: Option<&str>, minute: u32| GlNote {
        author,
        body: body.into(),
        system: false,
        internal: false,
        path: path.map(str::to_string),
        at: format!("2024-05-01T10:{minute:02}:00.000Z"),
    };
    m.note(3, note(30, "first", Some("src/lib.rs"), 1));
    m.note(3, GlNote { system: true, ..note(30, "approved this merge request", None, 2) });
    let notes = format!("{}/projects/{GL_PROJECT}/merge_requests/3/notes", m.gitlab_api());
    assert_eq!(get(&notes, ("private-token", "glpat-wrong")).await.0, 401);
    assert_eq!(get(&notes.replace("/3/", "/4/"), ("private-token", GL_TOKEN)).await.0, 404);
    let (status, list) = get(&notes, ("private-token", GL_TOKEN)).await;
    assert_eq!(status, 200);
    assert_eq!(list[0]["system"].as_bool(), Some(true), "newest first by default");
    let diff = &list[1];
    assert_eq!((diff["type"].as_str(), diff["author"]["id"].as_u64()), (Some("DiffNote"), Some(30)));
    assert_eq!(diff["position"]["new_path"].as_str(), Some("src/lib.rs"));
    assert_eq!(diff["internal"].as_bool(), Some(false));
    let (_, asc) = get(&format!("{notes}?sort=asc&per_page=1"), ("private-token", GL_TOKEN)).await;
    assert_eq!((asc.as_array().unwrap().len(), asc[0]["body"].as_str()), (1, Some("first")));
    let member = |u: u64| format!("{}/projects/{GL_PROJECT}/members/all/{u}", m.gitlab_api());
    let (status, dev) = get(&member(30), ("private-token", GL_TOKEN)).await;
    assert_eq!((status, dev["access_level"].as_u64()), (200, Some(30)));
    assert_eq!(get(&member(31), ("private-token", GL_TOKEN)).await.0, 404, "not a member");
    assert_eq!(get(&member(30), ("private-token", "glpat-wrong")).await.0, 401);
}
