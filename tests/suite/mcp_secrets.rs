//! Attacks on what one component is given (issue 22, item 9): a secret in a stdio MCP server's
//! `env`, or one that setup fetched, never reaches the model's commands, whatever they try: the
//! server's files in the home and temp dirs, its environment in `/proc`, a socket it listens on,
//! or code the model plants where the server looks for modules and programs (the repository, a
//! temp dir on `PYTHONPATH`, a home dir on `PATH`). A token a tool returns spaced out is redacted.
//!
//! The model's code is a probe written into the repository; it prints what it found ROT13'd (a
//! form no redactor knows), so a leak shows in the tool results the mock model recorded.

use super::jail_support::{cmd, fix, result_of, unique, write};
use super::mcp::{SECRET, mcp_repo, spec_with_mcp};
use crate::common::mock_model::{MockModel, call};
use crate::common::*;
use serde_json::json;

use super::jail_support::rot13;

/// Every request the model was sent, as one text.
fn sent(mock: &MockModel) -> String {
    mock.requests().iter().map(|r| r.body.to_string()).collect()
}

/// `secret`, and the forms a leak would take here, reached the model in no request.
fn assert_never_sent(mock: &MockModel, secret: &str) {
    let sent = sent(mock);
    for (what, form) in [
        ("plain", secret.to_string()),
        ("ROT13", rot13(secret)),
        ("spaced", secret.chars().map(String::from).collect::<Vec<_>>().join(" ")),
    ] {
        assert!(!sent.contains(&form), "the secret reached the model ({what}: {form})");
    }
}

