//! Second review of issue 40 (egress that ends with the command; credentials found in the
//! checkout). Each test here is an attack that should fail (the property is broken) until fixed.

use super::cred_probe::*;
use super::jail_support::{fix, result_of, spec, write};
use crate::common::mock_model::{MockModel, call};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

/// A listed host that accepts every connection and never answers or closes one.
async fn silent() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    port
}

/// `stay SILENT`: the command's first process (PID 1 of its namespace) leaves the process group
/// hone kills and clears its parent-death signal, then waits for the next command (`/tmp/go`) and
/// takes every slot of the proxy with tunnels to the silent host. `next ANSWERS`: says go, waits
/// for the escapee (at most 30 s), then fetches from the answering host.
const ESCAPE: &str = r#"import ctypes, os, socket, sys, time, urllib.request
own = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])
if sys.argv[1] == 'stay':
    os.setsid()
    ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG: none
    print('STAYING', os.getpid(), flush=True)
    null = os.open('/dev/null', os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while not os.path.exists('/tmp/go'):
        time.sleep(0.05)
    held = []
    for _ in range(64):
        s = socket.create_connection(('127.0.0.1', own), 10)
        s.sendall(f'CONNECT silent.test:{sys.argv[2]} HTTP/1.1\r\n\r\n'.encode())
        s.settimeout(30)
        s.recv(4096)
        held.append(s)
    with open('/tmp/held', 'w') as f:
        f.write(str(len(held)))
    while True:
        time.sleep(60)
else:
    open('/tmp/go', 'w').close()
    for _ in range(600):
        if os.path.exists('/tmp/held'):
            break
        time.sleep(0.05)
    print('ESCAPEE', open('/tmp/held').read() if os.path.exists('/tmp/held') else 'gone')
    try:
        r = urllib.request.urlopen(f'http://answers.test:{sys.argv[2]}/', timeout=5)
        print('PLAIN', r.status, r.read().decode())
    except Exception as e:
        print('PLAIN FAILED', e)
"#;

/// A command killed by its timeout (or a cancel) is killed as its process group: a first process
/// that left the group with `setsid` and cleared its parent-death signal outlives the helper that
/// ran it, in the run's PID namespace, and keeps the jail's network: during the next command it
/// holds all 64 of the proxy's slots, and the next command has no network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_killed_by_its_timeout_leaves_nothing_running() {
    require!(Need::UserNamespaces);
    let (silent, answers) = (silent().await, crate::common::answer::answering().await);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let stay = format!("exec python3 esc.py stay {silent}");
    mock.turn(write("esc.py", ESCAPE), false)
        .turn(call("run_cmd", json!({"command": stay, "timeout_secs": 5})), false)
        .turn(call("run_cmd", json!({"command": format!("python3 esc.py next {answers}; rm -f esc.py")})), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}network:\n  allow: [\"silent.test\", \"answers.test\"]\n");
    let yaml = with_policy(&repo, &job_yaml("review2-escape", &mock.base_url, false), &policy);
    let resolve = [("HONE_TEST_RESOLVE", "silent.test=127.0.0.1,answers.test=127.0.0.1")];
    let run = run_job_env(&repo, &yaml, &resolve).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stayed = result_of(&mock, 1);
    assert!(stayed.contains("STAYING") && stayed.contains("timed out"), "{stayed}");
    let next = result_of(&mock, 2);
    assert!(next.contains("ESCAPEE gone"), "a process of the timed-out command outlived it: {next}");
    assert!(next.contains("PLAIN 200 answered"), "the next command had no network: {next}");
}

