//! Second review of issue 40: credential files CI commonly leaves in a checkout, untracked or
//! ignored, that the scan does not find. Each is in the jail's view (the checkout) and none is
//! read-denied by the default policy (or, for `.npmrc`, by the policy docs/policy.md shows), and
//! none of their secrets is registered any other way when the step that wrote the file had the
//! secret only in its own `env:` (or interpolated it into the script). Each test fails today.
use super::*;
use base64::Engine;

const KEY: &str = include_str!("../../tests/data/github_app/app-key.pem");

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// Whether the untracked file `rel` holding `bytes` is found, and `secret` then registered.
fn found_and_registered(rel: &str, bytes: &[u8], secret: &str) -> (bool, bool) {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), rel, bytes);
    let redactor = Redactor::new();
    let found = scan_paths(t.path(), &[rel.to_string()], &[], &redactor);
    (found == [rel], !redactor.apply(secret).contains(secret))
}

#[test]
fn an_aws_credentials_file_is_found() {
    let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let ini = format!("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {secret}\n");
    assert_eq!(found_and_registered(".aws/credentials", ini.as_bytes(), secret), (true, true));
}

#[test]
fn a_kubeconfig_with_a_client_key_is_found() {
    let data = base64::engine::general_purpose::STANDARD.encode(KEY);
    let line = KEY.lines().nth(5).unwrap();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://k8s.example.com\n  name: prod\nusers:\n- name: ci\n  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: {data}\n"
    );
    assert_eq!(found_and_registered("kubeconfig", yaml.as_bytes(), line), (true, true));
}

#[test]
fn a_kubeconfig_with_a_token_is_found() {
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";
    let yaml = format!("apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n    token: {token}\n");
    assert_eq!(found_and_registered("deploy/kubeconfig.yaml", yaml.as_bytes(), token), (true, true));
}

#[test]
fn a_docker_config_with_auths_is_found() {
    let auth = base64::engine::general_purpose::STANDARD.encode("ci-bot:dckr_pat_SecretDockerToken123");
    let json = format!(r#"{{"auths": {{"ghcr.io": {{"auth": "{auth}"}}}}}}"#);
    let found = found_and_registered(".docker/config.json", json.as_bytes(), "dckr_pat_SecretDockerToken123");
    assert_eq!(found, (true, true));
}

#[test]
fn a_one_line_token_file_is_found() {
    let jwt = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL3Rva2VuIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
    assert_eq!(found_and_registered("oidc-token", jwt.as_bytes(), jwt), (true, true));
}

/// `.npmrc` is read-denied by the default list, but a policy's own `paths.read_deny` replaces
/// that list (docs/policy.md's example does: `["**/.env", "**/*.pem", "**/id_*"]`), and its
/// `_authToken` line is neither a credential by its form nor a `key = value` the extractor reads
/// (the key is taken up to the first `:`, the registry's).
#[test]
fn an_npmrc_with_an_auth_token_is_found() {
    let token = "npm_SecretNpmAutomationToken0123456789";
    let npmrc = format!("registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={token}\n");
    assert_eq!(found_and_registered(".npmrc", npmrc.as_bytes(), token), (true, true));
}

#[test]
fn a_pypirc_is_found() {
    let token = "pypi-AgEIcHlwaS5vcmcSecretUploadToken0123";
    let ini = format!("[distutils]\nindex-servers = pypi\n[pypi]\nusername = __token__\npassword = {token}\n");
    assert_eq!(found_and_registered(".pypirc", ini.as_bytes(), token), (true, true));
}

/// A PKCS#12 bundle (iOS and Android signing: `echo $P12 | base64 -d > dist.p12`): binary, so
/// neither PEM nor JSON, and `**/*.p12` is not read-denied.
#[test]
fn a_pkcs12_bundle_is_found() {
    let mut der = vec![0x30, 0x82, 0x0a, 0x1f, 0x02, 0x01, 0x03, 0x30, 0x82, 0x09, 0xe5, 0x06, 0x09, 0x2a];
    der.extend((0u8..=255).cycle().take(2000));
    let (found, _) = found_and_registered("signing/dist.p12", &der, "unused");
    assert!(found, "a PKCS#12 bundle in the checkout is not hidden");
}

/// An ignored directory is looked at one level deep only: a service account key in a
/// subdirectory of it (`.secrets/gcp/key.json`, with `.secrets/` ignored) is not found.
#[test]
fn a_credential_deep_in_an_ignored_directory_is_found() {
    let (dir, ws, _) = crate::git::tests::fixture(|d| {
        std::fs::write(d.join(".gitignore"), ".secrets/\n").unwrap();
    });
    let sa = serde_json::json!({"type": "service_account", "private_key": KEY}).to_string();
    write(dir.path(), ".secrets/gcp/key.json", sa.as_bytes());
    let (dirty, ignored) = ws.intake_status().unwrap();
    assert_eq!(ignored, [".secrets"]);
    let found = scan_paths(ws.root(), &untracked(&ws, &dirty), &ignored, &Redactor::new());
    assert_eq!(found, [".secrets/gcp/key.json"]);
}

/// A `.netrc` (a policy's own `read_deny` may drop the default glob that hides it): found by its
/// form, its password registered.
#[test]
fn a_netrc_is_found() {
    let secret = "netrcSecretPassword0123456789";
    let netrc = format!("machine github.com\n  login ci-bot\n  password {secret}\n");
    assert_eq!(found_and_registered(".netrc", netrc.as_bytes(), secret), (true, true));
}
