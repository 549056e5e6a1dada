//! The redactor on tool results of growing size (issue 22, item 9): `Redactor::apply` with the
//! secrets of a typical run, and the spelled-out scan it now includes, alone. By hand:
//!
//!     cargo bench --bench redact
//!
//! Texts: hone's own sources (code and prose, as a tool result is), 30 KB (the default cap on
//! a tool result), 1 MB and 16 MB; and a worst case for the spelled-out scan (every byte the
//! first character of a secret whose last character never comes). Prints a Markdown table of
//! the median of 20 runs.

use std::time::{Duration, Instant};

/// The secrets of a typical run: a model key, a forge token, two MCP servers' tokens.
const SECRETS: &[&str] = &[
    "sk-proj-Zq81x0RaW4kLmNoPqRsTuVwXyZ012345",
    "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5",
    "mcp-token-Zq81x0RaW4",
    "lin_api_q9W8e7R6t5Y4u3I2o1P0",
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// hone's sources, repeated to `size` bytes (cut at a character boundary).
fn sources(size: usize) -> String {
    let mut all = String::new();
    for e in ignore::WalkBuilder::new("src").build().flatten() {
        if e.file_type().is_some_and(|t| t.is_file()) {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    let mut out = String::with_capacity(size + all.len());
    while out.len() < size {
        out.push_str(&all);
    }
    let mut cut = size;
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}

fn main() {
    let worst_secret = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab";
    let cases: Vec<(String, String)> = vec![
        ("sources, 30 KB".into(), sources(30_000)),
        ("sources, 1 MB".into(), sources(1 << 20)),
        ("sources, 16 MB".into(), sources(16 << 20)),
        ("worst case, 1 MB of `a`".into(), "a".repeat(1 << 20)),
    ];
    println!("| text | `apply`, {} secrets | spelled-out scan, one secret | the scan's share |", SECRETS.len());
    println!("|---|---|---|---|");
    for (label, text) in &cases {
        let runs = if text.len() > (8 << 20) { 5 } else { 20 };
        let worst = label.starts_with("worst");
        let secret = if worst { worst_secret } else { SECRETS[0] };
        let mut secrets = SECRETS.to_vec();
        if worst {
            secrets.push(worst_secret);
        }
        let apply_fn = hone::bench::redactor(&secrets);
        let apply = time(runs, || {
            std::hint::black_box(apply_fn(text));
        });
        let scan = time(runs, || {
            std::hint::black_box(hone::bench::spelled_out(text, secret));
        });
        let share = scan.as_secs_f64() * secrets.len() as f64 / apply.as_secs_f64();
        println!("| {label} | {apply:.2?} | {scan:.2?} | {:.0}% |", share * 100.0);
    }
    fleet_of_secrets();
}

/// A fleet with a GitHub App registers a token per repository: `apply` on a log line and on a
/// 30 KB tool result with the 4 secrets and with 1,000 more.
fn fleet_of_secrets() {
    let tokens: Vec<String> = (0..1000).map(|i| format!("ghs_{i:04}aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF")).collect();
    let mut many: Vec<&str> = SECRETS.to_vec();
    many.extend(tokens.iter().map(String::as_str));
    let line = "hone fleet: acme__service-42 failed E_BUILD_FAIL: check `test` failed (exit 1) (41s)".to_string();
    println!("\n| text | `apply`, {} secrets | `apply`, {} secrets |", SECRETS.len(), many.len());
    println!("|---|---|---|");
    for (label, text) in [("a log line", line), ("sources, 30 KB", sources(30_000))] {
        let (few, lots) = (hone::bench::redactor(SECRETS), hone::bench::redactor(&many));
        let a = time(20, || {
            std::hint::black_box(few(&text));
        });
        let b = time(20, || {
            std::hint::black_box(lots(&text));
        });
        println!("| {label} | {a:.2?} | {b:.2?} |");
    }
}
