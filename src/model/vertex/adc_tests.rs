//! ADC's order, files it refuses and what it registers for redaction, from fake environments.

use super::*;
use serde_json::json;
use std::collections::BTreeMap;

const KEY: &str = include_str!("../../../tests/data/vertex/service-account-key.pem");

struct Scene {
    dir: tempfile::TempDir,
    http: reqwest::Client,
    redactor: Redactor,
}

impl Scene {
    fn new() -> Scene {
        Scene { dir: tempfile::tempdir().unwrap(), http: reqwest::Client::new(), redactor: Redactor::default() }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, v: &serde_json::Value) -> String {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, v.to_string()).unwrap();
        p.display().to_string()
    }

    fn env(&self, vars: &[(&str, &str)]) -> RunEnv {
        let mut all: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        all.entry("HOME".into()).or_insert_with(|| self.path("home").display().to_string());
        RunEnv::from_vars(all)
    }

    fn find(&self, env: &RunEnv, repo: Option<&Path>, dmi: Option<&str>) -> Result<Found, HoneError> {
        let cx = Context { http: &self.http, redactor: &self.redactor, repo };
        find_with(env, &cx, || dmi.map(str::to_string))
    }
}

fn service_account(project: &str) -> serde_json::Value {
    json!({"type": "service_account", "project_id": project, "private_key_id": "k1", "private_key": KEY,
           "client_email": "sa@p.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token"})
}

fn user() -> serde_json::Value {
    json!({"type": "authorized_user", "client_id": "cid", "client_secret": "gcloud-client-secret",
           "refresh_token": "1//gcloud-refresh-token", "quota_project_id": "quota-proj"})
}

#[test]
fn the_named_file_comes_first_then_gcloud_then_the_metadata_server() {
    let s = Scene::new();
    let named = s.write("keys/sa.json", &service_account("sa-proj"));
    s.write("home/.config/gcloud/application_default_credentials.json", &user());
    let all = s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &named), ("GCE_METADATA_HOST", "127.0.0.1:9")]);
    let f = s.find(&all, None, Some("Google")).unwrap();
    assert_eq!((f.kind, f.project.as_deref()), ("service_account", Some("sa-proj")));

    let f = s.find(&s.env(&[("GCE_METADATA_HOST", "127.0.0.1:9")]), None, None).unwrap();
    assert_eq!((f.kind, f.project.as_deref()), ("authorized_user", Some("quota-proj")));
    let elsewhere = s.write("cfg/application_default_credentials.json", &service_account("cfg-proj"));
    let cfg = elsewhere.trim_end_matches("/application_default_credentials.json");
    let f = s.find(&s.env(&[("CLOUDSDK_CONFIG", cfg)]), None, None).unwrap();
    assert_eq!(f.project.as_deref(), Some("cfg-proj"), "CLOUDSDK_CONFIG moves gcloud's directory");

    let bare = Scene::new();
    let f = bare.find(&bare.env(&[("GCE_METADATA_HOST", "127.0.0.1:9")]), None, None).unwrap();
    assert_eq!((f.kind, f.project), ("metadata server", None));
    let f = bare.find(&bare.env(&[]), None, Some("Google Compute Engine")).unwrap();
    assert_eq!(f.kind, "metadata server", "on a Google Cloud machine");
    let e = bare.find(&bare.env(&[]), None, Some("VirtualBox")).err().unwrap();
    assert_eq!(e.code, Code::Spec);
    assert!(e.message.contains("GOOGLE_APPLICATION_CREDENTIALS is not set"), "{}", e.render());
    assert!(e.hint.unwrap().contains("gcloud auth application-default login"));
}

#[test]
fn a_named_file_that_is_missing_is_an_error_not_a_fall_through() {
    let s = Scene::new();
    s.write("home/.config/gcloud/application_default_credentials.json", &user());
    let missing = s.path("nope.json").display().to_string();
    let e = s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &missing)]), None, None).err().unwrap();
    assert_eq!(e.code, Code::Spec);
    assert!(e.message.contains("GOOGLE_APPLICATION_CREDENTIALS") && e.message.contains("nope.json"), "{}", e.message);
}

