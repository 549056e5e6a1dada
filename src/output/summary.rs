//! `summary.md`: a short human summary, ready for `GITHUB_STEP_SUMMARY`. Every name, path,
//! command, message and the model's words are escaped or made inert (`crate::markdown`): the
//! page GitHub renders shows no image, HTML or hidden text from the run. Its timeline is a
//! Mermaid chart (`timeline`), whose labels cannot leave it.

use crate::markdown as md;
use crate::record::{RunRecord, Status};
use std::fmt::Write as _;

/// A check's result in a markdown table (the checks table here, the PR body's): an icon, its
/// verdict (`verify::Verdict`), and how many of its tests fail when its report says and the
/// verdict names none.
pub fn cell(c: &crate::verify::CheckResult) -> String {
    use crate::verify::{Style, Verdict};
    let verdict = c.verdict();
    let icon = match verdict {
        Verdict::Pass => "✅",
        Verdict::FailsAsBefore { .. } => "➖",
        Verdict::Cancelled => "⏹️",
        _ => "❌",
    };
    let words = verdict.describe(Style { name: md::code_cell, text: md::text });
    match (&c.failing_tests, verdict) {
        (_, Verdict::NewFailures { .. }) => format!("{icon} {words}"),
        (Some(f), _) if !f.is_empty() => format!("{icon} {words}; {} failing", f.len()),
        _ => format!("{icon} {words}"),
    }
}

/// The setup commands and how each went.
fn setup(s: &mut String, r: &RunRecord) {
    if r.setup.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n### Setup\n\n| Command | Result | Time |\n|---|---|---|");
    for c in &r.setup {
        let res = c.verdict().describe(crate::verify::Style { name: md::code_cell, text: md::text });
        let _ = writeln!(s, "| {} | {res} | {:.1}s |", md::code_cell(&c.name), c.duration_ms as f64 / 1000.0);
    }
}

/// The MCP servers: how each fared, the tools offered and kept back, the calls.
fn mcp(s: &mut String, r: &RunRecord) {
    if r.mcp.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n### MCP servers\n\n| Server | Status | Tools offered | Kept back | Calls |\n|---|---|---|---|---|"
    );
    for m in &r.mcp {
        let status = match (m.status, &m.error) {
            (crate::protocol::McpStatus::Running, _) => "running".to_string(),
            (st, e) => {
                let why = md::text(e.as_deref().unwrap_or("").lines().next().unwrap_or(""));
                format!("{}: {why}", if st == crate::protocol::McpStatus::Failed { "failed" } else { "stopped" })
            }
        };
        let tools: Vec<String> = m.offered.iter().map(|t| md::code_cell(&t.exposed)).collect();
        let failed = if m.failed_calls > 0 { format!(" ({} failed)", m.failed_calls) } else { String::new() };
        let name = md::code_cell(&m.name);
        let _ = writeln!(s, "| {name} | {status} | {} | {} | {}{failed} |", tools.join(" "), m.denied.len(), m.calls);
    }
}

