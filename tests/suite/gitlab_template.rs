//! The GitLab CI/CD template (`workflows/gitlab/hone.gitlab-ci.yml`): its inputs are declared,
//! described and used; its reports are the files hone writes; and its script, run by `sh` as a
//! runner would, reads the job spec of a merge request from the target branch (never the merge
//! request's own), passes the merge request's iid, and installs only a release binary whose
//! checksum matches. `.ci/run` validates the rendered template against GitLab's schema.

use crate::common::repo::TestRepo;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const TEMPLATE: &str = "workflows/gitlab/hone.gitlab-ci.yml";

/// The spec header and the job, parsed.
pub(crate) fn template() -> (Value, Value) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TEMPLATE)).unwrap();
    let (head, body) = text.split_once("\n---\n").expect("a spec header, then `---`");
    let head: Value = serde_saphyr::from_str(head).unwrap();
    let body: Value = serde_saphyr::from_str(body).unwrap();
    let job = body["$[[ inputs.name ]]"].clone();
    assert!(job.is_object(), "one job, named by the `name` input: {body}");
    (head["spec"]["inputs"].clone(), job)
}

/// Every `$[[ inputs.NAME ]]` in `text`.
fn used_inputs(text: &str) -> BTreeSet<String> {
    text.match_indices("$[[")
        .filter_map(|(at, _)| {
            let rest = &text[at + 3..];
            let inner = rest[..rest.find("]]")?].trim();
            inner.strip_prefix("inputs.").map(str::to_string)
        })
        .collect()
}

#[test]
fn every_input_is_described_and_used_and_every_use_is_declared() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TEMPLATE)).unwrap();
    let (inputs, _) = template();
    let declared: BTreeSet<String> = inputs.as_object().unwrap().keys().cloned().collect();
    let body = text.split_once("\n---\n").unwrap().1;
    assert_eq!(used_inputs(body), declared, "inputs used in the job and inputs declared");
    for (name, spec) in inputs.as_object().unwrap() {
        assert!(spec["description"].as_str().is_some_and(|d| !d.is_empty()), "input `{name}` has no description");
    }
    // The image is the one input without a default: the checks need their own toolchain.
    let mandatory: Vec<&String> =
        inputs.as_object().unwrap().iter().filter(|(_, s)| s.get("default").is_none()).map(|(n, _)| n).collect();
    assert_eq!(mandatory, ["image"]);
}

