//! The PR title and body, rendered from the run. The body carries a hidden marker
//! (`<!-- hone:job=NAME -->`) by which hone recognises its own PRs, and stays under GitHub's
//! 65,536-character limit. The marker is the only HTML in it: the summary is inert and every
//! name and path escaped (`crate::markdown`).

use super::super::state::Run;
use crate::markdown as md;
use std::fmt::Write as _;

pub const BODY_LIMIT: usize = 65_536;

pub fn marker(job: &str) -> String {
    format!("<!-- hone:job={job} -->")
}

/// Expand `{name}`, `{summary_title}`, `{branch}` and `{status}` in the title template.
pub fn title(template: &str, r: &Run) -> String {
    let summary_title = r
        .record
        .final_message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(&r.record.job)
        .trim_start_matches(['#', '*', '-', ' ']);
    let t = template
        .replace("{name}", &r.record.job)
        .replace("{summary_title}", &md::visible(summary_title))
        .replace("{branch}", &r.record.branch)
        .replace("{status}", r.record.status.as_str());
    let t = crate::references::plain(t.trim());
    let t = t.as_str();
    if t.chars().count() > 200 { t.chars().take(197).collect::<String>() + "..." } else { t.to_string() }
}

pub fn body(r: &Run) -> String {
    cap(format!("{}\n\n{}", marker(&r.record.job), details(r)))
}

/// The body without its marker: the summary, the plan, the verification and the files (review
/// mode's summary too).
pub fn details(r: &Run) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", r.record.summary.trim_end());
    if let Some(p) = &r.record.plan {
        let _ = writeln!(s, "### Plan\n\n{}", p.render_md());
    }
    let _ = writeln!(s, "### Verification\n\n| Check | Before (baseline) | After |\n|---|---|---|");
    let last = r.record.final_checks();
    for b in &r.record.baseline {
        let after = last
            .iter()
            .find(|c| c.name == b.name)
            .map_or_else(|| "not run".to_string(), |c| crate::output::summary::cell(c));
        let before = crate::output::summary::cell(b);
        let _ = writeln!(s, "| {} | {before} | {after} |", md::code_cell(&b.name));
    }
    if let Some(t) = crate::output::tries::table(&r.record, "###") {
        s.push_str(&t);
    }
    if !r.record.files_changed.is_empty() {
        let _ = writeln!(s, "\n### Files changed\n");
        for f in r.record.files_changed.iter().take(200) {
            let _ = writeln!(s, "- {} ({}, +{} −{})", md::code(&f.path), f.status, f.added, f.removed);
        }
    }
    let _ = writeln!(
        s,
        "\n---\n{} turns · {} tokens · {:.0}s · {} {} · run {}\n",
        r.record.turns,
        r.record.usage.total_tokens,
        r.started.elapsed().as_secs_f64(),
        md::text(&r.record.provider),
        md::code(&r.record.model),
        md::code(&r.record.run_id)
    );
    cap(s)
}

/// `s` cut to GitHub's size limit, saying so.
fn cap(mut s: String) -> String {
    if s.len() > BODY_LIMIT {
        let note = "\n\n[... cut to fit GitHub's size limit; the full report is in the job's artifacts ...]\n";
        let mut cut = BODY_LIMIT - note.len();
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(note);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_shows_no_image_or_html_but_its_marker() {
        let mut r = Run::new(crate::run::state::test_record("job-a"), tokio::time::Instant::now());
        r.record.summary = crate::markdown::inert("Done. ![](http://a.example/x.png) <img src=y>");
        r.record.files_changed.push(crate::git::FileChange {
            path: "a`<img src=z>`.txt".into(),
            status: "added".into(),
            added: 1,
            removed: 0,
            bytes: 2,
            binary: false,
            raw: None,
        });
        let b = body(&r);
        let rest = b.strip_prefix("<!-- hone:job=job-a -->\n").unwrap_or_else(|| panic!("{b}"));
        assert!(crate::markdown::is_inert(rest), "{b}");
        assert!(b.contains("http://a.example/x.png") && b.contains("a`<img src=z>`.txt"), "{b}");
    }

    #[test]
    fn body_has_the_marker_and_stays_under_the_limit() {
        let mut r = Run::new(crate::run::state::test_record("job-a"), tokio::time::Instant::now());
        r.record.summary = "x".repeat(100_000);
        r.record.final_message = "## Fix the parser\nmore".into();
        let b = body(&r);
        assert!(b.starts_with("<!-- hone:job=job-a -->"));
        assert!(b.len() <= BODY_LIMIT && b.ends_with("artifacts ...]\n"));
        assert_eq!(title("hone: {summary_title} ({name})", &r), "hone: Fix the parser (job-a)");
    }
}