/// The hosts reached and refused through hone's proxy (policies that list hosts).
fn network(s: &mut String, r: &RunRecord) {
    let hosts = &r.policy.network.hosts;
    if hosts.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n### Network\n\n| From | Host | Result | Connections | Sent | Received |\n|---|---|---|---|---|---|"
    );
    for h in hosts {
        let result = match (h.allowed, &h.reason) {
            (true, None) => format!("reached ({})", md::text(h.rule.as_deref().unwrap_or(""))),
            (true, Some(why)) => format!("allowed, failed: {}", md::text(why)),
            (false, why) => format!("**refused**: {}", md::text(why.as_deref().unwrap_or(""))),
        };
        let host = md::code_cell(&format!("{}:{}", h.host, h.port));
        let _ = writeln!(
            s,
            "| {} | {host} | {result} | {} | {} | {} |",
            md::code_cell(&h.purpose),
            h.connections,
            bytes(h.bytes_sent),
            bytes(h.bytes_received)
        );
    }
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// The checks table: each check's expectation, baseline, final result and attempts.
fn checks(s: &mut String, r: &RunRecord) {
    if r.verify.is_empty() && r.baseline.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n### Checks\n\n| Check | Expect | Baseline | Final | Attempts |\n|---|---|---|---|---|");
    let names: Vec<&str> = r.baseline.iter().chain(&r.verify).map(|c| c.name.as_str()).fold(Vec::new(), |mut v, n| {
        if !v.contains(&n) {
            v.push(n);
        }
        v
    });
    for name in names {
        let base = r.baseline.iter().find(|c| c.name == name);
        let last = r.verify.iter().rev().find(|c| c.name == name);
        let attempts = r.verify.iter().filter(|c| c.name == name).count();
        let expect = base
            .or(last)
            .map_or("pass", |c| if c.expect == crate::spec::Expect::NoRegression { "no-regression" } else { "pass" });
        let _ = writeln!(
            s,
            "| {} | {expect} | {} | {} | {attempts} |",
            md::code_cell(name),
            base.map_or("—".into(), cell),
            last.map_or("not run".into(), cell)
        );
    }
}

/// The table of facts at the top: status, model, branch, base, turns, cost, retries.
fn facts(s: &mut String, r: &RunRecord) {
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| Status | `{}` (exit {}) |", r.status.as_str(), r.exit_code);
    let answered = match &r.model_id {
        Some(id) if *id != r.model => format!(" (answered by {})", md::code_cell(id)),
        _ => String::new(),
    };
    let (provider, model) = (md::text(&r.provider), md::code_cell(&r.model));
    let _ = writeln!(s, "| Model | {provider} {model}{answered} · hone {} |", r.hone_version);
    for m in r.models.iter().skip(1) {
        let why = m.switched_because.as_deref().map_or(String::new(), |w| format!(": {}", md::text(w)));
        let (provider, model) = (md::text(&m.provider), md::code_cell(&m.model));
        let _ = writeln!(s, "| Fallback | {provider} {model} from turn {}, {} turn(s){why} |", m.from_turn, m.turns);
    }
    let branch = match &r.commit {
        Some(c) => format!("{} at {}", md::code_cell(&c.branch), md::code_cell(&c.sha[..c.sha.len().min(12)])),
        None => "no commit".into(),
    };
    let _ = writeln!(s, "| Branch | {branch} |");
    let base_sha = md::code_cell(&r.base_sha[..r.base_sha.len().min(12)]);
    let _ = writeln!(s, "| Base | {} ({base_sha}) |", md::code_cell(&r.base));
    let _ = writeln!(
        s,
        "| Turns | {} · {} tokens{} · {} fix attempt(s) · {:.1}s |",
        r.turns,
        r.usage.total_tokens,
        cached(&r.usage),
        r.fix_attempts,
        r.duration_ms as f64 / 1000.0
    );
    if let Some(from) = &r.continued_from {
        let _ = writeln!(s, "| Continued from | {} |", md::code_cell(from));
    }
    if let Some(c) = &r.cost {
        use crate::spec::pricing::dollars;
        let limit = c.limit_usd.map(|l| format!(" of {}", dollars(l))).unwrap_or_default();
        let _ = writeln!(s, "| Cost | {}{limit} |", dollars(c.usd));
    }
    instructions(s, r);
    memory(s, r);
    if r.model_retries.total > 0 {
        let kinds: Vec<String> = r.model_retries.by_kind.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        let _ = writeln!(s, "| Model retries | {} ({}) |", r.model_retries.total, kinds.join(", "));
    }
}

