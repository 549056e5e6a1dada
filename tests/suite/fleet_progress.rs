//! `hone fleet`'s live progress on stderr: periodic plain lines in a log (with the right counts,
//! never a carriage return or an escape code), nothing with `--quiet`, no workflow command from
//! a repository's name or error, a redrawn line on a terminal that is finished cleanly; and the
//! process's threads, descriptors and children bounded by the concurrency, none left per
//! repository when the fleet is done.

use crate::common::*;
use std::path::Path;

/// `fleet_of_one` (its PR created) and two local paths that fail: one not a repository, one
/// whose name carries a carriage return and a workflow command (which its error quotes).
fn three(dir: &Path) -> std::path::PathBuf {
    let fleet = fleet_of_one(dir, "progress", "pr: { enabled: true }\n");
    std::fs::create_dir_all(dir.join("not-a-repo")).unwrap();
    std::fs::create_dir_all(dir.join("bad\r::error::owned")).unwrap();
    let mut text = std::fs::read_to_string(&fleet).unwrap();
    text = text.replace(
        "workspace: ws\n",
        "  - path: not-a-repo\n  - path: \"bad\\r::error::owned\"\nconcurrency: 2\nworkspace: ws\n",
    );
    std::fs::write(&fleet, text).unwrap();
    fleet
}

async fn fleet(dir: &Path, extra: &[&str]) -> Run {
    let gh = fleet_of_one_github().await;
    let uri = gh.uri();
    let fleet = three(dir);
    let env = [("GITHUB_TOKEN", "ghp_progress0123456789"), ("GITHUB_API_URL", uri.as_str())];
    run_hone_env(&["fleet", fleet.to_str().unwrap()], extra, dir.join("unused"), &env).await
}

/// The progress lines: stderr's `hone fleet: …` lines (the debug log's lines start otherwise).
fn progress(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("hone fleet: ")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_gets_plain_progress_lines_with_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let run = fleet(dir.path(), &[]).await;
    assert_eq!(run.code, 1, "two repositories fail: {}", run.stderr);
    assert!(!run.stderr.contains('\r') && !run.stderr.contains('\x1b'), "{:?}", run.stderr);
    let lines = progress(&run.stderr);
    assert_eq!(lines[0], "hone fleet: 3 repositories, 2 at a time", "{lines:#?}");
    // A fleet of three gets a status line as each finishes, whatever the order.
    for n in 1..=3 {
        assert!(lines.iter().any(|l| l.starts_with(&format!("hone fleet: {n}/3 done, "))), "{n}/3 in {lines:#?}");
    }
    assert_eq!(*lines.last().unwrap(), "hone fleet: 3/3 done, 0 running, 2 failed, PRs 1 created 0 updated");
    let failures: Vec<_> = lines.iter().filter(|l| l.contains(" failed E_GIT")).collect();
    assert_eq!(failures.len(), 2, "{lines:#?}");
    assert!(failures.iter().any(|l| l.contains("__not-a-repo failed E_GIT: ")), "{failures:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_name_or_error_cannot_give_the_runner_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = fleet(dir.path(), &[]).await;
    let found = runner::commands(&run.stderr);
    assert!(found.is_empty(), "the runner would obey {found:#?}");
    // The error that quotes the name is there, its carriage return shown, not sent.
    assert!(
        run.stderr.contains("error__owned failed E_GIT: ") && run.stderr.contains("bad\\r::error::owned"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_prints_no_progress() {
    let dir = tempfile::tempdir().unwrap();
    let run = fleet(dir.path(), &["--quiet"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(progress(&run.stderr), Vec::<&str>::new());
    assert!(run.stdout.contains("3 repositories"), "the result line is still printed: {}", run.stdout);
}

#[path = "fleet_progress_tty.rs"]
mod tty;

#[path = "fleet_resources.rs"]
mod resources;
