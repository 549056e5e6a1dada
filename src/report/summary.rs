//! `summary.md`: a short human summary, ready for `GITHUB_STEP_SUMMARY`.

use super::{RunReport, Status};
use std::fmt::Write as _;

pub fn render(r: &RunReport) -> String {
    let icon = match r.status {
        Status::Success | Status::NoChange => "✅",
        Status::Cancelled => "⏹️",
        _ => "❌",
    };
    let mut s = String::new();
    let _ = writeln!(s, "## {icon} hone: `{}` — {}\n", r.job, r.status.as_str());
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| Status | `{}` (exit {}) |", r.status.as_str(), r.exit_code);
    let _ = writeln!(s, "| Model | {} `{}` |", r.provider, r.model);
    let branch = match &r.commit {
        Some(c) => format!("`{}` at `{}`", c.branch, &c.sha[..c.sha.len().min(12)]),
        None => "no commit".into(),
    };
    let _ = writeln!(s, "| Branch | {branch} |");
    let _ = writeln!(s, "| Base | `{}` (`{}`) |", r.base, &r.base_sha[..r.base_sha.len().min(12)]);
    let _ = writeln!(
        s,
        "| Turns | {} · {} tokens · {} fix attempt(s) · {:.1}s |",
        r.turns,
        r.usage.total_tokens,
        r.fix_attempts,
        r.duration_ms as f64 / 1000.0
    );
    if r.model_retries.total > 0 {
        let kinds: Vec<String> = r.model_retries.by_kind.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        let _ = writeln!(s, "| Model retries | {} ({}) |", r.model_retries.total, kinds.join(", "));
    }
    if !r.verify.is_empty() {
        let _ = writeln!(s, "\n### Checks\n\n| Check | Attempt | Result | Time |\n|---|---|---|---|");
        for c in &r.verify {
            let res = if c.passed {
                "✅ pass".to_string()
            } else if c.timed_out {
                "❌ timed out".into()
            } else {
                format!("❌ exit {}", c.exit_code.map_or("signal".into(), |e| e.to_string()))
            };
            let _ = writeln!(s, "| `{}` | {} | {res} | {:.1}s |", c.name, c.attempt, c.duration_ms as f64 / 1000.0);
        }
    }
    if !r.files_changed.is_empty() {
        let _ = writeln!(s, "\n### Files changed\n");
        for f in &r.files_changed {
            let _ = writeln!(s, "- `{}` ({}, +{} −{})", f.path, f.status, f.added, f.removed);
        }
    }
    if let Some(saved) = &r.saved_ref {
        let _ = writeln!(
            s,
            "\nThe unverified work was saved at `{saved}` (not on any branch). Inspect it with `git diff {} {saved}`.",
            r.base_sha
        );
    }
    for e in &r.errors {
        let _ = writeln!(s, "\n> **{}**: {}", e.code, e.message.replace('\n', "\n> "));
    }
    for w in &r.warnings {
        let _ = writeln!(s, "\n> ⚠️ {w}");
    }
    if !r.final_message.trim().is_empty() {
        let msg: String = r.final_message.chars().take(3000).collect();
        let _ = writeln!(
            s,
            "\n### The model's final message\n\n{}",
            msg.lines().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n")
        );
    }
    s
}