/// The repository's instruction files the model was given (those cut short say so), and the
/// commit they were read from.
fn instructions(s: &mut String, r: &RunRecord) {
    if r.instructions.is_empty() {
        return;
    }
    let files: Vec<String> = r
        .instructions
        .iter()
        .map(|f| format!("{}{}", md::code_cell(&f.path), if f.truncated { " (cut)" } else { "" }))
        .collect();
    let short = |c: &str| c.chars().take(12).collect::<String>();
    let at = r.instructions_commit.as_deref().map(|c| format!(" at {}", md::code_cell(&short(c))));
    let _ = writeln!(s, "| Instructions | {}{} |", files.join(", "), at.unwrap_or_default());
}

/// What hone remembered of the repository: the entries given to the model, what was recorded.
fn memory(s: &mut String, r: &RunRecord) {
    let m = &r.memory;
    let said = match (&m.note, m.enabled) {
        (Some(note), false) => format!("off: {}", md::text(note)),
        (_, false) => return,
        _ => {
            let ids: Vec<String> = m.used.iter().map(|u| md::code_cell(&u.id)).collect();
            let given = if ids.is_empty() { String::new() } else { format!(" ({})", ids.join(", ")) };
            format!("{} of {} entries given{given} · {} fact(s) recorded", m.used.len(), m.entries, m.recorded)
        }
    };
    let _ = writeln!(s, "| Memory | {said} |");
}

pub fn render(r: &RunRecord) -> String {
    let icon = match r.status {
        Status::Success | Status::NoChange => "✅",
        Status::Cancelled => "⏹️",
        _ => "❌",
    };
    let mut s = String::new();
    let _ = writeln!(s, "## {icon} hone: {} — {}\n", md::code(&r.job), r.status.as_str());
    facts(&mut s, r);
    answer(&mut s, r);
    review(&mut s, r);
    if let Some(chart) = super::timeline::render(r) {
        let _ = write!(s, "\n### Timeline\n\n{chart}");
    }
    setup(&mut s, r);
    mcp(&mut s, r);
    network(&mut s, r);
    checks(&mut s, r);
    if let Some(t) = super::tries::table(r, "###") {
        s.push_str(&t);
    }
    if let Some(p) = &r.plan {
        let _ = writeln!(s, "\n### Plan (risk: {:?}; {} update(s))\n\n{}", p.risk, p.updates, p.render_md());
        if !p.verification.is_empty() {
            let _ = writeln!(s, "Verification: {}", md::inline(&p.verification));
        }
    }
    if !r.clarification.is_empty() {
        let _ = writeln!(s, "\n### Questions for a person\n");
        for q in &r.clarification {
            let _ = writeln!(s, "- {}", md::inline(q));
        }
    }
    for rb in &r.rollbacks {
        let (to, turn, why) = (rb.to_checkpoint, rb.turn, md::inline(&rb.reason));
        let _ = writeln!(s, "\n> ↩️ Rolled back to checkpoint {to} (turn {turn}): {why}");
    }
    if !r.files_changed.is_empty() {
        let _ = writeln!(s, "\n### Files changed\n");
        for f in &r.files_changed {
            let _ = writeln!(s, "- {} ({}, +{} −{})", md::code(&f.path), f.status, f.added, f.removed);
        }
    }
    if let Some(saved) = &r.saved_ref {
        let _ = writeln!(
            s,
            "\nThe unverified work was saved at {} (not on any branch). Inspect it with {}.",
            md::code(saved),
            md::code(&format!("git diff {} {saved}", r.base_sha))
        );
    }
    for e in &r.errors {
        let _ = write!(s, "\n{}", md::nest(&md::message(&e.message), &format!("> **{}**: ", e.code), "> "));
    }
    for w in &r.warnings {
        let _ = write!(s, "\n{}", md::nest(&md::message(w), "> ⚠️ ", "> "));
    }
    if !r.summary.trim().is_empty() {
        let _ = writeln!(s, "\n{}", r.summary.trim_end());
    } else if !r.final_message.trim().is_empty() {
        let msg: String = r.final_message.chars().take(3000).collect();
        let _ = write!(s, "\n### The model's final message\n\n{}", md::nest(&md::inert(&msg), "> ", "> "));
    }
    s
}

