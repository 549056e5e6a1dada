//! Tests of what counts as a credential and which of its values are secrets.
use super::*;

const KEY: &str = include_str!("../../tests/data/github_app/app-key.pem");

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn has(found: &[String], s: &str) -> bool {
    found.iter().any(|f| f == s)
}

fn key_lines() -> Vec<&'static str> {
    KEY.lines().filter(|l| !l.starts_with("-----")).collect()
}

#[test]
fn a_pem_private_key_is_a_credential_whole_joined_and_line_by_line() {
    let text = format!("notes\n{KEY}\nmore");
    assert!(is_credential(&text));
    let found = secrets_in(&text);
    assert!(has(&found, KEY.trim()), "the block whole");
    assert!(has(&found, &key_lines().concat()), "the body on one line");
    for line in key_lines() {
        assert!(has(&found, line), "{line}");
    }
    assert!(!has(&found, "notes"));
    // A certificate alone is no credential.
    let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";
    assert!(!is_credential(cert));
    assert!(secrets_in(cert).iter().all(|s| !s.contains("MIIBszCCAVmgAwIBAgIU")), "{:?}", secrets_in(cert));
}

#[test]
fn google_credential_files_are_credentials_and_give_their_secrets() {
    let sa = serde_json::json!({
        "type": "service_account", "project_id": "p", "private_key_id": "abcdef123456",
        "private_key": KEY, "client_email": "sa@p.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token"
    })
    .to_string();
    assert!(is_credential(&sa));
    let found = secrets_in(&sa);
    assert!(has(&found, KEY.trim()));
    assert!(key_lines().iter().all(|l| has(&found, l)));
    assert!(!has(&found, "https://oauth2.googleapis.com/token"), "token_uri is no secret");
    let user = r#"{"type": "authorized_user", "client_id": "id.apps", "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": "1//0gRefreshTokenValue"}"#;
    assert!(is_credential(user));
    let found = secrets_in(user);
    assert!(has(&found, "d-FL95Q19q7MQmFpd7hHD0Ty") && has(&found, "1//0gRefreshTokenValue"), "{found:?}");
    let external = r#"{"type": "external_account", "audience": "//iam/x", "token_type": "Bearer"}"#;
    assert!(is_credential(external), "the type alone");
    assert!(!has(&secrets_in(external), "Bearer"), "token_type is no secret");
    // Nested, as an MSAL or gcloud cache keeps them.
    assert!(is_credential(r#"{"accounts": [{"refresh_token": "rt-123456789"}]}"#));
    for plain in [r#"{"name": "app", "version": "1.0"}"#, r#"{"type": "module"}"#, "[1, 2]", "not json", ""] {
        assert!(!is_credential(plain), "{plain}");
    }
}

#[test]
fn key_value_files_give_the_values_under_a_secrets_name() {
    let aws = "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\naws_session_token=\"FwoGZXIvYXdzEXAMPLE\"\nregion = eu-west-1\n";
    let found = secrets_in(aws);
    assert!(has(&found, "wJalrXUtnFEMI/K7MDENG") && has(&found, "FwoGZXIvYXdzEXAMPLE"), "{found:?}");
    assert!(!has(&found, "eu-west-1"));
    let kube =
        format!("users:\n- name: ci\n  user:\n    token: kube-token-0123456789\n    client-key-data: {}\n", b64(KEY));
    let found = secrets_in(&kube);
    assert!(has(&found, "kube-token-0123456789"), "{found:?}");
    assert!(has(&found, &b64(KEY)), "the key's base64");
    assert!(key_lines().iter().all(|l| has(&found, l)), "and the key it decodes to");
    let gh = "github.com:\n    oauth_token: gho_ExampleOauthToken123\n    user: me\n";
    assert!(has(&secrets_in(gh), "gho_ExampleOauthToken123"));
}

#[test]
fn dockers_auth_gives_the_pair_and_its_password() {
    let docker = format!(
        r#"{{"auths": {{"ghcr.io": {{"auth": "{}"}}}}, "credsStore": "desktop"}}"#,
        b64("me:dckr_pat_Secret123")
    );
    let found = secrets_in(&docker);
    for s in [b64("me:dckr_pat_Secret123").as_str(), "me:dckr_pat_Secret123", "dckr_pat_Secret123"] {
        assert!(has(&found, s), "{s}: {found:?}");
    }
    assert!(!has(&found, "desktop"));
}

#[test]
fn a_one_word_file_is_a_token_whole() {
    assert!(has(&secrets_in("eyJhbGciOiJSUzI1NiJ9.payload.sig\n"), "eyJhbGciOiJSUzI1NiJ9.payload.sig"));
    assert!(!has(&secrets_in("two words"), "two words"));
}

#[test]
fn an_extraheader_gives_the_header_the_base64_the_pair_and_the_token() {
    let token = "ghs_CheckoutToken0123456789";
    let encoded = b64(&format!("x-access-token:{token}"));
    let found = header_secrets(&format!("AUTHORIZATION: basic {encoded}"));
    for s in [format!("AUTHORIZATION: basic {encoded}"), format!("basic {encoded}"), encoded.clone()] {
        assert!(has(&found, &s), "{s}");
    }
    assert!(has(&found, &format!("x-access-token:{token}")) && has(&found, token), "{found:?}");
    assert!(!has(&found, "x-access-token"), "the fixed user name is no secret");
    let bearer = header_secrets("Authorization: Bearer glpat-Example0123");
    assert!(has(&bearer, "glpat-Example0123"));
    let bare = header_secrets("PRIVATE-TOKEN: glpat-Other0123");
    assert!(has(&bare, "glpat-Other0123"));
    // Not base64: the credentials as they are.
    assert!(has(&header_secrets("Authorization: Basic !!notbase64!!"), "!!notbase64!!"));
}

#[test]
fn urls_give_their_user_and_password() {
    let config = "[remote \"origin\"]\n\turl = https://gitlab-ci-token:glcbt-JobToken123@gitlab.example.com/g/p.git\n\
                  [url \"https://ghp_InsteadOfToken1:x-oauth-basic@github.com/\"]\n\tinsteadOf = https://github.com/\n\
                  [submodule \"s\"]\n\turl = https://user:p%40ss-word9@host/s.git\n\tpushurl = ssh://git@host/s.git\n";
    let found = userinfo_secrets(config);
    for s in ["glcbt-JobToken123", "ghp_InsteadOfToken1", "p%40ss-word9", "p@ss-word9"] {
        assert!(has(&found, s), "{s}: {found:?}");
    }
    for s in ["gitlab-ci-token", "x-oauth-basic", "git", "user"] {
        assert!(!has(&found, s), "{s}: {found:?}");
    }
    assert!(userinfo_secrets("no url here, and https://host/path").is_empty());
}

#[test]
fn secret_keys_are_told_from_their_neighbours() {
    for k in [
        "refresh_token",
        "client_secret",
        "clientSecret",
        "private_key",
        "aws_secret_access_key",
        "token",
        "auth",
        "client-key-data",
        "password",
        "oauth_token",
        "secret",
    ] {
        assert!(is_secret_key(k), "{k}");
    }
    for k in
        ["token_type", "token_uri", "private_key_id", "aws_access_key_id", "client_id", "type", "user", "authority"]
    {
        assert!(!is_secret_key(k), "{k}");
    }
}

#[test]
fn json_rows_inside_other_bytes_give_their_secrets() {
    // gcloud's credentials.db: SQLite pages around JSON rows.
    let blob = "SQLite format 3\u{1}\u{2}tablecredentials{\"client_id\": \"x\", \"refresh_token\": \"1//0gSqliteRefresh\", \"token_type\": \"Bearer\"}\u{0}more";
    let found = secrets_in(blob);
    assert!(has(&found, "1//0gSqliteRefresh"), "{found:?}");
    assert!(!has(&found, "Bearer"));
    let cut = secrets_in("\"token\": \"unterminated-value");
    assert!(cut.iter().all(|s| !s.contains('"')), "{cut:?}");
}