#[test]
fn the_reports_are_the_files_hone_writes_and_are_kept_however_the_job_ends() {
    let (inputs, job) = template();
    let dir = "$[[ inputs.report_dir ]]";
    let artifacts = &job["artifacts"];
    assert_eq!(artifacts["when"], "always");
    assert!(artifacts["paths"].as_array().unwrap().iter().any(|p| p == &format!("{dir}/")), "{artifacts}");
    let junit: Vec<&str> = artifacts["reports"]["junit"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(junit.contains(&format!("{dir}/junit.xml").as_str()), "{junit:?}");
    assert_eq!(artifacts["reports"]["codequality"], format!("{dir}/gl-code-quality.json"));
    let dotenv: Vec<&str> =
        artifacts["reports"]["dotenv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(dotenv.contains(&format!("{dir}/hone.env").as_str()), "{dotenv:?}");
    for file in ["junit.xml", "gl-code-quality.json", "hone.env"] {
        assert!(hone::output::dir::REPORT_FILES.contains(&file), "hone does not write {file}");
    }
    assert_eq!(inputs["report_dir"]["default"], ".hone/reports", "hone's default report dir");
}

#[test]
fn merge_requests_schedules_and_people_start_it_but_forks_and_hones_own_branches_do_not() {
    let (_, job) = template();
    let rules: Vec<(String, String)> = job["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["if"].as_str().unwrap_or("").to_string(), r["when"].as_str().unwrap_or("on_success").to_string()))
        .collect();
    let has = |needle: &str, when: &str| rules.iter().any(|(i, w)| i.contains(needle) && w == when);
    assert!(has("$CI_MERGE_REQUEST_SOURCE_PROJECT_ID != $CI_MERGE_REQUEST_PROJECT_ID", "never"), "{rules:?}");
    assert!(has("$CI_MERGE_REQUEST_SOURCE_BRANCH_NAME =~ /^hone\\//", "never"), "{rules:?}");
    assert!(has("$CI_MERGE_REQUEST_LABELS =~", "on_success"), "{rules:?}");
    assert!(has("$CI_PIPELINE_SOURCE == \"merge_request_event\"", "manual"), "{rules:?}");
    assert!(has("$CI_PIPELINE_SOURCE == \"schedule\"", "on_success"), "{rules:?}");
    assert!(has("$CI_PIPELINE_SOURCE == \"web\"", "manual"), "{rules:?}");
    // The rules that keep hone away come before every rule that starts it.
    let first_start = rules.iter().position(|(_, w)| w != "never").unwrap();
    assert!(rules[first_start..].iter().all(|(_, w)| w != "never"), "{rules:?}");
}

/// A scratch place for one run of the job's script: a `bin` dir first on PATH, and where the
/// fake `hone` writes what it was given.
pub(crate) struct Job {
    pub(crate) dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Job {
    /// The job's variables with the inputs' defaults (and `inputs`), as GitLab would give them.
    pub(crate) fn new(inputs: &[(&str, &str)]) -> Job {
        let (declared, job) = template();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        let value = |name: &str| {
            inputs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()).unwrap_or_else(|| {
                match &declared[name]["default"] {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                }
            })
        };
        let mut env = Vec::new();
        for (k, v) in job["variables"].as_object().unwrap() {
            let mut v = v.as_str().unwrap().to_string();
            for name in used_inputs(&v) {
                v = v.replace(&format!("$[[ inputs.{name} ]]"), &value(&name));
            }
            env.push((k.clone(), v));
        }
        let path = format!("{}:{}", dir.path().join("bin").display(), std::env::var("PATH").unwrap());
        env.push(("PATH".into(), path));
        env.push(("HONE_TEST_OUT".into(), dir.path().join("hone-was-given").display().to_string()));
        env.push(("CI_JOB_IMAGE".into(), "test-image".into()));
        Job { dir, env }
    }

    pub(crate) fn set(&mut self, k: &str, v: &str) -> &mut Job {
        self.env.retain(|(n, _)| n != k);
        self.env.push((k.into(), v.into()));
        self
    }

    /// Put an executable script in the job's `bin`.
    pub(crate) fn program(&self, name: &str, body: &str) {
        let p = self.dir.path().join("bin").join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }

    /// Run the job's script in `cwd` with `sh`, as one script with `set -e`, as the runner does.
    pub(crate) fn run(&self, cwd: &Path) -> std::process::Output {
        let (_, job) = template();
        let lines: Vec<&str> = job["script"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
        let script = format!("set -e\n{}", lines.join("\n"));
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("HOME", self.dir.path())
            .output()
            .unwrap()
    }

    /// The arguments the fake hone was run with, and the spec it was handed (when it was).
    fn hone_was_given(&self) -> Option<(Vec<String>, String)> {
        let text = std::fs::read_to_string(self.dir.path().join("hone-was-given")).ok()?;
        let args: Vec<String> = text.lines().map(str::to_string).collect();
        let spec = std::fs::read_to_string(&args[1]).unwrap_or_default();
        Some((args, spec))
    }
}

/// A hone that says its version and otherwise writes its arguments, one a line, where the test
/// reads them (and, for the CA test, what SSL_CERT_FILE holds).
const FAKE_HONE: &str = r#"#!/bin/sh
if [ "$1" = --version ]; then echo "hone 0.1.0"; exit 0; fi
printf '%s\n' "$@" > "$HONE_TEST_OUT"
if [ -n "${SSL_CERT_FILE:-}" ]; then cp "$SSL_CERT_FILE" "$HONE_TEST_OUT.ca"; fi
"#;

/// A project on `main` with the spec and policy in `.gitlab/hone/`, and a merge request's branch
/// that rewrites both, checked out detached as a merge request pipeline has it.
fn merge_request_checkout() -> TestRepo {
    let repo = TestRepo::new(&[
        (".gitlab/hone/job.yaml", "name: trusted\npolicy: policy.yaml\n"),
        (".gitlab/hone/policy.yaml", "version: 1\n"),
        ("src/app.py", "x = 1\n"),
    ]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        repo.path.join(".gitlab/hone/job.yaml"),
        "name: hostile\nmodel: { base_url: https://evil.example }\n",
    )
    .unwrap();
    std::fs::write(repo.path.join(".gitlab/hone/policy.yaml"), "version: 1\nsandbox: off\n").unwrap();
    repo.git(&["commit", "-qam", "the merge request rewrites hone's spec and policy"]);
    repo.git(&["checkout", "-q", "--detach"]);
    repo
}

#[test]
fn autofix_reads_the_spec_and_policy_from_the_target_branch_and_passes_the_iid() {
    let repo = merge_request_checkout();
    let mut job = Job::new(&[("install", "image"), ("args", "--dry-run --name fix")]);
    job.program("hone", FAKE_HONE);
    let root = repo.path.display().to_string();
    job.set("CI_MERGE_REQUEST_IID", "7")
        .set("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main")
        .set("CI_PROJECT_DIR", &root);
    let out = job.run(&repo.path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (args, spec) = job.hone_was_given().expect("hone ran");
    assert_eq!(spec, "name: trusted\npolicy: policy.yaml\n", "the target branch's spec, not the merge request's");
    let policy = PathBuf::from(&args[1]).with_file_name("policy.yaml");
    assert_eq!(std::fs::read_to_string(policy).unwrap(), "version: 1\n", "and its policy beside it");
    assert!(!args[1].starts_with(&root), "the trusted spec is outside the checkout: {args:?}");
    let expected =
        ["run", &args[1], "--repo", &root, "--report-dir", ".hone/reports", "--pr", "7", "--dry-run", "--name", "fix"];
    assert_eq!(args, expected);
}

#[test]
fn scheduled_runs_take_the_spec_from_the_checkout_or_run_the_fleet() {
    let repo = merge_request_checkout();
    let root = repo.path.display().to_string();
    let mut job = Job::new(&[("install", "image")]);
    job.program("hone", FAKE_HONE);
    job.set("CI_PROJECT_DIR", &root).set("CI_PIPELINE_SOURCE", "schedule");
    assert!(job.run(&repo.path).status.success());
    let (args, _) = job.hone_was_given().unwrap();
    assert_eq!(args, ["run", ".gitlab/hone/job.yaml", "--repo", &root, "--report-dir", ".hone/reports"]);
    let mut fleet = Job::new(&[("install", "image"), ("fleet", ".gitlab/hone/fleet.yaml")]);
    fleet.program("hone", FAKE_HONE);
    fleet.set("CI_PROJECT_DIR", &root);
    assert!(fleet.run(&repo.path).status.success());
    assert_eq!(fleet.hone_was_given().unwrap().0, ["fleet", ".gitlab/hone/fleet.yaml", "--workspace", ".hone/fleet"]);
}

#[test]
fn a_self_managed_servers_ca_is_trusted_beside_the_system_roots() {
    let repo = merge_request_checkout();
    let mut job = Job::new(&[("install", "image")]);
    job.program("hone", FAKE_HONE);
    let ca = job.dir.path().join("gitlab-ca.pem");
    std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nOURCA\n-----END CERTIFICATE-----\n").unwrap();
    job.set("CI_PROJECT_DIR", &repo.path.display().to_string()).set("CI_SERVER_TLS_CA_FILE", &ca.display().to_string());
    assert!(job.run(&repo.path).status.success());
    let bundle = std::fs::read_to_string(job.dir.path().join("hone-was-given.ca")).unwrap();
    assert!(bundle.ends_with("OURCA\n-----END CERTIFICATE-----\n"), "{bundle}");
    let roots = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];
    if let Some(system) = roots.iter().find_map(|r| std::fs::read_to_string(r).ok()) {
        assert!(bundle.starts_with(&system), "the system's roots stay trusted");
    }
}

/// A curl that serves `https://HOST/PATH` from `$HONE_TEST_WEB/HOST/PATH` (and refuses any
/// other scheme), answering as the template and scripts/install.sh ask: the file, and the HTTP
/// status for `--write-out`.
const FAKE_CURL: &str = r#"#!/bin/sh
out=""; url=""; code=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output) out="$2"; shift 2 ;;
    --write-out) code=yes; shift 2 ;;
    --proto|--connect-timeout|--max-time|--retry) shift 2 ;;
    -*) shift ;;
    *) url="$1"; shift ;;
  esac