/// The task's answer (`output`), or why none was accepted.
fn answer(s: &mut String, r: &RunRecord) {
    let Some(check) = &r.output_check else { return };
    match &r.output {
        Some(v) => {
            let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
            let _ = write!(s, "\n### Result\n\n{}", md::code_block(&pretty));
        }
        None => {
            let _ = writeln!(
                s,
                "\n### Result\n\nNo valid answer after {} attempt(s) (schema: {}). The last problems:\n",
                check.attempts,
                md::code(&check.schema)
            );
            for e in check.errors.iter().take(10) {
                let _ = writeln!(s, "- {}", md::inline(e));
            }
        }
    }
}

/// Review mode: the review posted on the PR.
fn review(s: &mut String, r: &RunRecord) {
    let Some(rv) = &r.review else { return };
    let what = match rv.operation {
        crate::protocol::ReviewOperation::Created => "posted",
        crate::protocol::ReviewOperation::Updated => "updated",
        crate::protocol::ReviewOperation::None => "not posted",
    };
    let at = rv.url.as_deref().map(|u| format!(": {}", md::code(u))).unwrap_or_default();
    let _ = writeln!(
        s,
        "\n### Review\n\nThe review on #{} was {what}{at}, with {} suggestion(s){}.",
        rv.number,
        rv.suggestions,
        if rv.in_patch.is_empty() { String::new() } else { format!(" and {} file(s) as a patch", rv.in_patch.len()) }
    );
}

/// How much of the prompt came from the provider's cache, when it said.
fn cached(u: &crate::protocol::Usage) -> String {
    if u.cached_prompt_tokens == 0 || u.prompt_tokens == 0 {
        return String::new();
    }
    format!(
        " ({} of {} prompt tokens cached, {}%)",
        u.cached_prompt_tokens,
        u.prompt_tokens,
        100 * u.cached_prompt_tokens / u.prompt_tokens
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

    fn check(name: &str, attempt: u32, new_failures: &[&str]) -> crate::verify::CheckResult {
        crate::verify::CheckResult {
            attempt,
            new_failures: new_failures.iter().map(|t| t.to_string()).collect(),
            ..crate::verify::example(name)
        }
    }

    #[test]
    fn names_tests_messages_and_output_from_the_run_render_nothing_and_keep_the_tables_whole() {
        let name = "a|b`![](http://x.example/i.png)`";
        let mut r = RunRecord::new("j", "r", String::new());
        r.setup.push(check(name, 0, &[]));
        r.baseline.push(check(name, 0, &[]));
        r.verify.push(check(name, 1, &["t`<img src=y>`|z", "<!-- hidden -->"]));
        r.warnings.push("MCP said <img src=\"http://x.example/w\">".into());
        r.errors.push(crate::error::HoneError::new(
            crate::error::Code::Setup,
            "setup failed. Its output ended:\n```\n![](http://x.example/o.png)\n",
        ));
        r.clarification.push("Which? ![](http://x.example/q.png)".into());
        let md = render(&r);
        assert!(crate::markdown::is_inert(&md), "{md}");
        // Every table row keeps its cells: a `|` in a name does not make one more.
        let (mut widths, mut cells, mut in_row) = (Vec::new(), 0, false);
        for e in Parser::new_ext(&md, Options::ENABLE_TABLES) {
            match e {
                Event::Start(Tag::TableRow | Tag::TableHead) => (cells, in_row) = (0, true),
                Event::Start(Tag::TableCell) if in_row => cells += 1,
                Event::End(TagEnd::TableRow | TagEnd::TableHead) => widths.push(cells),
                _ => {}
            }
        }
        assert_eq!(widths, [2, 2, 2, 2, 2, 2, 3, 3, 5, 5], "{md}");
        assert!(md.contains("x.example/o.png") && md.contains("<!-- hidden -->"), "{md}");
    }
}