/// The model's probe: reads `home_file` (relative to the home) and `name` in every temp dir, every
/// environment and command line in `/proc`, and connects to `port` on loopback and to the
/// server's abstract socket. One line per channel: `none CHANNEL` or `LEAK CHANNEL: <ROT13 of
/// what it found>`.
fn probe(port: u16, home_file: &str, name: &str) -> String {
    format!(
        r#"import codecs, glob, os, socket
def show(channel, data):
    if isinstance(data, bytes):
        data = data.decode(errors="replace")
    data = data.strip()
    print("LEAK %s: %s" % (channel, codecs.encode(data, "rot13")) if data else "none %s" % channel)
def read(p):
    try:
        with open(p, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
def connect(family, addr):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(addr)
        data = s.recv(4096)
        s.close()
        return data
    except OSError:
        return b""
home = os.environ.get("HOME", "/nonexistent")
show("home", read(home + "/{home_file}"))
for d in ["/tmp", "/var/tmp", "/dev/shm"]:
    show(d, read(d + "/{name}"))
found = ""
for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    e = read(p)
    if "TOKEN" in e:
        found += e
show("proc", found)
show("loopback", connect(socket.AF_INET, ("127.0.0.1", {port})))
show("abstract", connect(socket.AF_UNIX, "\0hone-mcp-test"))
"#
    )
}

/// A port nothing on the host listens on (inside the jail it is free too).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The probe ran (every channel answered) and found nothing.
fn assert_probe_found_nothing(out: &str) {
    for channel in ["home", "/tmp", "/var/tmp", "/dev/shm", "proc", "loopback", "abstract"] {
        assert!(out.contains(&format!("none {channel}\n")), "channel {channel}: {out}");
    }
    assert!(!out.contains("LEAK"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_given_to_a_stdio_server_is_in_no_place_the_models_commands_can_read() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let port = free_port();
    // The server keeps its token in its home and temp dirs, and serves it on loopback and on an
    // abstract socket.
    let servers = format!(
        "    - {{ name: s, command: python3, args: [tools/mcp_server.py, --cache-secret, --listen, '{port}'], env: [ISSUES_TOKEN], required: true }}\n"
    );
    let policy = format!("{OPEN_POLICY}mcp:\n  allow: ['s/*']\n");
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-secret-files", &mock, &servers), &policy);
    let probe = probe(port, ".cache/hone-mcp-test/hone-mcp-token", "hone-mcp-token");
    mock.turn(write("probe.py", &probe), false)
        .turn(cmd("python3 probe.py"), false)
        .turn(call("s__lookup_issue", json!({"id": 1})), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(result_of(&mock, 2).starts_with("issue 1:"), "the server was up: {}", result_of(&mock, 2));
    assert_probe_found_nothing(&result_of(&mock, 1));
    assert_never_sent(&mock, SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_cannot_plant_code_that_a_stdio_server_runs_with_its_secret() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let home = std::env::var("HOME").unwrap();
    let (tmp_dir, bin_dir) = (format!("/tmp/{}", unique("plug")), format!("{home}/.{}", unique("bin")));
    // Where a server looks for code: its own directory (in the repository), a temp dir on
    // PYTHONPATH, and a directory in the home on PATH (as ~/.local/bin is).
    let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap());
    let servers =
        "    - { name: s, command: python3, args: [tools/mcp_server.py], env: [ISSUES_TOKEN], required: true }\n";
    let policy = format!("{OPEN_POLICY}env:\n  pass: [PATH, HOME, PYTHONPATH, LANG]\nmcp:\n  allow: ['s/*']\n");
    let yaml = with_policy(&repo, &spec_with_mcp("mcp-secret-plant", &mock, servers), &policy);
    let module = |w: &str| {
        format!(
            "import codecs, os\nRESULT = 'LEAK {w}: ' + codecs.encode(os.environ.get('ISSUES_TOKEN', ''), 'rot13')\n"
        )
    };
    let helper = "#!/bin/sh\necho \"LEAK home: $(printf %s \"$ISSUES_TOKEN\" | tr 'A-Za-z' 'N-ZA-Mn-za-m')\"\n";
    mock.turn(write("tools/plug_repo.py", &module("repo")), false)
        .turn(write("stage/plug_tmp.py", &module("tmp")), false)
        .turn(write("stage/helper", helper), false)
        .turn(
            cmd(&format!(
                "mkdir -p {tmp_dir} {bin_dir} && cp stage/plug_tmp.py {tmp_dir}/ && cp stage/helper {bin_dir}/plug_helper && chmod +x {bin_dir}/plug_helper && echo planted"
            )),
            false,
        )
        .turn(call("s__plugin", json!({"name": "plug_repo"})), false)
        .turn(call("s__plugin", json!({"name": "plug_tmp"})), false)
        .turn(call("s__helper", json!({"name": "plug_helper"})), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET), ("PYTHONPATH", &tmp_dir), ("PATH", &path)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(result_of(&mock, 3).contains("planted"), "{}", result_of(&mock, 3));
    let results: Vec<(&str, String)> =
        [(4, "repository"), (5, "temp dir"), (6, "home")].map(|(turn, place)| (place, result_of(&mock, turn))).into();
    let ran: Vec<&(&str, String)> = results.iter().filter(|(_, r)| r.contains("LEAK")).collect();
    assert!(ran.is_empty(), "the server ran code the model planted: {ran:?}");
    for (place, r) in &results {
        assert!(r.contains("E_MCP"), "the server found nothing in the {place}: {r}");
    }
    assert_never_sent(&mock, SECRET);
    assert!(!std::path::Path::new(&bin_dir).exists(), "the home the commands wrote is the jail's own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_a_tool_returns_spaced_out_is_redacted() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py], env: [ISSUES_TOKEN] }\n";
    let yaml = with_policy(
        &repo,
        &spec_with_mcp("mcp-spaced", &mock, servers),
        &format!("{OPEN_POLICY}mcp:\n  allow: ['s/*']\n"),
    );
    let seps = [" ", "-", ".", "\n", ", ", "', '"];
    for sep in seps {
        mock.turn(call("s__spaced", json!({"sep": sep})), false);
    }
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for (turn, sep) in seps.iter().enumerate() {
        let spaced: String = SECRET.chars().map(String::from).collect::<Vec<_>>().join(sep);
        let r = result_of(&mock, turn);
        assert!(r.contains("[REDACTED]") && !r.contains(&spaced), "separator {sep:?}: {r}");
        assert!(!r.contains("Z q 8 1") && !r.contains("Z-q-8-1"), "no piece of it is left: {r}");
    }
    assert!(!sent(&mock).contains(&SECRET.chars().map(String::from).collect::<Vec<_>>().join(" ")));
    for sink in [run.stdout.clone(), run.stderr.clone(), run.read("report.json"), run.read("events.jsonl")] {
        assert!(!sink.contains(&SECRET.chars().map(String::from).collect::<Vec<_>>().join(" ")));
    }
}

/// A local stand-in for a credential endpoint only setup can reach (the commands have no
/// network): it answers every connection with `token`.
fn token_endpoint(token: &'static str) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut conn, &mut buf);
            let body = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{token}", token.len());
            let _ = std::io::Write::write_all(&mut conn, body.as_bytes());
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_setup_leaves_in_its_home_and_temp_dirs_never_reaches_the_commands() {
    require!(Need::UserNamespaces);
    const TOKEN: &str = "setup-fetched-Kp3vQ9zLm2";
    let port = token_endpoint(TOKEN);
    let repo = mcp_repo();
    let mock = MockModel::start().await;
    // Setup fetches a token (it alone has the network) and leaves it where installers do: a
    // config file in the home, and the temp dirs.
    let fetch = format!(
        "python3 -c \\\"import os, urllib.request; t = urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=10).read().decode(); h = os.environ['HOME'] + '/.config/hone-setup-token'; os.makedirs(h, exist_ok=True); [open(p, 'w').write(t) for p in [h + '/auth', '/tmp/hone-setup-token', '/var/tmp/hone-setup-token', '/dev/shm/hone-setup-token']]; print('fetched', len(t))\\\""
    );
    let setup = format!("  - {{ name: auth, run: \"{fetch}\", timeout: 30s }}\n");
    let yaml =
        job_yaml("setup-secret", &mock.base_url, false).replace("verify:\n", &format!("setup:\n{setup}verify:\n"));
    let policy = format!("{OPEN_POLICY}setup:\n  network: true\n");
    let yaml = with_policy(&repo, &yaml, &policy);
    // Its loopback probe asks the endpoint itself: the commands have no network.
    let probe = probe(port, ".config/hone-setup-token/auth", "hone-setup-token");
    mock.turn(write("probe.py", &probe), false).turn(cmd("python3 probe.py"), false);
    fix(&mock);
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.report()["setup"][0]["passed"], true, "{}", run.read("report.json"));
    assert_probe_found_nothing(&result_of(&mock, 1));
    assert!(!sent(&mock).contains(TOKEN) && !sent(&mock).contains(&rot13(TOKEN)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_sees_the_repository_as_it_was_when_it_started() {
    require!(Need::UserNamespaces);
    let repo = mcp_repo();
    // Ignored entries that exist before the run are shown from the host (read-only); a
    // read-denied file is not shown at all.
    std::fs::write(repo.path.join(".gitignore"), "vendor/\nlocal.cfg\n").unwrap();
    std::fs::write(repo.path.join(".env"), "DB_PASSWORD=hunter2-hunter2\n").unwrap();
    repo.git(&["add", ".gitignore", ".env"]);
    repo.git(&["commit", "-qm", "ignore vendor, keep .env"]);
    std::fs::create_dir_all(repo.path.join("vendor/pkg")).unwrap();
    std::fs::write(repo.path.join("vendor/pkg/lib.txt"), "vendored\n").unwrap();
    std::fs::write(repo.path.join("local.cfg"), "local\n").unwrap();
    let mock = MockModel::start().await;
    let servers = "    - { name: s, command: python3, args: [tools/mcp_server.py], env: [ISSUES_TOKEN] }\n";
    let policy = format!("{OPEN_POLICY}paths:\n  read_deny: ['**/.env']\nmcp:\n  allow: ['s/*']\n");
    let spec = spec_with_mcp("mcp-snapshot", &mock, servers).replace("max_turns: 10", "max_turns: 20");
    let yaml = with_policy(&repo, &spec, &policy);
    mock.turn(write("status.txt", "edited by the model\n"), false)
        .turn(write("new.txt", "new\n"), false)
        .turn(call("s__read_file", json!({"path": "status.txt"})), false)
        .turn(call("s__read_file", json!({"path": "new.txt"})), false)
        .turn(call("s__read_file", json!({"path": "vendor/pkg/lib.txt"})), false)
        .turn(call("s__read_file", json!({"path": "local.cfg"})), false)
        .turn(call("s__read_file", json!({"path": ".env"})), false)
        .turn(call("s__write_repo", json!({"path": "vendor/pkg/planted.txt"})), false)
        .turn(call("s__read_file", json!({"path": ".git/HEAD"})), false);
    fix(&mock);
    let run = run_job_env(&repo, &yaml, &[("ISSUES_TOKEN", SECRET)]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(result_of(&mock, 2), "broken\n", "the model's edit is not the server's");
    assert!(result_of(&mock, 3).contains("cannot read"), "nor its new file: {}", result_of(&mock, 3));
    assert_eq!(result_of(&mock, 4), "vendored\n", "an ignored directory is there");
    assert_eq!(result_of(&mock, 5), "local\n", "an ignored file is there");
    let env = result_of(&mock, 6);
    assert!(env.contains("cannot read") && !env.contains("hunter2"), "a read-denied file is not: {env}");
    assert!(result_of(&mock, 7).contains("cannot write"), "read-only: {}", result_of(&mock, 7));
    assert!(result_of(&mock, 8).starts_with("ref: refs/heads/"), "the git dir: {}", result_of(&mock, 8));
    assert!(!repo.path.join("vendor/pkg/planted.txt").exists());
    let scratch = repo.path.join(".hone/jail");
    let left: Vec<_> =
        std::fs::read_dir(&scratch).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "the snapshot is removed with the run: {left:?}");
}
