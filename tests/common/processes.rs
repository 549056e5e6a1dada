//! Waiting on what a test's commands leave behind: marker files they create, and processes
//! that must not outlive a run.

use std::path::Path;

/// Command lines of live processes that contain `marker` (to prove nothing outlived a run).
/// The kernel ends a PID namespace's processes as its init exits, which can take a moment after
/// hone has exited: so this waits (bounded, 10 s) for them to go, and returns those still alive.
/// A real survivor (every marker process sleeps for minutes) is still there after the wait.
pub fn survivors(marker: &str) -> Vec<String> {
    let list = || {
        let ps = std::process::Command::new("ps").args(["-eo", "stat=,args="]).output().expect("ps runs");
        String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains(marker) && !l.contains("ps -eo") && !l.trim_start().starts_with('Z'))
            .map(|l| l.trim_start().split_once(' ').map_or(l, |(_, args)| args).trim().to_string())
            .collect::<Vec<_>>()
    };
    let start = std::time::Instant::now();
    loop {
        let alive = list();
        if alive.is_empty() || start.elapsed() > std::time::Duration::from_secs(10) {
            return alive;
        }
        std::thread::park_timeout(std::time::Duration::from_millis(50));
    }
}

/// Block until `path` exists (a marker a test's command creates), failing after `limit`.
pub fn wait_for_file(path: &Path, limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} did not appear within {limit:?}", path.display());
        std::thread::park_timeout(std::time::Duration::from_millis(20));
    }
}
