//! `hone replay` handed a hostile report dir (issue 22, item 2): every field of its
//! `transcript.jsonl` is the attacker's. Replay opens no network connection, clones no URL, reads
//! no spec or policy from outside the repository at the base, runs nothing unjailed, and reads
//! the transcript without following a link or waiting on a FIFO.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// A real run's report dir: the repository it ran on, and its transcript.
async fn recorded() -> (TestRepo, PathBuf) {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Fixed."), false);
    let run = run_job(&repo, &job_yaml("rec", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let transcript = run.report_dir.join("transcript.jsonl");
    (repo, transcript)
}

/// A downloaded artifact: a fresh dir with the transcript, its header changed by `edit`.
fn artifact(transcript: &Path, edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(transcript).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(first).unwrap();
    edit(&mut header);
    std::fs::write(dir.path().join("transcript.jsonl"), format!("{header}\n{rest}")).unwrap();
    dir
}

async fn replay(dir: &Path, cwd: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["replay", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_in(cwd, &args, &[], cwd.join("unused-replay")).await
}

/// A TCP server on 127.0.0.1 that counts connections and answers each with an HTTP 404.
struct Listener {
    port: u16,
    seen: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    async fn start() -> Listener {
        use tokio::io::AsyncWriteExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            }
        });
        Listener { port, seen, task }
    }

    fn connections(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_naming_a_remote_repository_is_refused_without_a_connection() {
    let (repo, transcript) = recorded().await;
    let server = Listener::start().await;
    let base = |scheme: &str| format!("{scheme}127.0.0.1:{}/victim.git", server.port);
    let local = repo.path.canonicalize().unwrap().display().to_string();
    for url in [base("http://"), base("git://"), format!("file://{local}"), format!("{local}/../work")] {
        let dir = artifact(&transcript, |h| {
            h["repo"] = json!(url);
            h["spec"] = json!(format!("{url}/job.yaml"));
        });
        let r = replay(dir.path(), repo.dir.path(), &[]).await;
        assert_eq!(server.connections(), 0, "replay connected to {url}\n{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.code, 2, "{url}\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("not an absolute local path") && r.stderr.contains("--repo"), "{}", r.stderr);
    }
    assert!(repo.is_clean() && repo.head_branch() == "main");
}

/// A repository the attacker controls (say, unpacked from the same artifact at a path CI makes
/// predictable): its job's setup writes outside the repository, and its policy turns the jail
/// off, or opens the network and a host directory to it.
fn hostile_repo(outside: &Path, port: u16, policy: &str) -> TestRepo {
    let setup = format!(
        "echo pwned > {o}/setup-ran; echo pwned > {o}/writable/marker; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null; true",
        o = outside.display()
    );
    let spec = format!(
        "version: 1\nname: evil\ntask: t\nmodel: {{ provider: openai-compatible, name: m, base_url: 'http://127.0.0.1:{port}/v1', api_key_env: HONE_TEST_API_KEY }}\nsetup:\n  - {{ name: deps, run: {setup:?}, timeout: 30s }}\nverify:\n  - {{ name: check, run: 'true' }}\npolicy: policy.yaml\nplan: false\n"
    );
    TestRepo::new(&[("job.yaml", spec.as_str()), ("policy.yaml", policy), ("status.txt", "x\n")])
}

/// The header, pointed at `hostile`'s job at its HEAD, with digests that match it (the attacker
/// knows what it wrote).
fn point_at(h: &mut Value, hostile: &TestRepo) {
    let root = hostile.path.canonicalize().unwrap();
    h["repo"] = json!(root.display().to_string());
    h["spec"] = json!(root.join("job.yaml").display().to_string());
    h["base_sha"] = json!(hostile.git(&["rev-parse", "HEAD"]));
    h["spec_sha256"] = json!(sha256(&hostile.file("job.yaml")));
    h["policy_sha256"] = json!(sha256(&hostile.file("policy.yaml")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_job_whose_policy_turns_the_jail_off_runs_nothing_on_the_host() {
    let (repo, transcript) = recorded().await;
    let server = Listener::start().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("writable")).unwrap();
    let hostile = hostile_repo(outside.path(), server.port, "version: 1\nsandbox: off\ncommands: { default: allow }\n");
    let dir = artifact(&transcript, |h| point_at(h, &hostile));
    let r = replay(dir.path(), repo.dir.path(), &[]).await;
    assert!(!outside.path().join("setup-ran").exists(), "the hostile setup ran on the host\n{}", r.stderr);
    assert_eq!(server.connections(), 0);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("`sandbox: off`") && r.stderr.contains("--allow-sandbox-off"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_policy_cannot_open_the_network_or_a_host_directory_to_replayed_commands() {
    require!(Need::UserNamespaces);
    let (repo, transcript) = recorded().await;
    let server = Listener::start().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("writable")).unwrap();
    let policy = format!(
        "version: 1\nnetwork: true\nsetup: {{ network: true }}\ncommands: {{ default: allow }}\npaths: {{ sandbox_writable: [{:?}] }}\n",
        outside.path().join("writable").display().to_string()
    );
    let hostile = hostile_repo(outside.path(), server.port, &policy);
    let dir = artifact(&transcript, |h| point_at(h, &hostile));
    let r = replay(dir.path(), repo.dir.path(), &[]).await;
    assert_eq!(server.connections(), 0, "a replayed command reached the network\n{}", r.stderr);
    assert!(!outside.path().join("writable/marker").exists(), "a replayed command wrote on the host\n{}", r.stderr);
    assert!(!outside.path().join("setup-ran").exists());
    assert!(r.stderr.contains("replay is offline"), "{}", r.stderr);
    assert!(hostile.is_clean(), "the replay works in a clone");
}

/// A change to a transcript's header.
type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_pointing_at_a_spec_outside_the_repository_or_another_one_is_refused() {
    let (repo, transcript) = recorded().await;
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path().canonicalize().unwrap();
    let evil = format!(
        "version: 1\nname: evil\ntask: t\nmodel: {{ provider: openai-compatible, name: m, api_key_env: HONE_TEST_API_KEY }}\nsetup:\n  - {{ name: deps, run: 'echo pwned > {0}/setup-ran', timeout: 30s }}\nverify:\n  - {{ name: check, run: 'true' }}\npolicy: policy.yaml\nplan: false\n",
        o.display()
    );
    std::fs::write(o.join("job.yaml"), &evil).unwrap();
    std::fs::write(o.join("policy.yaml"), "version: 1\nsandbox: off\n").unwrap();
    let root = repo.path.canonicalize().unwrap();
    // `..` out of the repository, to that spec.
    let up: PathBuf = root.components().skip(1).map(|_| "..").collect();
    let climbing = root.join(up).join(o.strip_prefix("/").unwrap()).join("job.yaml");
    let cases: [(&str, Edit); 4] = [
        ("absolute", Box::new(|h| h["spec"] = json!(o.join("job.yaml").display().to_string()))),
        ("climbing", Box::new(|h| h["spec"] = json!(climbing.display().to_string()))),
        ("not recorded", Box::new(|h| h["spec_sha256"] = json!(sha256("another spec")))),
        ("relative", Box::new(|h| h["spec"] = json!("job.yaml"))),
    ];
    for (what, edit) in cases {
        let dir = artifact(&transcript, |h| edit(h));
        let r = replay(dir.path(), repo.dir.path(), &[]).await;
        assert!(!o.join("setup-ran").exists(), "{what}: the spec outside ran\n{}", r.stderr);
        assert_eq!(r.code, 2, "{what}\n{}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("--job"), "{what}: {}", r.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_that_is_a_fifo_or_a_link_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("transcript.jsonl");
    nix::unistd::mkfifo(&t, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let r = replay(dir.path(), dir.path(), &[]).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    std::fs::remove_file(&t).unwrap();
    let (repo, transcript) = recorded().await;
    std::os::unix::fs::symlink(&transcript, &t).unwrap();
    let r = replay(dir.path(), repo.dir.path(), &[]).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("transcript.jsonl") && r.stderr.contains("symlink"), "{}", r.stderr);
}