/// Credential files CI leaves in a checkout, ignored as the workflow's `.gitignore` says, that
/// no variable names and the default `read_deny` does not cover: a kubeconfig with a service
/// account's token, an AWS credentials file, and a service account key one directory deep in an
/// ignored directory. The secrets are not in hone's environment (the steps that wrote the files
/// had them in their own `env:`). The probe reads each: none of the secrets may reach a sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_files_ci_leaves_in_the_checkout_reach_no_sink() {
    require!(Need::UserNamespaces);
    let ignore = "kubeconfig\n.aws/\n.secrets/\n";
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", ignore)]);
    let kube_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaS1kZXBsb3llciJ9.a3ViZS10b2tlbi1zaWduYXR1cmU";
    let kubeconfig = format!("apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n    token: {kube_token}\n");
    std::fs::write(repo.path.join("kubeconfig"), kubeconfig).unwrap();
    let aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYREVIEWTWOKEY";
    let aws = format!("[default]\naws_access_key_id = AKIAIOSFODNN7REVIEW2\naws_secret_access_key = {aws_secret}\n");
    std::fs::create_dir_all(repo.path.join(".aws")).unwrap();
    std::fs::write(repo.path.join(".aws/credentials"), aws).unwrap();
    let (sa, sa_key) = service_account("deep");
    std::fs::create_dir_all(repo.path.join(".secrets/gcp")).unwrap();
    std::fs::write(repo.path.join(".secrets/gcp/key.json"), sa).unwrap();
    let mock = MockModel::start().await;
    let files = ["kubeconfig", ".aws/credentials", ".secrets/gcp/key.json"];
    let probe_turn = queue_probe(&mock, 0, &files, &[]);
    fix(&mock);
    let yaml = spec(&repo, "review2-creds", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job(&repo, &yaml, &[]).await;
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let mut problems = sinks.all_leaks(&[
        ("the kubeconfig's token", kube_token),
        ("the AWS secret access key", aws_secret),
        ("the deep service account's private key", &sa_key),
    ]);
    problems.extend(probe_problems(&mock, probe_turn));
    assert_none(&problems, &mock, probe_turn);
}

/// A `setup:` step fetches a service account key into the checkout (through its own network
/// allow-list). Intake had looked before setup ran; the commands' jail, built after setup, hides
/// the file all the same, its secrets are redacted, and the report says what setup left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_setup_writes_into_the_checkout_reaches_no_sink() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH)]);
    let (sa, sa_key) = service_account("setup");
    let port = crate::common::answer::answering_with(&sa).await;
    let fetch = format!(
        "/usr/bin/python3 -c \\\"import urllib.request; urllib.request.urlretrieve('http://creds.test:{port}/sa.json', 'setup-sa.json')\\\""
    );
    let setup = format!("setup:\n  - {{ name: creds, run: \"{fetch}\", timeout: 60s }}\nverify:\n");
    let mock = MockModel::start().await;
    let probe_turn = queue_probe(&mock, 0, &["setup-sa.json"], &[]);
    // A form no redactor undoes: only the jail can keep it from the model.
    mock.turn(call("run_cmd", json!({"command": "tr 'A-Za-z0-9' 'B-ZAb-za1-90' < setup-sa.json"})), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}network: false\nsetup:\n  network:\n    allow: [\"creds.test\"]\n");
    let yaml = spec(&repo, "setupcreds", &mock, &policy, "pr: { enabled: false }\n").replacen("verify:\n", &setup, 1);
    let run = run_job_env(&repo, &yaml, &[("HONE_TEST_RESOLVE", "creds.test=127.0.0.1")]).await;
    let report = run.report();
    assert_eq!(report["setup"][0]["exit_code"], 0, "setup did not fetch the key: {report:#}");
    let sinks = Sinks::of(&run, &mock, &[&repo.path, &repo.origin]);
    let shifted = rot1(&sa_key);
    let mut problems = sinks.all_leaks(&[("the key setup fetched", &sa_key), ("shifted by one", &shifted)]);
    problems.extend(probe_problems(&mock, probe_turn));
    assert_none(&problems, &mock, probe_turn);
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("setup left credentials in the checkout: `setup-sa.json`"), "{warnings}");
}
