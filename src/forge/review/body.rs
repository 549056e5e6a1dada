//! The review's text: its body (hone's marker, a digest of what it suggests, the summary, and
//! the patch for what no suggestion carries, cut to the forge's limit) and each comment's
//! `suggestion` block. Every fence is longer than any run of backticks inside it, so nothing the
//! repository or the model wrote can close it.

use super::{Input, ReviewPlan, Suggestion, marker};
use sha2::{Digest, Sha256};

/// The most characters GitHub takes in a review's (or a comment's) body.
pub const GITHUB_MAX_BODY: usize = 65_536;
/// The most files the body lists by name; the patch holds them all.
const MAX_LISTED: usize = 50;

/// A digest of what a review suggests: the PR head it is for, its suggestions and its patch.
/// Two runs that would post the same review have the same digest.
pub fn digest(plan: &ReviewPlan, head_sha: &str) -> String {
    let mut h = Sha256::new();
    h.update(head_sha.as_bytes());
    for s in &plan.suggestions {
        h.update(format!("\0{}\0{}\0{}\0", s.path, s.start, s.end).as_bytes());
        s.lines.iter().for_each(|l| h.update(format!("{l}\n").as_bytes()));
    }
    h.update(b"\0patch\0");
    h.update(plan.patch.as_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn digest_line(digest: &str) -> String {
    format!("<!-- hone:digest={digest} -->")
}

/// The digest a body hone wrote carries on its second line.
pub fn digest_of(body: &str) -> Option<&str> {
    let line = body.lines().nth(1)?;
    line.strip_prefix("<!-- hone:digest=")?.strip_suffix(" -->")
}

/// The review's body, at most `max_chars` characters.
pub fn render(plan: &ReviewPlan, input: &Input, max_chars: usize) -> String {
    let head = format!("{}\n{}\n", marker(input.job), digest_line(&digest(plan, input.head_sha)));
    let mut summary = input.body.trim_end().to_string();
    if !plan.suggestions.is_empty() {
        let n = plan.suggestions.len();
        summary.push_str(&format!("\n\n{n} suggested change{} below.", if n == 1 { "" } else { "s" }));
    }
    if plan.patch.is_empty() {
        return cut_chars(&format!("{head}{summary}\n"), max_chars);
    }
    let (intro, t) = (patch_intro(plan), ticks(&plan.patch));
    let frame = |summary: &str, shown: &str, note: &str| {
        let nl = if shown.is_empty() || shown.ends_with('\n') { "" } else { "\n" };
        format!("{head}{summary}\n\n{intro}{t}diff\n{shown}{nl}{t}\n{note}")
    };
    let whole = frame(&summary, &plan.patch, "");
    if whole.chars().count() <= max_chars {
        return whole;
    }
    let total = plan.patch.lines().count();
    // The summary keeps at most half the room when the patch needs it.
    if summary.chars().count() > max_chars / 2 {
        summary = format!("{}…", cut_chars(&summary, max_chars / 2));
    }
    let note_for = |n: usize| {
        format!(
            "\n_The patch is cut here ({n} of {total} lines shown, so it does not apply as it is): the whole change is the run's `change.patch` artifact._\n"
        )
    };
    let room = max_chars.saturating_sub(frame(&summary, "", &note_for(total)).chars().count() + 1);
    let (mut shown, mut used, mut n) = (String::new(), 0, 0);
    for line in plan.patch.split_inclusive('\n') {
        let len = line.chars().count();
        if used + len > room {
            break;
        }
        (used, n) = (used + len, n + 1);
        shown.push_str(line);
    }
    cut_chars(&frame(&summary, &shown, &note_for(n)), max_chars)
}

/// What the patch section says before the patch: how to apply it and which files it holds.
fn patch_intro(plan: &ReviewPlan) -> String {
    let mut s = String::from("### Changes a suggestion cannot carry\n\n");
    s.push_str(if plan.suggestions.is_empty() {
        "Apply them with `git apply` on the pull request's branch:\n\n"
    } else {
        "Commit the suggestions first, then apply this patch with `git apply`:\n\n"
    });
    for (path, why) in plan.in_patch.iter().take(MAX_LISTED) {
        s.push_str(&format!("- {}: {}\n", code_span(path), inert(why)));
    }
    if plan.in_patch.len() > MAX_LISTED {
        s.push_str(&format!("- and {} more files\n", plan.in_patch.len() - MAX_LISTED));
    }
    s.push('\n');
    s
}

/// A review comment's body: the job's `marker` (so that no reader takes the model's lines for
/// the words of the login it was posted under: `forge::feedback`), then the suggested lines in a
/// `suggestion` block.
pub fn comment(marker: &str, s: &Suggestion) -> String {
    let text: String = s.lines.iter().map(|l| format!("{l}\n")).collect();
    let t = ticks(&text);
    format!("{marker}\n{t}suggestion\n{text}{t}")
}

/// A fence of backticks longer than any run of them in `text`, and at least three.
fn ticks(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// `s` as inline code that nothing in it can end, control characters replaced.
pub fn code_span(s: &str) -> String {
    let s = inert(s);
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    if s.starts_with('`') || s.ends_with('`') { format!("{ticks} {s} {ticks}") } else { format!("{ticks}{s}{ticks}") }
}

/// `s` on one line: control characters (line breaks among them) replaced.
fn inert(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect()
}

/// The first `max` characters of `s`.
fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