#[test]
fn bad_files_are_intake_errors_naming_the_file() {
    let s = Scene::new();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("broken.json", b"{\"type\": \"service_account\", ".to_vec(), "is not JSON"),
        (
            "pem.json",
            service_account_with_key("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n"),
            "not a PEM private key",
        ),
        (
            "rsa.json",
            service_account_with_key("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            "not a usable RSA key",
        ),
        ("huge.json", vec![b' '; 70 * 1024], "larger than 64 KiB"),
        (
            "exec.json",
            json!({"type": "external_account", "audience": "a", "subject_token_type": "t",
            "token_url": "https://sts.googleapis.com/v1/token",
            "credential_source": {"executable": {"command": "/usr/bin/id"}}})
            .to_string()
            .into_bytes(),
            "never runs a program",
        ),
    ];
    for (name, bytes, why) in cases {
        let p = s.path(name);
        std::fs::write(&p, bytes).unwrap();
        let env = s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", p.to_str().unwrap())]);
        let e = s.find(&env, None, None).err().unwrap();
        assert_eq!(e.code, Code::Spec, "{name}");
        assert!(e.message.contains(name) && e.message.contains(why), "{name}: {}", e.message);
    }
    let fifo = s.path("fifo.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", fifo.to_str().unwrap())]), None, None).err().unwrap();
    assert!(e.message.contains("not a regular file"), "a FIFO is never waited on: {}", e.message);
}

fn service_account_with_key(pem: &str) -> Vec<u8> {
    let mut v = service_account("p");
    v["private_key"] = json!(pem);
    v.to_string().into_bytes()
}

#[test]
fn credentials_inside_the_work_tree_only_as_the_file_the_jail_hides() {
    let s = Scene::new();
    let repo = s.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    // google-github-actions/auth's file in the checkout: named by the variable, hidden by the jail.
    let inside = s.write("repo/gha-creds-1.json", &service_account("p"));
    assert!(s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &inside)]), Some(&repo), None).is_ok());
    // A link inside that leads out, and one outside that leads in: the repository decides where
    // its links lead.
    let outside = s.write("keys/sa.json", &service_account("p"));
    let link_in = repo.join("creds.json");
    std::os::unix::fs::symlink(&outside, &link_in).unwrap();
    let env = s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", link_in.to_str().unwrap())]);
    let e = s.find(&env, Some(&repo), None).err().unwrap();
    assert!(e.message.contains("inside the repository") && e.message.contains("link"), "{}", e.message);
    let link_out = s.path("link.json");
    std::os::unix::fs::symlink(&inside, &link_out).unwrap();
    let env = s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", link_out.to_str().unwrap())]);
    assert!(s.find(&env, Some(&repo), None).is_err());
    assert!(s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &outside)]), Some(&repo), None).is_ok());
    // Files the jail does not hide: gcloud's (a home inside the work tree) and a subject token.
    s.write("repo/home/.config/gcloud/application_default_credentials.json", &user());
    let home = repo.join("home").display().to_string();
    let e = s.find(&s.env(&[("HOME", &home)]), Some(&repo), None).err().unwrap();
    assert!(e.message.contains("gcloud's") && e.message.contains("could read and change it"), "{}", e.message);
    let ext = s.write("keys/ext.json", &json!({"type": "external_account", "audience": "a", "subject_token_type": "t",
        "token_url": "https://sts.googleapis.com/v1/token", "credential_source": {"file": repo.join("token").display().to_string()}}));
    let e = s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &ext)]), Some(&repo), None).err().unwrap();
    assert!(e.message.contains("subject token file"), "{}", e.message);
}

#[test]
fn the_files_secrets_are_registered_for_redaction() {
    let s = Scene::new();
    let named = s.write("keys/sa.json", &service_account("p"));
    s.find(&s.env(&[("GOOGLE_APPLICATION_CREDENTIALS", &named)]), None, None).unwrap();
    let line = KEY.lines().nth(5).unwrap();
    assert!(!s.redactor.apply(&format!("leaked: {line}")).contains(line), "a line of the private key");
    let s = Scene::new();
    s.write("home/.config/gcloud/application_default_credentials.json", &user());
    s.find(&s.env(&[]), None, None).unwrap();
    let out = s.redactor.apply("gcloud-client-secret 1//gcloud-refresh-token");
    assert!(!out.contains("gcloud-client-secret") && !out.contains("gcloud-refresh-token"), "{out}");
}
