//! A cloud credentials file the runner left in the workspace (google-github-actions/auth writes
//! `gha-creds-*.json` at the root of the checkout, where GOOGLE_APPLICATION_CREDENTIALS names it)
//! is for hone's model client only: no command and no tool of the model can read it.

use super::jail_support::{all_tool_results, cmd, fix, spec, write};
use crate::common::mock_model::{MockModel, call};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

async fn hidden(var: &str) {
    require!(Need::UserNamespaces);
    let canary = "-----BEGIN PRIVATE KEY-----credscanary7f3e9a-----END PRIVATE KEY-----";
    let repo =
        TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "gha-creds-*.json\n")]);
    let creds = repo.path.join("gha-creds-1f2e3d.json");
    std::fs::write(&creds, format!("{{\"type\": \"service_account\", \"private_key\": \"{canary}\"}}\n")).unwrap();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "gha-creds-1f2e3d.json"})), false)
        .turn(call("grep", json!({"pattern": "credscanary"})), false)
        // A script no command analysis sees into: only the jail stands between it and the file.
        .turn(write("peek.sh", "for f in gha-*; do cat \"$f\"; cp \"$f\" copied.txt; done; cat copied.txt\n"), false)
        .turn(cmd("sh peek.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, "creds", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job_env(&repo, &yaml, &[(var, creds.to_str().unwrap())]).await;
    assert_eq!(run.code, 0, "{var}: {}", run.stderr);
    let seen = all_tool_results(&mock);
    assert!(!seen.contains("KEY-----credscanary"), "{var}: the model read the credentials: {seen}");
    assert!(seen.contains("denied by the policy"), "the tools say why: {seen}");
    assert!(std::fs::read_to_string(&creds).unwrap().contains(canary), "the file itself is left as it was");
    assert!(!repo.git(&["log", "-p", "--all"]).contains("credscanary"), "never committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_credentials_in_the_checkout_are_hidden() {
    hidden("GOOGLE_APPLICATION_CREDENTIALS").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_credentials_in_the_checkout_are_hidden() {
    hidden("AWS_SHARED_CREDENTIALS_FILE").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_federated_token_in_the_checkout_is_hidden() {
    hidden("AZURE_FEDERATED_TOKEN_FILE").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentials_file_in_the_home_directory_is_not_in_the_jails_view() {
    require!(Need::UserNamespaces);
    let home = tempfile::tempdir().unwrap();
    let creds = home.path().join("runner-temp-sa-key.json");
    std::fs::write(&creds, "{\"private_key\": \"-----BEGIN PRIVATE KEY-----homecanary42-----END\"}\n").unwrap();
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH)]);
    let mock = MockModel::start().await;
    // (Not the path itself: the variable's name makes its value a secret the diff guard refuses.)
    let script = "echo LISTED-HOME; ls -la \"$HOME\"; for f in \"$HOME\"/*.json; do cat \"$f\"; done\n";
    mock.turn(write("peek.sh", script), false).turn(cmd("sh peek.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, "homecreds", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let env = [("HOME", home.path().to_str().unwrap()), ("GOOGLE_APPLICATION_CREDENTIALS", creds.to_str().unwrap())];
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.report()["errors"]);
    let seen = all_tool_results(&mock);
    assert!(seen.contains("LISTED-HOME"), "the listing ran: {seen}");
    // The jail's home is the run's own: the host's files are not in the view at all.
    assert!(!seen.contains("runner-temp-sa-key.json"), "the host's home is shown: {seen}");
    assert!(!seen.contains("homecanary42"), "the model read the credentials in the home: {seen}");
}

/// A run whose fallback reads credentials files that no variable names (the files `extra`
/// writes under the home); a command looks at every file in the home.
async fn files_named_in_files(name: &str, fallback: &str, extra: &[(&str, &str)], env: &[(&str, &str)], hidden: &str) {
    require!(Need::UserNamespaces);
    let home = tempfile::tempdir().unwrap();
    for (path, text) in extra {
        let p = home.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text.replace("$HOME", home.path().to_str().unwrap())).unwrap();
    }
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH)]);
    let mock = MockModel::start().await;
    let script = "echo LISTED-HOME; cd \"$HOME\" && find . -type f -exec wc -c {} + && find . -type f -exec cat {} +\n";
    mock.turn(write("peek.sh", script), false).turn(cmd("sh peek.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, name, &mock, OPEN_POLICY, "pr: { enabled: false }\n")
        .replace("verify:", &format!("  fallback:\n    - {fallback}\nverify:"));
    let home_var = home.path().to_str().unwrap().to_string();
    let values: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.replace("$HOME", &home_var))).collect();
    let mut vars = vec![("HOME", home_var.as_str())];
    vars.extend(values.iter().map(|(k, v)| (*k, v.as_str())));
    let run = run_job_env(&repo, &yaml, &vars).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.report()["errors"]);
    let seen = all_tool_results(&mock);
    assert!(!seen.contains("tokencanary"), "the model read a credentials file: {seen}");
    // Not in the view at all (the jail's home is the run's own), not read and then redacted.
    assert!(seen.contains("LISTED-HOME"), "the listing ran: {seen}");
    assert!(!seen.contains(hidden), "the file is in the jail's view: {seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_an_aws_profile_names_is_not_in_the_view() {
    let config = "[default]\nregion = us-east-1\nrole_arn = arn:aws:iam::123456789012:role/ci\nweb_identity_token_file = $HOME/eks/hidden-token-file\n";
    files_named_in_files(
        "awsprofile",
        "{ provider: bedrock, name: anthropic.claude-3-5-haiku-20241022-v1:0 }",
        &[(".aws/config", config), ("eks/hidden-token-file", "eyJ.tokencanary-aws.sig\n")],
        &[],
        "eks/hidden-token-file",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_token_file_a_google_credentials_file_names_is_not_in_the_view() {
    let creds = r#"{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/gh",
 "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token",
 "credential_source": {"file": "$HOME/oidc/hidden-token-file"}}"#;
    files_named_in_files(
        "gsubject",
        "{ provider: vertex, name: gemini-2.5-pro, project: my-proj, region: us-central1 }",
        &[("wif.json", creds), ("oidc/hidden-token-file", "eyJ.tokencanary-google.sig\n")],
        &[("GOOGLE_APPLICATION_CREDENTIALS", "$HOME/wif.json")],
        "oidc/hidden-token-file",
    )
    .await;
}
