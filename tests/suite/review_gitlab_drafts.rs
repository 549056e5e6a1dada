//! hone publishes only its own draft notes: a draft the token's user writes by hand while hone
//! prepares its review (after hone counted the user's pending drafts) stays the user's, pending
//! and unpublished, never posted under hone's review.

use super::review_gitlab::fork_mr;
use crate::common::git_http::test_ca;
use crate::common::mock_model::{MockModel, call, text};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_the_tokens_user_writes_meanwhile_is_not_published_with_hones_review() {
    let f = fork_mr().await;
    f.repo.git(&["checkout", "-q", "main"]);
    f.repo.git(&["config", "remote.origin.url", &f.gl.git_url("acme/app")]);
    let model = MockModel::start().await;
    model
        .turn(call("write_file", json!({"path": "added.md", "content": "# Added\n"})), false)
        .turn(text("Added a file."), false);
    let spec =
        crate::common::job_yaml("glreview", &model.base_url, false).replace("run: \"sh check.sh\"", "run: \"true\"");
    let yaml = format!("{spec}forge: {{ gitlab_url: \"{}\" }}\n", f.gl.base);
    let ca = test_ca().display().to_string();
    let env = [("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str()), ("GITLAB_TOKEN", "glpat-bot")];
    f.gl.draft_meanwhile("my half-written thoughts: LGTM?");
    let run = crate::common::run_job_with(&f.repo, &yaml, &["--pr", "1", "--review"], &env).await;
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let published: Vec<String> =
        f.gl.discussions("acme/app", 1)
            .iter()
            .map(|d| d["notes"][0]["body"].as_str().unwrap_or("").to_string())
            .collect();
    assert!(published.iter().all(|b| !b.contains("half-written")), "the user's draft went out: {published:#?}");
    assert!(!published.is_empty(), "hone's review was published");
    let pending: Vec<String> = f.gl.drafts("acme/app", 1).into_iter().map(|d| d.note).collect();
    assert_eq!(pending, ["my half-written thoughts: LGTM?"], "the user's draft stays pending");
    assert!(f.gl.violations().is_empty(), "{:#?}", f.gl.violations());
}
