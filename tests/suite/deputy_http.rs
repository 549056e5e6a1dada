//! hone's HTTP clients send the key and the conversation only where the job names: a model API
//! that answers with a redirect is not followed (the Anthropic key is a header reqwest would keep
//! across hosts, and a 307 re-sends the whole conversation), and the run says where it pointed.

use crate::common::mock_model::{Dialect, MockModel, Reply, text};
use crate::common::*;

fn yaml(dialect: Dialect, base_url: &str) -> String {
    let y = job_yaml("redirect", base_url, false);
    match dialect {
        Dialect::Anthropic => y.replace(
            "provider: openai-compatible\n  name: mock-model",
            "provider: anthropic\n  name: claude-sonnet-4-5",
        ),
        _ => y,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_api_redirect_is_not_followed() {
    for (dialect, path) in [(Dialect::Anthropic, "/v1/messages"), (Dialect::OpenAi, "/chat/completions")] {
        let repo = broken_repo();
        // The attacker's listener would answer like the real API, so that a followed redirect
        // goes on unnoticed.
        let attacker = MockModel::start_as(dialect).await;
        attacker.turn(text("done"), false);
        let api = MockModel::start_as(dialect).await;
        let location = format!("{}{path}", attacker.base_url);
        for code in [307, 308] {
            api.push(Reply::Status { code, headers: vec![("location".into(), location.clone())], body: String::new() });
        }
        let run = run_job(&repo, &yaml(dialect, &api.base_url), &[]).await;
        let seen = attacker.requests();
        assert!(seen.is_empty(), "{dialect:?}: the redirect was followed: {:?}", seen.first().map(|r| &r.auth));
        assert_eq!(api.requests().len(), 1, "{dialect:?}: a redirect is not retried");
        assert_eq!(run.code, 3, "{dialect:?}: {}", run.stderr);
        let errors = run.report()["errors"].to_string();
        assert!(errors.contains("E_MODEL") && errors.contains("redirect"), "{dialect:?}: {errors}");
        assert!(errors.contains(&location), "{dialect:?}: the error does not name where it pointed: {errors}");
        run.assert_no_secret(KEY);
    }
}
