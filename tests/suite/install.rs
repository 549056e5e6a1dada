//! The install step (`scripts/install.sh`, what the Action runs) against a fake GitHub release on
//! a local HTTP server: it installs a verified binary, refuses a tampered one, and tells "no
//! binary for this version" (the Action then builds) apart from a failure (it must not).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

const TARGET: &str = "x86_64-unknown-linux-musl";
const ARCHIVE: &str = "hone-x86_64-unknown-linux-musl.tar.gz";
const EXIT_FAILED: i32 = 1;
const EXIT_NO_BINARY: i32 = 3;

/// A release server: files by URL path, and the paths asked for.
#[derive(Clone, Default)]
struct Release {
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Release {
    async fn start(&self) -> String {
        let me = self.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let me = me.clone();
            async move {
                let path = uri.path().to_string();
                me.asked.lock().unwrap().push(path.clone());
                match me.files.lock().unwrap().get(&path) {
                    Some(body) => (axum::http::StatusCode::OK, body.clone()),
                    None => (axum::http::StatusCode::NOT_FOUND, b"Not Found".to_vec()),
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        format!("http://{addr}")
    }

    fn put(&self, path: &str, body: Vec<u8>) {
        self.files.lock().unwrap().insert(path.to_string(), body);
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// A release archive as cargo-dist lays it out (`hone-<target>/hone`), whose binary says
/// `hone <says>` to `--version`.
fn archive(scratch: &Path, says: &str) -> Vec<u8> {
    let dir = scratch.join("pack").join(format!("hone-{TARGET}"));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("hone");
    std::fs::write(&bin, format!("#!/bin/sh\necho 'hone {says}'\n")).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("README.md"), "hone\n").unwrap();
    let out = scratch.join(ARCHIVE);
    let st = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(scratch.join("pack"))
        .arg(format!("hone-{TARGET}"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::read(out).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// cargo-dist's unified checksum file: `<sha256> *<file>` per line.
fn checksums(entries: &[(&str, &[u8])]) -> Vec<u8> {
    entries.iter().map(|(name, bytes)| format!("{} *{name}\n", sha256_hex(bytes))).collect::<String>().into_bytes()
}

struct Install {
    out: Output,
    dir: PathBuf,
}

impl Install {
    fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn installed(&self) -> bool {
        self.dir.join("hone").exists()
    }
}

/// Run the install script with `env` (on top of a fixed target and install dir).
fn install(scratch: &Path, url: &str, env: &[(&str, &str)]) -> Install {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh");
    let dir = scratch.join("bin");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script)
        .env_remove("HONE_VERSION")
        .env_remove("ACTION_REF")
        .env_remove("ACTION_PATH")
        .env_remove("HONE_REPO")
        .env("HONE_RELEASE_URL", url)
        .env("HONE_TARGET", TARGET)
        .env("HONE_INSTALL_DIR", &dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Install { out: cmd.output().unwrap(), dir }
}

/// A release v0.1.0 with a good archive and its checksum.
fn good_release(scratch: &Path) -> (Release, Vec<u8>) {
    let release = Release::default();
    let tar = archive(scratch, "0.1.0");
    release.put(&format!("/v0.1.0/{ARCHIVE}"), tar.clone());
    release.put("/v0.1.0/sha256.sum", checksums(&[(ARCHIVE, &tar), ("hone-aarch64-apple-darwin.tar.gz", b"other")]));
    (release, tar)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_the_verified_binary_and_prints_its_path() {
    let scratch = tempfile::tempdir().unwrap();
    let (release, _) = good_release(scratch.path());
    let url = release.start().await;
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "v0.1.0")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let path = String::from_utf8(run.out.stdout.clone()).unwrap();
    assert_eq!(path.trim(), run.dir.join("hone").to_str().unwrap(), "stdout is the path and nothing else");
    let version = std::process::Command::new(path.trim()).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "hone 0.1.0");
    assert!(run.stderr().contains("checksum verified"), "{}", run.stderr());
    assert_eq!(release.asked(), [format!("/v0.1.0/{ARCHIVE}"), "/v0.1.0/sha256.sum".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checksum_mismatch_fails_and_installs_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let (release, tar) = good_release(scratch.path());
    // The archive served is not the one the checksum file was made for: one byte differs.
    let mut tampered = tar.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    release.put(&format!("/v0.1.0/{ARCHIVE}"), tampered.clone());
    let url = release.start().await;
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "0.1.0")]);
    assert_eq!(run.code(), EXIT_FAILED, "a mismatch is a failure, never 'build instead': {}", run.stderr());
    assert!(run.stderr().contains("checksum mismatch"), "{}", run.stderr());
    assert!(run.stderr().contains(&sha256_hex(&tar)) && run.stderr().contains(&sha256_hex(&tampered)));
    assert!(!run.installed());
    assert!(run.out.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_the_checksum_file_does_not_list_or_no_checksum_file_fails() {
    let scratch = tempfile::tempdir().unwrap();
    let (release, _) = good_release(scratch.path());
    release.put("/v0.1.0/sha256.sum", checksums(&[("hone-aarch64-apple-darwin.tar.gz", b"other")]));
    let url = release.start().await;
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "0.1.0")]);
    assert_eq!(run.code(), EXIT_FAILED, "{}", run.stderr());
    assert!(run.stderr().contains("does not list hone-x86_64-unknown-linux-musl.tar.gz"), "{}", run.stderr());
    assert!(!run.installed());

    release.files.lock().unwrap().remove("/v0.1.0/sha256.sum");
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "0.1.0")]);
    assert_eq!(run.code(), EXIT_FAILED, "an unverifiable binary is not installed: {}", run.stderr());
    assert!(run.stderr().contains("no sha256.sum"), "{}", run.stderr());
    assert!(!run.installed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_binary_for_the_version_or_the_platform_lets_the_caller_build() {
    let scratch = tempfile::tempdir().unwrap();
    let (release, _) = good_release(scratch.path());
    let url = release.start().await;
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "0.2.0")]);
    assert_eq!(run.code(), EXIT_NO_BINARY, "{}", run.stderr());
    assert!(run.stderr().contains("release v0.2.0 has no hone-x86_64-unknown-linux-musl.tar.gz"), "{}", run.stderr());
    // A branch or a commit of the Action has no release: nothing is asked for.
    let asked = release.asked().len();
    let run = install(scratch.path(), &url, &[("ACTION_REF", "main")]);
    assert_eq!(run.code(), EXIT_NO_BINARY, "{}", run.stderr());
    assert!(run.stderr().contains("no version to install"), "{}", run.stderr());
    assert_eq!(release.asked().len(), asked);
    assert!(!run.installed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_that_says_another_version_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let release = Release::default();
    let tar = archive(scratch.path(), "0.0.9");
    release.put(&format!("/v0.1.0/{ARCHIVE}"), tar.clone());
    release.put("/v0.1.0/sha256.sum", checksums(&[(ARCHIVE, &tar)]));
    let url = release.start().await;
    let run = install(scratch.path(), &url, &[("HONE_VERSION", "0.1.0")]);
    assert_eq!(run.code(), EXIT_FAILED, "{}", run.stderr());
    assert!(run.stderr().contains("says `hone 0.0.9`, not version 0.1.0"), "{}", run.stderr());
    assert!(!run.installed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_comes_from_the_action_ref_or_its_checkout() {
    let scratch = tempfile::tempdir().unwrap();
    let (release, _) = good_release(scratch.path());
    let url = release.start().await;
    // `uses: owner/hone@v0.1.0`: the tag is the version.
    let run = install(scratch.path(), &url, &[("ACTION_REF", "v0.1.0")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // `uses: owner/hone@v0`: a moving tag; the checkout's Cargo.toml has the version. The runner
    // did not pass the ref (composite actions may not get it): it is read from the path.
    let checkout = scratch.path().join("_actions/acme/hone/v0");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::write(checkout.join("Cargo.toml"), "[package]\nname = \"hone\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::remove_file(run.dir.join("hone")).unwrap();
    let run = install(scratch.path(), &url, &[("ACTION_PATH", checkout.to_str().unwrap())]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(run.installed());
    assert_eq!(release.asked().iter().filter(|p| p.ends_with(ARCHIVE)).count(), 2);
}
