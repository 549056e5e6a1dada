//! Tests of the credential places the environment names: hidden as named and as they are,
//! their secrets registered.
use super::*;
use crate::policy::{Access, decide_path};
use std::collections::BTreeMap;

const KEY: &str = include_str!("../../../tests/data/github_app/app-key.pem");

fn env(vars: &[(&str, &Path)]) -> RunEnv {
    RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.display().to_string())).collect::<BTreeMap<_, _>>())
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn named_places_are_hidden_as_named_and_as_they_are_wherever_they_lie() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let root = base.join("repo");
    write(&root.join("gha-creds-1.json"), "{}");
    write(&root.join("gcloud/credentials.db"), "db");
    write(&base.join("temp/docker/config.json"), "{}");
    write(&base.join("temp/azure/msal_token_cache.json"), "{}");
    write(&base.join("temp/gh/hosts.yml"), "");
    write(&base.join("kube/a"), "");
    write(&base.join("kube/b"), "");
    std::os::unix::fs::symlink(&root, base.join("link")).unwrap();
    let kube = format!("{}:{}", base.join("kube/a").display(), base.join("kube/b").display());
    let e = env(&[
        ("GOOGLE_APPLICATION_CREDENTIALS", &base.join("link/gha-creds-1.json")),
        ("CLOUDSDK_CONFIG", &root.join("gcloud")),
        ("DOCKER_CONFIG", &base.join("temp/docker")),
        ("AZURE_CONFIG_DIR", &base.join("temp/azure")),
        ("GH_CONFIG_DIR", &base.join("temp/gh")),
        ("KUBECONFIG", Path::new(&kube)),
        ("AWS_SHARED_CREDENTIALS_FILE", &base.join("missing")),
    ]);
    let mut policy = Policy::builtin();
    hide_named(&mut policy, &e, [base.join("temp/token")], &root);
    let mut hidden = policy.hidden_files.clone();
    hidden.sort();
    let want = [
        base.join("kube/a"),
        base.join("kube/b"),
        base.join("link/gha-creds-1.json"),
        root.join("gcloud"),
        root.join("gha-creds-1.json"),
        base.join("temp/azure"),
        base.join("temp/docker"),
        base.join("temp/gh"),
    ];
    let mut want = want.to_vec();
    want.sort();
    assert_eq!(hidden, want, "a missing place has nothing to hide");
    for rel in ["gha-creds-1.json", "gcloud", "gcloud/credentials.db", "./gcloud/x/../credentials.db"] {
        assert!(!decide_path(&policy, rel, Access::Read).allowed, "{rel} is readable");
        assert!(!decide_path(&policy, rel, Access::Write).allowed, "{rel} is writable");
    }
    assert!(decide_path(&policy, "gcloud-notes.txt", Access::Read).allowed);
}

#[test]
fn the_secrets_of_named_files_and_directories_are_registered() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let sa = serde_json::json!({"type": "service_account", "private_key": KEY, "client_email": "a@b"}).to_string();
    write(&d.join("gha-creds-2.json"), &sa);
    write(&d.join("gcloud/legacy_credentials/me@example.com/adc.json"), r#"{"refresh_token": "1//0gNestedRefresh"}"#);
    write(&d.join("gcloud/access_tokens.db"), "SQLite\u{0}{\"access_token\": \"ya29.SqliteAccess\"}");
    write(&d.join("docker/config.json"), r#"{"auths": {"r": {"identitytoken": "docker-identity-tok"}}}"#);
    write(&d.join("outside/linked.json"), r#"{"token": "never-read-token"}"#);
    write(&d.join("kube/config"), "users:\n- user:\n    token: kube-token-value\n");
    write(&d.join("web-identity"), "eyJhbGciOi.web.identity\n");
    write(&d.join("big.json"), &format!("{{\"token\": \"big-file-token\", \"pad\": \"{}\"}}", "x".repeat(70_000)));
    std::os::unix::fs::symlink(d.join("outside"), d.join("docker/linked")).unwrap();
    let e = env(&[
        ("GOOGLE_APPLICATION_CREDENTIALS", &d.join("gha-creds-2.json")),
        ("CLOUDSDK_CONFIG", &d.join("gcloud")),
        ("DOCKER_CONFIG", &d.join("docker")),
        ("KUBECONFIG", &d.join("kube/config")),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", &d.join("web-identity")),
        ("AWS_SHARED_CREDENTIALS_FILE", &d.join("big.json")),
    ]);
    let redactor = Redactor::new();
    register_named(&redactor, &e);
    let line = KEY.lines().nth(3).unwrap();
    for secret in [
        line,
        "1//0gNestedRefresh",
        "ya29.SqliteAccess",
        "docker-identity-tok",
        "kube-token-value",
        "eyJhbGciOi.web.identity",
    ] {
        assert!(!redactor.apply(secret).contains(secret), "{secret} is not registered");
    }
    for not in ["never-read-token", "big-file-token"] {
        assert_eq!(redactor.apply(not), not, "{not}: through a link, or too big");
    }
}

#[test]
fn a_budget_runs_out() {
    let mut b = Budget { files: 2, bytes: 10 };
    assert!(b.take(4) && !b.take(7) && b.take(6) && !b.take(0));
}
