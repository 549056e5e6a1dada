//! Azure OpenAI, against a stand-in that checks what Azure checks (path, `api-version`,
//! `api-key` or an Entra ID token, the deployment) and refuses with its content filter.

use crate::common::mock_azure::Azure;
use crate::common::mock_model::{Dialect, MockModel, call, text};
use crate::common::*;
use serde_json::json;

/// The job's model block for Azure at `endpoint` (the lines after `model:`).
fn yaml(name: &str, endpoint: &str, model: &str) -> String {
    job_yaml(name, "http://unused", true).replace(
        "  provider: openai-compatible\n  name: mock-model\n  base_url: http://unused\n  api_key_env: HONE_TEST_API_KEY\n",
        &format!("  provider: azure\n  base_url: {endpoint}\n  api_key_env: HONE_TEST_API_KEY\n{model}"),
    )
}

fn fixing(mock: &MockModel, stream: bool) {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), stream)
        .turn(text("Fixed."), stream);
}

async fn azure(model: &str) -> (String, std::sync::Arc<Azure>) {
    Azure {
        model: model.into(),
        key: KEY.into(),
        deployments: vec!["gpt4o-prod".into(), "codex-prod".into()],
        ..Default::default()
    }
    .start()
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_with_its_api_version_and_api_key() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    fixing(&mock, true);
    let (endpoint, az) = azure(&mock.base_url).await;
    let run =
        run_job(&repo, &yaml("azure", &endpoint, "  deployment: gpt4o-prod\n  api_version: 2024-10-21\n"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(repo.show("hone/azure", "status.txt"), "fixed");
    let seen = az.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for (path, how, status) in &seen {
        assert_eq!(path, "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21");
        assert_eq!((how.as_str(), *status), ("api-key", 200));
    }
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "gpt4o-prod");
    assert!(body.get("max_completion_tokens").is_some(), "Azure takes max_completion_tokens: {body}");
    assert_eq!(run.report()["provider"], "azure");
    run.assert_no_secret(KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v1_form_with_the_responses_api() {
    let repo = broken_repo();
    let mock = MockModel::start_as(Dialect::Responses).await;
    fixing(&mock, false);
    let (endpoint, az) = azure(&mock.base_url).await;
    let y = yaml("azurev1", &format!("{endpoint}/openai/v1/"), "  name: codex-prod\n  api: responses\n")
        .replace("stream: true", "stream: false");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let paths: Vec<String> = az.seen().into_iter().map(|s| s.0).collect();
    assert_eq!(paths, ["/openai/v1/responses", "/openai/v1/responses"]);
    let body = &mock.requests()[0].body;
    assert_eq!((body["model"].as_str(), body["store"].as_bool()), (Some("codex-prod"), Some(false)));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entra_id_token_from_workload_identity_federation() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    fixing(&mock, true);
    let federated = "eyJhbGciOiJSUzI1NiJ9.federated-service-account-token.sig";
    let app = Some(("tenant-1".to_string(), "client-1".to_string(), federated.to_string()));
    let (endpoint, az) =
        Azure { model: mock.base_url.clone(), deployments: vec!["gpt4o-prod".into()], app, ..Default::default() }
            .start()
            .await;
    // Entra ID is briefly out: the token request is retried with the model request.
    *az.token_outage.lock().unwrap() = 1;
    let token_file = repo.dir.path().join("azure-identity-token");
    std::fs::write(&token_file, format!("{federated}\n")).unwrap();
    let y = yaml("entra", &endpoint, "  deployment: gpt4o-prod\n").replace("  api_key_env: HONE_TEST_API_KEY\n", "");
    let env = [
        ("AZURE_CLIENT_ID", "client-1"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_FEDERATED_TOKEN_FILE", token_file.to_str().unwrap()),
        ("AZURE_AUTHORITY_HOST", endpoint.as_str()),
    ];
    let run = run_job_env(&repo, &y, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hows: Vec<String> = az.seen().into_iter().map(|s| s.1).collect();
    assert_eq!(hows, ["entra", "entra"], "one token, kept for both requests");
    assert_eq!(az.token_requests.lock().unwrap().len(), 2, "one outage, then the token");
    assert!(
        run.events()
            .iter()
            .any(|e| e["type"] == "model_retry" && e["reason"].as_str().unwrap().contains("AADSTS90033"))
    );
    let issued = az.issued.lock().unwrap()[0].clone();
    run.assert_no_secret(&issued);
    run.assert_no_secret(federated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filter_refusal_is_not_retried_and_says_why() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let (endpoint, az) = azure(&mock.base_url).await;
    *az.filter_next.lock().unwrap() = 1;
    let run = run_job(&repo, &yaml("filtered", &endpoint, "  deployment: gpt4o-prod\n"), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(az.seen().len(), 1, "never retried");
    let report = run.report();
    let error = report["errors"].to_string();
    assert!(error.contains("content_filter") && error.contains("[jailbreak]"), "{error}");
    assert!(run.events().iter().all(|e| e["type"] != "model_retry"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credentials_stop_at_intake_naming_what_to_set() {
    let repo = broken_repo();
    let y = yaml("nocreds", "https://res.openai.azure.com", "  deployment: gpt4o-prod\n")
        .replace("  api_key_env: HONE_TEST_API_KEY\n", "");
    let run = run_job(&repo, &y, &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("AZURE_OPENAI_API_KEY") && run.stderr.contains("AZURE_FEDERATED_TOKEN_FILE"),
        "{}",
        run.stderr
    );
}

/// An Entra ID app proven by GitHub's OIDC token (`id-token: write`), or by a client secret.
async fn entra_with(env: &[(&str, &str)], secret: Option<&str>) -> std::sync::Arc<Azure> {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    fixing(&mock, true);
    let federated = "eyJhbGciOiJSUzI1NiJ9.github-oidc-token-for-azure.sig";
    let app = Some(("tenant-2".to_string(), "client-2".to_string(), federated.to_string()));
    let (endpoint, az) = Azure {
        model: mock.base_url.clone(),
        deployments: vec!["gpt4o-prod".into()],
        app,
        secret: secret.map(str::to_string),
        oidc_request_token: Some("runner-request-token-0123456789".into()),
        ..Default::default()
    }
    .start()
    .await;
    let y = yaml("entra2", &endpoint, "  deployment: gpt4o-prod\n").replace("  api_key_env: HONE_TEST_API_KEY\n", "");
    let oidc_url = format!("{endpoint}/oidc?api-version=2.0");
    let mut vars = vec![
        ("AZURE_CLIENT_ID", "client-2"),
        ("AZURE_TENANT_ID", "tenant-2"),
        ("AZURE_AUTHORITY_HOST", endpoint.as_str()),
        ("ACTIONS_ID_TOKEN_REQUEST_URL", oidc_url.as_str()),
    ];
    vars.extend_from_slice(env);
    let run = run_job_env(&repo, &y, &vars).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_no_secret(federated);
    if let Some(s) = secret {
        run.assert_no_secret(s);
    }
    az
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entra_id_token_from_github_actions_oidc() {
    let az = entra_with(&[("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token-0123456789")], None).await;
    let form = az.token_requests.lock().unwrap()[0].clone();
    assert!(form.contains_key("client_assertion") && !form.contains_key("client_secret"), "{form:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_set_on_purpose_comes_before_the_runners_oidc_token() {
    let secret = "azure-client-secret-value-42xyz";
    let env = [("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token-0123456789"), ("AZURE_CLIENT_SECRET", secret)];
    let az = entra_with(&env, Some(secret)).await;
    let form = az.token_requests.lock().unwrap()[0].clone();
    assert_eq!(form.get("client_secret").map(String::as_str), Some(secret));
}
