//! The chain's order, from a made-up environment and profile files in a temp dir; what it
//! registers with the redactor; and that no AWS credential reaches a command.

use super::*;
use crate::model::bedrock::profile;
use std::collections::BTreeMap;
use std::path::Path;

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn model(extra: &str) -> ModelSpec {
    let yaml = format!(
        "version: 1\nname: t\ntask: x\nmodel:\n  provider: bedrock\n  name: us.anthropic.claude-sonnet-4-5-20250929-v1:0\n{extra}verify:\n  - {{ name: c, run: \"true\" }}\n"
    );
    crate::spec::parse(Path::new("job.yaml"), &yaml).unwrap().model
}

fn env(home: &Path, vars: &[(&str, &str)]) -> RunEnv {
    let mut all: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    all.insert("HOME".into(), home.display().to_string());
    RunEnv::from_vars(all)
}

/// The chain's answer for `vars` (and the files under `home`), with the redactor it filled.
fn chain(home: &Path, vars: &[(&str, &str)]) -> (Result<Signer, HoneError>, Redactor) {
    let env = env(home, vars);
    let profile = profile::load(&env).unwrap();
    let redactor = Redactor::default();
    let sts = || Ok((reqwest::Client::new(), "http://127.0.0.1:9/".to_string()));
    let cx = Context { env: &env, profile: &profile, redactor: &redactor, sts: &sts };
    (signer(&model(""), &cx), redactor)
}

fn home_with(config: &str, credentials: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".aws")).unwrap();
    std::fs::write(dir.path().join(".aws/config"), config).unwrap();
    std::fs::write(dir.path().join(".aws/credentials"), credentials).unwrap();
    std::fs::write(dir.path().join("token"), "eyJhbGciOi.payload.sig").unwrap();
    dir
}

fn describe(r: &Result<Signer, HoneError>) -> String {
    match r {
        Ok(Signer::Bearer(k)) => format!("bearer {k}"),
        Ok(Signer::Static(c)) => format!("static {} token={:?}", c.access_key_id, c.session_token),
        Ok(Signer::Refreshing(_)) => "web identity".into(),
        Err(e) => format!("error {}: {} / {}", e.code, e.message, e.hint.clone().unwrap_or_default()),
    }
}

