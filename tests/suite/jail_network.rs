//! Attacks on the jail (issue 10) through sockets: no host unix socket (in a temp dir, in `/run`,
//! or abstract) is reachable without network, and no host abstract socket even with network
//! (Landlock's scoping). The shared helpers are in `jail_support`.

use super::jail_support::{cmd, fix, result_of, spec, unique, write};
use crate::common::mock_model::MockModel;
use crate::common::*;
use std::path::Path;

// 6. ------------------------------------------------------------------------------------------

/// Removes a socket file the test made outside its temp dirs, however the test ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Item 6: under `network: false`, unix sockets of host processes are unreachable: a pathname
/// socket in a fresh temp dir, one in `/run` (where `docker.sock` lives; or `/tmp` if `/run` is
/// not writable), and an abstract one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_unix_sockets_are_unreachable_without_network() {
    require!(Need::UserNamespaces);
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let repo = broken_repo();
    let fresh = tempfile::tempdir().unwrap();
    let name = unique("hone-jail-sock");
    let mut listeners: Vec<(String, String, UnixListener)> = Vec::new();
    let p = fresh.path().join("host.sock");
    listeners.push(("a socket in a fresh temp dir".into(), p.display().to_string(), UnixListener::bind(&p).unwrap()));
    let mut cleanup = None;
    for dir in ["/run", "/tmp"] {
        let p = Path::new(dir).join(format!("{name}.sock"));
        if let Ok(l) = UnixListener::bind(&p) {
            cleanup = Some(RemoveOnDrop(p.clone()));
            listeners.push((format!("a socket in {dir}"), p.display().to_string(), l));
            break;
        }
    }
    assert!(cleanup.is_some(), "neither /run nor /tmp is writable");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    listeners.push(("an abstract socket".into(), format!("@{name}"), UnixListener::bind_addr(&addr).unwrap()));
    let targets: Vec<String> = listeners.iter().map(|(_, a, _)| format!("{a:?}")).collect();
    let script = format!(
        r#"import socket
for a in [{}]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + a[1:] if a.startswith("@") else a)
        s.sendall(b"hello from the jail")
        print("CONNECTED", a)
    except OSError as e:
        print("REFUSED", a, e)
"#,
        targets.join(", ")
    );
    let mock = MockModel::start().await;
    mock.turn(write("connect.py", &script), false).turn(cmd("python3 connect.py; rm -f connect.py"), false);
    fix(&mock);
    let yaml = spec(&repo, "sockets", &mock, &format!("{OPEN_POLICY}network: false\n"), "");
    let run = run_job(&repo, &yaml, &[]).await;
    let said = result_of(&mock, 1);
    let mut reached = Vec::new();
    for (what, a, l) in &listeners {
        l.set_nonblocking(true).unwrap();
        if l.accept().is_ok() {
            reached.push(format!("{what} ({a})"));
        }
    }
    assert!(reached.is_empty(), "a command reached host unix sockets without network: {reached:?}; it said: {said}");
    for (what, a, _) in &listeners {
        assert!(
            said.contains(&format!("REFUSED {a}")),
            "the connection to {what} was not tried or not refused: {said}"
        );
    }
    assert_eq!(run.code, 0, "{}", run.stdout);
}

// Landlock ---------------------------------------------------------------------------------------

/// With `network: true` the jail shares the host's network, so only Landlock's scoping (ABI 6)
/// keeps a command from connecting to a host process's abstract unix socket. The report names
/// the ABI the kernel offers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_keeps_commands_off_host_abstract_sockets_even_with_network() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    require!(Need::UserNamespaces);
    require!(Need::Landlock);
    let repo = broken_repo();
    let name = unique("hone-landlock-sock");
    let listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    // Control: outside the jail, the same connection works.
    let control = std::process::Command::new("python3")
        .args([
            "-c",
            &format!("import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); print('CONNECTED')"),
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&control.stdout).contains("CONNECTED"), "control: {control:?}");
    listener.set_nonblocking(true).unwrap();
    while listener.accept().is_ok() {}
    let mock = MockModel::start().await;
    let script = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0{name}')\n    print('CONNECTED')\nexcept OSError as e:\n    print('REFUSED', e)\n"
    );
    mock.turn(write("connect.py", &script), false).turn(cmd("python3 connect.py; rm -f connect.py"), false);
    fix(&mock);
    let yaml = spec(&repo, "landlock", &mock, &format!("{OPEN_POLICY}network: true\n"), "");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stdout);
    let said = result_of(&mock, 1);
    assert!(listener.accept().is_err(), "a command reached a host abstract socket: {said}");
    assert!(said.contains("REFUSED") && !said.contains("CONNECTED"), "{said}");
    let report = run.report();
    assert_eq!(report["policy"]["sandbox"]["network_isolated"], false);
    assert_eq!(report["policy"]["sandbox"]["landlock_abi"], crate::common::require::landlock_abi());
}
