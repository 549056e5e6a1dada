//! A fleet started by a pull request's workflow: the event's PR is the fleet's own repository's,
//! never a target's. Each target gets its own PR; none is "fixed" as PR #7 of its own.

use crate::common::*;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_pull_request_is_never_a_targets() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "evjob", "pr: { enabled: true }\n");
    let event = dir.path().join("event.json");
    std::fs::write(&event, json!({"number": 7, "pull_request": {"number": 7}}).to_string()).unwrap();

    let gh = fleet_of_one_github().await;
    Mock::given(method("GET"))
        .and(path("/repos/origins/app/pulls/7"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&gh)
        .await;
    let (uri, ev) = (gh.uri(), event.display().to_string());
    let env = [
        ("GITHUB_TOKEN", "ghp_eventfleet0123456789"),
        ("GITHUB_API_URL", uri.as_str()),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request_target"),
        ("GITHUB_EVENT_PATH", ev.as_str()),
        ("GITHUB_REPOSITORY", "acme/fleet-runner"),
    ];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    gh.verify().await;
    let created = gh.received_requests().await.unwrap().iter().filter(|r| r.method.as_str() == "POST").count();
    assert_eq!(created, 1, "one PR for the target, none as #7");
}