#[test]
fn the_chain_takes_the_first_that_is_set() {
    let home = home_with("", "[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profilesecret123\n");
    let token = home.path().join("token");
    let token = token.to_str().unwrap();
    let keys =
        [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", SECRET), ("AWS_SESSION_TOKEN", "envsessiontoken")];
    let web = [("AWS_WEB_IDENTITY_TOKEN_FILE", token), ("AWS_ROLE_ARN", "arn:aws:iam::1:role/ci")];
    let bearer = [("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrockapikey")];
    let all: Vec<(&str, &str)> = bearer.iter().chain(&keys).chain(&web).copied().collect();
    assert_eq!(describe(&chain(home.path(), &all).0), "bearer ABSKbedrockapikey");
    let no_bearer: Vec<(&str, &str)> = keys.iter().chain(&web).copied().collect();
    assert_eq!(describe(&chain(home.path(), &no_bearer).0), "static AKIAENV token=Some(\"envsessiontoken\")");
    assert_eq!(describe(&chain(home.path(), &web).0), "web identity");
    assert_eq!(describe(&chain(home.path(), &[]).0), "static AKIAPROFILE token=None");
}

#[test]
fn keys_from_the_environment_and_from_files_are_registered_for_redaction() {
    let home = home_with(
        "",
        "[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profilesecret123\naws_session_token = profiletoken456\n",
    );
    let (r, redactor) = chain(home.path(), &[]);
    assert!(matches!(r, Ok(Signer::Static(_))));
    for s in ["profilesecret123", "profiletoken456"] {
        assert!(!redactor.apply(&format!("x {s} y")).contains(s), "{s}");
    }
    let (_, redactor) = chain(home.path(), &[("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", SECRET)]);
    assert!(!redactor.apply(SECRET).contains(SECRET));
    let token = home.path().join("token");
    let web = [("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()), ("AWS_ROLE_ARN", "arn:aws:iam::1:role/ci")];
    let (r, redactor) = chain(home.path(), &web);
    assert!(matches!(r, Ok(Signer::Refreshing(_))));
    assert!(!redactor.apply("eyJhbGciOi.payload.sig").contains("payload"), "the token, before any request");
    let (_, redactor) = chain(home.path(), &[("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrockapikey")]);
    assert!(!redactor.apply("ABSKbedrockapikey").contains("ABSKbedrockapikey"));
}

#[test]
fn a_profile_with_a_web_identity_and_a_named_profile() {
    let config = "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\nweb_identity_token_file = TOKEN\n[profile gone]\nrole_arn = arn:aws:iam::1:role/x\nweb_identity_token_file = /nonexistent/token\n";
    let home = home_with("", "");
    let token = home.path().join("token");
    std::fs::write(home.path().join(".aws/config"), config.replace("TOKEN", token.to_str().unwrap())).unwrap();
    assert_eq!(describe(&chain(home.path(), &[("AWS_PROFILE", "ci")]).0), "web identity");
    let e = describe(&chain(home.path(), &[("AWS_PROFILE", "gone")]).0);
    assert!(e.starts_with("error E_SPEC") && e.contains("/nonexistent/token"), "{e}");
    let e = describe(&chain(home.path(), &[("AWS_PROFILE", "nope")]).0);
    assert!(e.contains("AWS_PROFILE names `nope`"), "{e}");
}

#[test]
fn what_hone_does_not_do_is_said_never_done() {
    let home = home_with(
        "[default]\ncredential_process = /usr/bin/touch /tmp/hone-ran-a-program\n[profile sso]\nsso_session = corp\n[profile chain]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n",
        "",
    );
    let e = describe(&chain(home.path(), &[]).0);
    assert!(e.contains("never runs a program") && e.contains("export-credentials"), "{e}");
    assert!(!Path::new("/tmp/hone-ran-a-program").exists());
    assert!(describe(&chain(home.path(), &[("AWS_PROFILE", "sso")]).0).contains("SSO"));
    assert!(describe(&chain(home.path(), &[("AWS_PROFILE", "chain")]).0).contains("source_profile"));
}

#[test]
fn nothing_set_or_half_set_is_an_intake_error_naming_the_variables() {
    let home = home_with("", "");
    let e = describe(&chain(home.path(), &[]).0);
    for v in [
        "error E_SPEC",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_PROFILE",
    ] {
        assert!(e.contains(v), "{v}: {e}");
    }
    let e = describe(&chain(home.path(), &[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds")]).0);
    assert!(e.contains("does not read container credentials"), "{e}");
    let e = describe(&chain(home.path(), &[("AWS_ACCESS_KEY_ID", "AKIAENV")]).0);
    assert!(e.contains("only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "{e}");
    let e = describe(&chain(home.path(), &[("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent")]).0);
    assert!(e.contains("AWS_ROLE_ARN is not"), "{e}");
    let e = describe(&chain(home.path(), &[("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent"), ("AWS_ROLE_ARN", "r")]).0);
    assert!(e.contains("not a file"), "{e}");
    let token = home.path().join("token");
    let bad = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
        ("AWS_ROLE_ARN", "r"),
        ("AWS_ROLE_SESSION_NAME", "no spaces allowed"),
    ];
    assert!(describe(&chain(home.path(), &bad).0).contains("session name"));
}

#[test]
fn the_region_from_the_spec_then_the_environment_then_the_profile() {
    let home = home_with("[default]\nregion = eu-north-1\n", "");
    let region_of = |extra: &str, vars: &[(&str, &str)]| {
        let env = env(home.path(), vars);
        let p = profile::load(&env).unwrap();
        region(&model(extra), &env, &p).map_err(|e| e.message)
    };
    let both = [("AWS_REGION", "us-west-2"), ("AWS_DEFAULT_REGION", "ap-south-1")];
    assert_eq!(region_of("  region: eu-west-3\n", &both), Ok("eu-west-3".into()));
    assert_eq!(region_of("", &both), Ok("us-west-2".into()));
    assert_eq!(region_of("", &both[1..]), Ok("ap-south-1".into()));
    assert_eq!(region_of("", &[]), Ok("eu-north-1".into()));
    let e = region_of("", &[("AWS_REGION", "us-east-1.evil.example/")]).unwrap_err();
    assert!(e.contains("`AWS_REGION` is `us-east-1.evil.example/`, which is not an AWS region"), "{e}");
    std::fs::write(home.path().join(".aws/config"), "").unwrap();
    assert!(region_of("", &[]).unwrap_err().contains("no AWS region"));
}

/// Commands get no AWS credential, even from a policy that passes them by name; only
/// `env.pass_secrets` could, on purpose.
#[test]
fn no_aws_credential_reaches_a_command() {
    let secrets = [
        ("AWS_ACCESS_KEY_ID", "AKIAENVKEYID"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", "sessiontoken123"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/token"),
        ("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrockapikey"),
    ];
    let run_env = env(Path::new("/home/u"), &secrets);
    let mut policy = crate::policy::Policy::builtin().clone();
    policy.env_pass.extend(secrets.iter().map(|(k, _)| k.to_string()));
    let passed = crate::sandbox::command_env(&policy, &run_env, std::path::Path::new("/work"));
    for (name, value) in secrets {
        assert!(!passed.iter().any(|(k, v)| k == name || v == value), "{name} reaches commands: {passed:?}");
    }
}
