//! The `grep` and `glob_file_search` tools against ripgrep on the same tree and queries
//! (issue 14, item 2). Run through `bench/search.sh`, which builds the tree; by hand:
//!
//!     cargo bench --bench search -- TREE [RUNS] [RG]
//!
//! Each query runs RUNS times in this process through the tools' dispatch, as the agent loop
//! calls them (the first call is reported apart), taking turns with an `rg` process with the
//! same filters (hidden files searched, .gitignore respected, `.git` skipped, line numbers), so
//! that `rg`'s times include its process start, as a model's `rg` command's would. The matches
//! each side finds are compared, so a fast wrong answer cannot pass. Prints a Markdown table.

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
    let tools = Tools::new(tree).expect("the tree exists");
    println!("| query | matches | hone first call | hone median | rg median | hone / rg |");
    println!("|---|---|---|---|---|---|");
    for (label, args, rg_args) in queries() {
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
        for _ in 0..runs {
            let t = Instant::now();
            out = tools.call(name, &args);
            times.push(t.elapsed());
            let t = Instant::now();
            let o = rg_run();
            rg_times.push(t.elapsed());
            rg_out = String::from_utf8_lossy(&o.stdout).into_owned();
        }
        // glob_file_search lists 200 files and counts the rest: those must be rg's, and as many.
        let (ours, theirs) = (found(&out), found(&rg_out));
        let total = ours.len() + more(&out);
        assert_eq!(total, theirs.len(), "{label}: hone found {total} and rg {}\n{out}", theirs.len());
        assert!(ours.is_subset(&theirs), "{label}: hone and rg found different matches");
        let (m, r) = (median(times), median(rg_times));
        println!(
            "| {label} | {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} |",
            total,
            first.as_secs_f64() * 1e3,
            m.as_secs_f64() * 1e3,
            r.as_secs_f64() * 1e3,
            m.as_secs_f64() / r.as_secs_f64()
        );
    }
}
