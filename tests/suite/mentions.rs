//! The model's words mention and close nothing: `@user`, `@org/team`, `#12`, `owner/repo#3`,
//! `GH-4`, an issue's URL, `-@user`, GitLab's `sibling#5` and "fixes #12" in its final message reach the PR's title and body
//! and the review's body as code spans (GitHub neither notifies nor links inside code) and the
//! commit message with a zero-width space after each sign (a commit message is plain text to the
//! forge). Checked by parsing what the stand-ins received as GitHub renders it.

use crate::common::mock_github_review::MockGithubReview;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::git;
use crate::common::*;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_mentioncanary0123456789abcd";

/// What the model says when it is done: every kind of reference, and a closing keyword.
const SAID: &str = "Fixes #12. Thanks @octocat and @acme/security-team; closes acme/other#3, GH-4 and \
https://github.com/acme/app/issues/9 (see [the bug](https://github.com/acme/app/issues/10)); cc -@hubot, \
closes sibling#5 and https://github.com/acme/app/pull/8/files.";

/// The live references in `md` as GitHub renders markdown: text outside code that still holds
/// one, and links to an issue.
fn live(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut text = String::new();
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for e in Parser::new_ext(md, opts) {
        match e {
            Event::Text(t) if !in_code => {
                text.push_str(&t);
                continue;
            }
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::Link { dest_url, .. })
                if dest_url.contains("/issues/") || dest_url.contains("/pull/") =>
            {
                out.push(dest_url.to_string())
            }
            _ => {}
        }
        out.extend(words(&std::mem::take(&mut text)));
    }
    out.extend(words(&text));
    out
}

/// The references the model wrote that still stand in `text`, as the forge reads plain text.
fn words(text: &str) -> Vec<String> {
    [
        "#12",
        "@octocat",
        "@acme/security-team",
        "acme/other#3",
        "GH-4",
        "issues/9",
        "issues/10",
        "@hubot",
        "sibling#5",
        "pull/8",
    ]
    .iter()
    .filter(|w| text.contains(*w))
    .map(|w| w.to_string())
    .collect()
}

async fn model() -> MockModel {
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false).turn(text(SAID), false);
    mock
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_mentions_and_closing_words_are_inert_in_the_pr_and_the_commit() {
    let repo = broken_repo();
    let gh = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&gh)
        .await;
    let pr = json!({"number": 7, "html_url": "https://github.example/acme/app/pull/7", "state": "open"});
    Mock::given(method("POST"))
        .and(path("/repos/acme/app/pulls"))
        .respond_with(ResponseTemplate::new(201).set_body_json(pr))
        .expect(1)
        .mount(&gh)
        .await;
    let model = model().await;
    let yaml = format!("{}pr:\n  title: \"{{summary_title}}\"\n", job_yaml("mentionjob", &model.base_url, false));
    let api = gh.uri();
    let env = [("GITHUB_TOKEN", TOKEN), ("GITHUB_REPOSITORY", "acme/app"), ("GITHUB_API_URL", api.as_str())];
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let posted: Vec<Value> = gh
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    let body = posted[0]["body"].as_str().unwrap();
    assert!(body.contains("`#12`") && body.contains("`@octocat`"), "the words are still there to read: {body}");
    assert_eq!(live(body), Vec::<String>::new(), "live references in the PR body:\n{body}");
    let title = posted[0]["title"].as_str().unwrap();
    assert_eq!(words(title), Vec::<String>::new(), "the title: {title}");
    let message = git(&repo.origin, &["log", "-1", "--format=%B", "refs/heads/hone/mentionjob"]);
    assert_eq!(words(&message), Vec::<String>::new(), "live references in the commit message:\n{message}");
    assert!(message.contains("#\u{200B}12") && message.contains("@\u{200B}octocat"), "{message}");
    assert!(message.contains("Hone-Job: mentionjob"), "the trailers stay exact: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_mentions_and_closing_words_are_inert_in_a_review() {
    let base = [("status.txt", "broken\n"), ("check.sh", CHECK_SH)];
    let (repo, head) = super::review_github::fork_pr(&base, &[("new.txt", "one\n")]);
    let gh = MockGithubReview::start(&repo.origin).await;
    gh.open_pr(3, "feature", &head, "fork/app");
    let model = model().await;
    let yaml = job_yaml("review", &model.base_url, false);
    let env = gh.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_job_with(&repo, &yaml, &["--pr", "3", "--review"], &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reviews = gh.reviews(3);
    let body = &reviews[0].0.body;
    assert!(body.contains("`#12`"), "{body}");
    assert_eq!(live(body), Vec::<String>::new(), "live references in the review body:\n{body}");
}