done
echo "$url" >> "$HONE_TEST_OUT.fetched"
case "$url" in https://*) ;; *) echo "curl: not https: $url" >&2; exit 1 ;; esac
file="$HONE_TEST_WEB/${url#https://}"
if [ -f "$file" ]; then cp "$file" "$out"; [ -z "$code" ] || printf 200; exit 0; fi
if [ -n "$code" ]; then printf 404; exit 0; fi
echo "curl: (22) The requested URL returned error: 404" >&2; exit 22
"#;

const TARGET: &str = "x86_64-unknown-linux-musl";

/// GitHub as the template reaches it: hone's Cargo.toml at the `v0` tag, install.sh at
/// `v0.1.0`, and the release's archive (with `FAKE_HONE`) and sha256.sum (`sum`, or the
/// archive's own).
fn release(web: &Path, sum: Option<&str>) {
    let raw = web.join("raw.githubusercontent.com/hone/hone");
    std::fs::create_dir_all(raw.join("v0")).unwrap();
    std::fs::write(raw.join("v0/Cargo.toml"), "[package]\nname = \"hone\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::create_dir_all(raw.join("v0.1.0/scripts")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"),
        raw.join("v0.1.0/scripts/install.sh"),
    )
    .unwrap();
    let pack = web.join("pack").join(format!("hone-{TARGET}"));
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(pack.join("hone"), FAKE_HONE).unwrap();
    std::fs::set_permissions(pack.join("hone"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dl = web.join("github.com/hone/hone/releases/download/v0.1.0");
    std::fs::create_dir_all(&dl).unwrap();
    let archive = dl.join(format!("hone-{TARGET}.tar.gz"));
    let tar = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(web.join("pack"))
        .arg(format!("hone-{TARGET}"))
        .status()
        .unwrap();
    assert!(tar.success());
    use sha2::Digest;
    let own: String =
        sha2::Sha256::digest(std::fs::read(&archive).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(dl.join("sha256.sum"), format!("{} *hone-{TARGET}.tar.gz\n", sum.unwrap_or(&own))).unwrap();
}

/// The job with install `release` and `version`, against `release(web, sum)`.
fn release_job(version: &str, sum: Option<&str>) -> (Job, TestRepo, std::process::Output) {
    let repo = merge_request_checkout();
    let mut job = Job::new(&[("version", version)]);
    job.program("curl", FAKE_CURL);
    let web = job.dir.path().join("web");
    release(&web, sum);
    let root = repo.path.display().to_string();
    job.set("HONE_TEST_WEB", &web.display().to_string()).set("HONE_TARGET", TARGET).set("CI_PROJECT_DIR", &root);
    let out = job.run(&repo.path);
    (job, repo, out)
}

#[test]
fn the_release_binary_of_the_major_tag_is_installed_after_its_checksum_matches() {
    let (job, _repo, out) = release_job("v0", None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(job.hone_was_given().is_some(), "the installed hone ran");
    let fetched = std::fs::read_to_string(job.dir.path().join("hone-was-given.fetched")).unwrap();
    let dl = "https://github.com/hone/hone/releases/download/v0.1.0";
    let expected = [
        "https://raw.githubusercontent.com/hone/hone/v0/Cargo.toml".to_string(),
        "https://raw.githubusercontent.com/hone/hone/v0.1.0/scripts/install.sh".into(),
        format!("{dl}/hone-{TARGET}.tar.gz"),
        format!("{dl}/sha256.sum"),
    ];
    assert_eq!(fetched.lines().collect::<Vec<_>>(), expected);
    // An exact version needs no tag to be read.
    let (exact, _repo, out) = release_job("0.1.0", None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fetched = std::fs::read_to_string(exact.dir.path().join("hone-was-given.fetched")).unwrap();
    assert!(!fetched.contains("Cargo.toml"), "{fetched}");
}

#[test]
fn a_release_binary_whose_checksum_does_not_match_fails_the_job_and_never_runs() {
    let (job, _repo, out) = release_job("v0", Some(&"0".repeat(64)));
    assert!(!out.status.success(), "a tampered archive must fail the job");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(job.hone_was_given().is_none(), "hone must not run");
}
