//! Reading a merge request's review feedback against the feedback stand-in
//! (tests/common/mock_feedback.rs, included by `forge::feedback`'s tests): only notes by members with the Developer role or above,
//! never system, internal or hone's own notes, each author's role looked up once.

use super::*;
use crate::forge::credential::Token;
use crate::forge::feedback::MAX_BODY;
use crate::forge::github::feedback::tests::standin::{GL_SELF, GL_TOKEN, GlNote, MockFeedback};
use crate::forge::place::Place;

fn client(api: &str, token: &str) -> GitLab {
    let place = Place {
        kind: crate::forge::Kind::Gitlab,
        server: None,
        api: Ok(api.into()),
        elsewhere: None,
        repo: Some("acme/app".into()),
        token: Some(Token::new(token, "GITLAB_TOKEN", "oauth2")),
        login: None,
        repo_trusted: true,
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let queue = std::sync::Arc::new(tokio::sync::Mutex::new(None));
    GitLab::new(&place, queue, &crate::bound::Bound::new(deadline, &tokio_util::sync::CancellationToken::new()))
        .unwrap()
}

fn note(author: u64, body: &str, minute: u32) -> GlNote {
    GlNote {
        author,
        body: body.into(),
        system: false,
        internal: false,
        path: None,
        at: format!("2024-05-01T10:{minute:02}:00.000Z"),
    }
}

async fn read(m: &MockFeedback, iid: u64) -> Vec<Feedback> {
    gitlab(&client(&m.gitlab_api(), GL_TOKEN), iid, Some(GL_SELF)).await.unwrap()
}

fn lookups(m: &MockFeedback) -> Vec<String> {
    m.requests().into_iter().filter(|r| r.contains("/members/all/")).collect()
}

#[tokio::test]
async fn only_notes_by_developers_and_above_are_feedback() {
    let m = MockFeedback::start().await;
    let (guest, reporter, developer, maintainer, outsider) = (10, 20, 30, 40, 50);
    for (user, level) in [(guest, 10), (reporter, 20), (developer, 30), (maintainer, 40)] {
        m.member(user, level);
    }
    m.note(2, note(guest, "rewrite it all in shell", 1));
    m.note(2, note(reporter, "drop the tests", 2));
    m.note(2, note(outsider, "push to main", 3));
    m.note(2, note(developer, "use the builder", 4));
    m.note(2, note(maintainer, "and document it", 5));
    let got = read(&m, 2).await;
    let who: Vec<&str> = got.iter().map(|f| f.reviewer.as_str()).collect();
    assert_eq!(who, ["user40", "user30"], "{got:#?}");
    let f = &got[1];
    assert_eq!((f.pr, f.state.as_str(), f.body.as_str()), (2, "COMMENTED", "use the builder"));
    assert_eq!((f.at.as_str(), f.path.as_deref()), ("2024-05-01T10:04:00Z", None));
}

#[tokio::test]
async fn system_internal_and_hones_own_notes_are_dropped() {
    let m = MockFeedback::start().await;
    m.member(GL_SELF, 40);
    m.member(30, 30);
    m.note(4, GlNote { system: true, ..note(30, "approved this merge request", 1) });
    m.note(4, GlNote { internal: true, ..note(30, "internal: the customer's name is …", 2) });
    m.note(4, note(GL_SELF, "<!-- hone:autofix job=lint -->\nhone pushed a fix", 3));
    m.note(4, note(30, "  ", 4));
    m.note(4, note(30, "please rename", 5));
    let got = read(&m, 4).await;
    assert_eq!(got.iter().map(|f| f.body.as_str()).collect::<Vec<_>>(), ["please rename"], "{got:#?}");
    // Without hone's user, the token's is asked for and still left out.
    let got = gitlab(&client(&m.gitlab_api(), GL_TOKEN), 4, None).await.unwrap();
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(m.requests().iter().any(|r| r == "GET /api/v4/user"), "{:?}", m.requests());
}

/// hone's notes written under another member's user (the review job's token is not the autofix
/// job's): the model's words, never feedback.
#[tokio::test]
async fn hones_notes_under_another_members_user_are_not_feedback() {
    let m = MockFeedback::start().await;
    m.member(30, 30);
    m.note(6, note(30, "<!-- hone:review job=review -->\n<!-- hone:digest=00 -->\nNOTICE: the policy allows it", 1));
    m.note(
        6,
        GlNote {
            path: Some("Makefile".into()),
            ..note(30, "<!-- hone:review job=review -->\n```suggestion:-0+0\nx\n```", 2)
        },
    );
    m.note(6, note(30, "<!-- hone:autofix job=lint -->\nhone pushed a fix", 3));
    m.note(6, note(30, "please rename", 4));
    let got = read(&m, 6).await;
    assert_eq!(got.iter().map(|f| f.body.as_str()).collect::<Vec<_>>(), ["please rename"], "{got:#?}");
}

#[tokio::test]
async fn a_diff_note_keeps_its_path_and_bodies_are_bounded() {
    let m = MockFeedback::start().await;
    m.member(30, 30);
    m.note(5, GlNote { path: Some("src/lib.rs".into()), ..note(30, "off by one", 1) });
    m.note(5, note(30, &format!("long\n\n{}", "x".repeat(3000)), 2));
    let got = read(&m, 5).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[0].body.chars().count(), MAX_BODY);
    assert!(got[0].body.starts_with("long xxx") && got[0].body.ends_with('…'), "{}", got[0].body);
    assert_eq!((got[1].path.as_deref(), got[1].body.as_str()), (Some("src/lib.rs"), "off by one"));
}

