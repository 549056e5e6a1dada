//! A fleet's process holds threads, descriptors and child processes by the concurrency, not by
//! the number of repositories, and holds none of them for a repository once it is done: read
//! from `/proc/self` by hone (`fleet::usage`, logged at debug level) before the pool, at each
//! repository's start and end, and after the pool.

use crate::common::*;

#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    threads: usize,
    fds: usize,
    children: usize,
}

/// `threads=3 fds=11 children=0 rss_kib=…`.
fn usage(s: &str) -> Usage {
    let field = |k: &str| -> usize {
        let at = s.find(&format!("{k}=")).unwrap_or_else(|| panic!("{k} in {s}")) + k.len() + 1;
        s[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    Usage { threads: field("threads"), fds: field("fds"), children: field("children") }
}

/// The fleet's `before …; peak …; after …` resources line.
fn resources(stderr: &str) -> (Usage, Usage, Usage) {
    let line = stderr.lines().find_map(|l| l.split_once("hone fleet resources: ").map(|(_, r)| r));
    let parts: Vec<&str> = line.unwrap_or_else(|| panic!("no resources line in {stderr}")).split("; ").collect();
    (usage(parts[0]), usage(parts[1]), usage(parts[2]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_four_repositories_leave_nothing_behind_and_peak_by_the_concurrency() {
    let (n, concurrency) = (24, 2);
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "many", "");
    let origin = dir.path().join("origins/app.git");
    let mut repos = String::new();
    for i in 0..n {
        let copy = dir.path().join(format!("origins/r{i:02}.git"));
        repo::git(dir.path(), &["clone", "-q", "--bare", origin.to_str().unwrap(), copy.to_str().unwrap()]);
        repos.push_str(&format!("  - url: {}\n", copy.display()));
    }
    let text = format!("version: 1\njob: job.yaml\nrepos:\n{repos}concurrency: {concurrency}\nworkspace: ws\n");
    std::fs::write(&fleet, text).unwrap();
    let run = run_hone(&["fleet", fleet.to_str().unwrap(), "--dry-run"], &[], dir.path().join("unused")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(&format!("{n} repositories: {n} succeeded")), "{}", run.stdout);
    let (before, peak, after) = resources(&run.stderr);
    // Nothing is kept for a repository once it is done: no descriptor, thread or child more
    // than before the pool (the one more thread is the async runtime's, for the pool itself).
    assert!(after.fds <= before.fds, "descriptors left: {before:?} -> {after:?}");
    assert!(after.threads <= before.threads + 1, "threads left: {before:?} -> {after:?}");
    assert_eq!(after.children, 0, "child processes left: {after:?}");
    // While running: a few per worker (its thread and runtime, a run's pipes, sandbox and
    // checks), far fewer than one per repository.
    assert!(peak.threads <= before.threads + 1 + 5 * concurrency, "threads: {before:?} -> {peak:?}");
    assert!(peak.fds <= before.fds + 16 * concurrency, "descriptors: {before:?} -> {peak:?}");
    assert!(peak.children <= 3 * concurrency, "children: {peak:?}");
}
