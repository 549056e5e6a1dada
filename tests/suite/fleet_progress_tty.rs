//! On a terminal (stderr a pseudo-terminal, `nix::pty`): one status line redrawn in place, a
//! failure printed above it, and the last status left as an ordinary line with nothing drawn
//! after it.

use crate::common::*;
use std::io::Read;

/// Run `hone fleet FLEET --dry-run` with stderr on a new pseudo-terminal; what the terminal got.
fn on_a_terminal(dir: &std::path::Path, fleet: &std::path::Path) -> (i32, String) {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hone"));
    cmd.args(["fleet", fleet.to_str().unwrap(), "--dry-run"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(pty.slave));
    let mut child = cmd.spawn().expect("hone starts");
    drop(cmd); // the slave's last copy outside the child: the reader ends when hone exits
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once every writer of the slave has closed it.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    });
    let code = child.wait().expect("hone ends").code().unwrap_or(-1);
    (code, reader.join().unwrap())
}

#[test]
fn a_terminal_gets_one_redrawn_line_finished_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "tty", "");
    std::fs::create_dir_all(dir.path().join("not-a-repo")).unwrap();
    let text =
        std::fs::read_to_string(&fleet).unwrap().replace("workspace: ws\n", "  - path: not-a-repo\nworkspace: ws\n");
    std::fs::write(&fleet, text).unwrap();
    let (code, out) = on_a_terminal(dir.path(), &fleet);
    assert_eq!(code, 1, "{out:?}");
    let (clear, nowrap) = ("\r\x1b[2K", "\x1b[?7l");
    // Drawn in place from the start, and redrawn (not a new line each time).
    assert!(out.starts_with(&format!("{clear}{nowrap}hone fleet: 0/2 done, ")), "{out:?}");
    // The failure on a line of its own, the status line cleared before it (the terminal ends
    // lines with CR LF).
    let failure = out.find("__not-a-repo failed E_GIT: ").expect("the failure's line");
    let at = out[..failure].rfind(clear).expect("the status line cleared before it");
    let head = &out[at + clear.len()..failure];
    assert!(head.starts_with("hone fleet: ") && !head.contains(['\r', '\x1b']), "{out:?}");
    assert!(out[..at].ends_with("\x1b[?7h"), "a status line was on the terminal: {out:?}");
    // The end: the last status as an ordinary line, and nothing drawn after it.
    let last = format!("{clear}hone fleet: 2/2 done, 0 running, 1 failed, PRs 0 created 0 updated\r\n");
    assert!(out.ends_with(&last), "{out:?}");
    // Only two lines ended: the failure's and the last; every other status was drawn in place.
    assert_eq!(out.matches("\r\n").count(), 2, "{out:?}");
}