#[tokio::test]
async fn each_authors_role_is_looked_up_once_and_at_most_ten_authors() {
    let m = MockFeedback::start().await;
    for user in 100..115 {
        m.member(user, 30);
    }
    m.note(6, note(100, "first", 0));
    m.note(6, note(100, "second", 1));
    m.note(6, note(100, "third", 2));
    assert_eq!(read(&m, 6).await.len(), 3);
    assert_eq!(lookups(&m), ["GET /api/v4/projects/acme%2Fapp/members/all/100"], "cached");
    // Fifteen developers, newest first: only the ten newest authors are looked up.
    for (i, user) in (100..115).enumerate() {
        m.note(7, note(user, &format!("from {user}"), 10 + i as u32));
    }
    let got = read(&m, 7).await;
    assert_eq!(got.len(), MAX_LOOKUPS, "{got:#?}");
    assert_eq!(got[0].body, "from 114");
    assert_eq!(lookups(&m).len(), 1 + MAX_LOOKUPS, "{:?}", lookups(&m));
}

#[tokio::test]
async fn at_most_twenty_newest_first_from_one_page() {
    let m = MockFeedback::start().await;
    m.member(30, 30);
    for i in 0..150 {
        m.note(
            8,
            GlNote { at: format!("2024-05-01T{:02}:{:02}:00Z", 10 + i / 60, i % 60), ..note(30, &format!("n{i}"), 0) },
        );
    }
    let got = read(&m, 8).await;
    assert_eq!(got.len(), MAX_ITEMS);
    assert_eq!((got[0].body.as_str(), got[19].body.as_str()), ("n149", "n130"));
    let notes: Vec<String> = m.requests().into_iter().filter(|r| r.contains("/notes")).collect();
    assert_eq!(notes, ["GET /api/v4/projects/acme%2Fapp/merge_requests/8/notes?sort=desc&per_page=100"]);
}

#[tokio::test]
async fn a_refusal_is_an_error_with_what_to_do() {
    let m = MockFeedback::start().await;
    let e = gitlab(&client(&m.gitlab_api(), GL_TOKEN), 99, Some(GL_SELF)).await.unwrap_err();
    assert_eq!(e.code, Code::Forge);
    assert!(e.message.contains("merge request !99") && e.message.contains("404"), "{}", e.message);
    assert!(e.hint.is_some(), "{e:?}");
    m.note(1, note(30, "x", 1));
    let e = gitlab(&client(&m.gitlab_api(), "glpat-wrong"), 1, Some(GL_SELF)).await.unwrap_err();
    assert!(e.message.contains("did not accept") && !format!("{e:?}").contains("glpat-wrong"), "{e:?}");
}
