//! The `grep` and `glob_file_search` tools against ripgrep on the same tree and queries
//! (issue 14, item 2). Run through `bench/search.sh`, which builds the tree; by hand:
//!
//!     cargo bench --bench search -- TREE [RUNS] [RG] [LIMIT]
//!
//! Each query runs RUNS times in this process through the tools' dispatch, as the agent loop
//! calls them (the first call is reported apart), taking turns with an `rg` process with the
//! same filters (hidden files searched, .gitignore respected, `.git` skipped, line numbers), so
//! that `rg`'s times include its process start, as a model's `rg` command's would. The matches
//! each side finds are compared, so a fast wrong answer cannot pass. Prints a Markdown table,
//! then the largest `grep` ratio; with LIMIT (like 1.2), a ratio above it fails the bench, so a
//! slip shows (issue 44: a per-file `/proc` lookup took `grep` from 1.05 to 1.55 times rg's time).

use hone::bench::Tools;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// (label, tool call arguments, rg arguments)
fn queries() -> Vec<(&'static str, serde_json::Value, Vec<&'static str>)> {
    use serde_json::json;
    vec![
        (
            "grep literal `fn try_reserve_exact`",
            json!({"pattern": "fn try_reserve_exact", "max_results": 1000}),
            vec!["-n", "fn try_reserve_exact"],
        ),
        (
            "grep regex `impl<[A-Z]\\w*> Drop for`",
            json!({"pattern": r"impl<[A-Z]\w*> Drop for", "max_results": 1000}),
            vec!["-n", r"impl<[A-Z]\w*> Drop for"],
        ),
        (
            "grep no match",
            json!({"pattern": "zqxjv_no_such_token_42", "max_results": 1000}),
            vec!["-n", "zqxjv_no_such_token_42"],
        ),
        (
            "grep literal, `*.toml` only",
            json!({"pattern": "edition = \"2021\"", "glob": "*.toml", "max_results": 1000}),
            vec!["-n", "-g", "*.toml", "edition = \"2021\""],
        ),
        ("glob `**/*.rs`", json!({"pattern": "**/*.rs"}), vec!["--files", "-g", "*.rs"]),
        ("glob `**/build.rs`", json!({"pattern": "**/build.rs"}), vec!["--files", "-g", "build.rs"]),
    ]
}

/// CPU time (user and system) of this process (`RUSAGE_SELF`, all its threads) or of its
/// waited-for children (`RUSAGE_CHILDREN`): on a busy machine, wall times wander with the load;
/// CPU times much less.
fn cpu(who: i32) -> Duration {
    // SAFETY: rusage is plain data, filled by the kernel.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a pointer to a rusage.
    unsafe { libc::getrusage(who, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The match lines (`path:line`) or file paths in a tool's output or rg's.
fn found(out: &str) -> BTreeSet<String> {
    out.lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with("no "))
        .map(|l| l.splitn(3, ':').take(2).collect::<Vec<_>>().join(":"))
        .collect()
}

/// The files glob_file_search counted but did not list (`[... N more files; …]`).
fn more(out: &str) -> usize {
    out.lines().find_map(|l| l.strip_prefix("[... ")?.split(' ').next()?.parse().ok()).unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let tree = Path::new(args.first().expect("usage: search TREE [RUNS] [RG]"));
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let rg = args.get(2).cloned().unwrap_or_else(|| "rg".into());
    let limit: Option<f64> = args.get(3).and_then(|l| l.parse().ok());
    let mut worst = (0.0f64, "");
    let tools = Tools::new(tree).expect("the tree exists");
    println!("| query | matches | hone first call | hone median | rg median | hone / rg | CPU: hone / rg |");
    println!("|---|---|---|---|---|---|---|");
    // SEARCH_ONLY=TEXT runs only the queries whose label contains TEXT (to profile one).
    let only = std::env::var("SEARCH_ONLY").unwrap_or_default();
    for (label, args, rg_args) in queries().into_iter().filter(|q| q.0.contains(&only)) {
        let name = if label.starts_with("glob") { "glob_file_search" } else { "grep" };
        let args = args.to_string();
        // The tree in the page cache for both sides: one rg run first, not timed.
        let rg_run = || {
            Command::new(&rg)
                .args(["--hidden", "--no-require-git", "--no-config", "-g", "!.git", "--color", "never"])
                .args(&rg_args)
                .current_dir(tree)
                .output()
                .expect("rg runs")
        };
        rg_run();
        // The first call apart; then hone and rg take turns, so that noise from the machine
        // falls on both alike.
        let t = Instant::now();
        let mut out = tools.call(name, &args);
        let first = t.elapsed();
        let (mut times, mut rg_times, mut rg_out) = (Vec::new(), Vec::new(), String::new());
        let (mut cpus, mut rg_cpus) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (t, c) = (Instant::now(), cpu(libc::RUSAGE_SELF));
            out = tools.call(name, &args);
            times.push(t.elapsed());
            cpus.push(cpu(libc::RUSAGE_SELF) - c);
            let (t, c) = (Instant::now(), cpu(libc::RUSAGE_CHILDREN));
            let o = rg_run();
            rg_times.push(t.elapsed());
            rg_cpus.push(cpu(libc::RUSAGE_CHILDREN) - c);
            rg_out = String::from_utf8_lossy(&o.stdout).into_owned();
        }
        // glob_file_search lists 200 files and counts the rest: those must be rg's, and as many.
        let (ours, theirs) = (found(&out), found(&rg_out));
        let total = ours.len() + more(&out);
        assert_eq!(total, theirs.len(), "{label}: hone found {total} and rg {}\n{out}", theirs.len());
        assert!(ours.is_subset(&theirs), "{label}: hone and rg found different matches");
        let (m, r) = (median(times), median(rg_times));
        let ratio = m.as_secs_f64() / r.as_secs_f64();
        let cpu_ratio = median(cpus).as_secs_f64() / median(rg_cpus).as_secs_f64();
        if name == "grep" && ratio > worst.0 {
            worst = (ratio, label);
        }
        println!(
            "| {label} | {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} | {cpu_ratio:.2} |",
            total,
            first.as_secs_f64() * 1e3,
            m.as_secs_f64() * 1e3,
            r.as_secs_f64() * 1e3,
            ratio
        );
    }
    println!("\ngrep's largest ratio to rg: {:.2} ({})", worst.0, worst.1);
    if let Some(limit) = limit
        && worst.0 > limit
    {
        eprintln!("grep took {:.2} times rg's time, more than {limit}: a slip (see BENCHMARKS.md)", worst.0);
        std::process::exit(1);
    }
}
