//! GitLab's suggestion syntax: a ```` ```suggestion:-A+B ```` block in a note on line L replaces
//! lines L-A..=L+B with the block's lines; A and B are at most 100 each.

use crate::forge::review::Suggestion;

/// The most lines a suggestion reaches above, and below, the line its note is on.
pub const REACH: u32 = 100;

/// Where a note replacing lines `start..=end` goes, and its reach: `(line, above, below)`. The
/// last line when the span allows (as GitLab's own multi-line comments), else a line inside it;
/// `None` past 201 lines (GitLab's limit).
pub fn anchor(start: u32, end: u32) -> Option<(u32, u32, u32)> {
    let span = end.checked_sub(start)?;
    if span <= REACH {
        return Some((end, span, 0));
    }
    (span <= 2 * REACH).then(|| (start + REACH, REACH, span - REACH))
}

/// A code fence longer than any run of backticks in `lines` (GitLab's way to nest code blocks
/// in a suggestion), at least three.
fn fence(lines: &[String]) -> String {
    let longest = lines.iter().flat_map(|l| l.split(|c| c != '`').map(str::len)).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// The body of the note that suggests `s`, reaching `above` and `below` its line.
pub fn suggestion_note(marker: &str, s: &Suggestion, above: u32, below: u32) -> String {
    let fence = fence(&s.lines);
    fenced(format!("{marker}\n{fence}suggestion:-{above}+{below}\n"), &s.lines, &fence)
}

/// `head`, then `lines` each on its own line, then the closing `fence`.
fn fenced(mut out: String, lines: &[String], fence: &str) -> String {
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(fence);
    out.push('\n');
    out
}

/// The body of a note for a change too long for one suggestion: the new lines, to copy.
pub fn long_change_note(marker: &str, s: &Suggestion) -> String {
    let fence = fence(&s.lines);
    let head = format!(
        "{marker}\nhone would replace lines {}–{} of {} with the lines below (over {} lines: too long for one GitLab suggestion).\n\n{fence}\n",
        s.start,
        s.end,
        crate::markdown::code(&s.path),
        2 * REACH + 1
    );
    fenced(head, &s.lines, &fence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sug(start: u32, end: u32, lines: &[&str]) -> Suggestion {
        Suggestion { path: "src/a.rs".into(), start, end, lines: lines.iter().map(|l| l.to_string()).collect() }
    }

    #[test]
    fn the_note_sits_on_the_last_line_and_reaches_up_to_the_first() {
        assert_eq!(anchor(7, 7), Some((7, 0, 0)));
        assert_eq!(anchor(3, 5), Some((5, 2, 0)));
        assert_eq!(anchor(1, 101), Some((101, 100, 0)));
        assert_eq!(anchor(1, 102), Some((101, 100, 1)), "past 100 above, the rest below");
        assert_eq!(anchor(1, 201), Some((101, 100, 100)));
        assert_eq!(anchor(1, 202), None, "GitLab's limit");
        assert_eq!(anchor(5, 4), None);
    }

    #[test]
    fn suggestions_are_gitlab_blocks_with_a_fence_longer_than_their_backticks() {
        let body = suggestion_note("<!-- m -->", &sug(3, 5, &["a", "b"]), 2, 0);
        assert_eq!(body, "<!-- m -->\n```suggestion:-2+0\na\nb\n```\n");
        let deletion = suggestion_note("<!-- m -->", &sug(4, 4, &[]), 0, 0);
        assert_eq!(deletion, "<!-- m -->\n```suggestion:-0+0\n```\n", "an empty block deletes the lines");
        let nested = suggestion_note("m", &sug(1, 1, &["```rust", "x ```` y"]), 0, 0);
        assert!(nested.starts_with("m\n`````suggestion:-0+0\n") && nested.ends_with("\n`````\n"), "{nested}");
        let long = long_change_note("m", &sug(1, 300, &["z"]));
        assert!(long.contains("lines 1–300 of `src/a.rs`") && long.contains("```\nz\n```"), "{long}");
    }

    /// A file's name is its author's (a merge request may add any): in the note it stays one code
    /// span, so a line end in it starts no paragraph that mentions anyone.
    #[test]
    fn a_long_changes_file_name_stays_code() {
        let s = Suggestion {
            path: "a\n\n@all please `merge`\n\n![x](http://a.example/i.png).rs".into(),
            ..sug(1, 300, &["z"])
        };
        let note = long_change_note("<!-- m -->", &s);
        let rest = note.strip_prefix("<!-- m -->\n").unwrap();
        assert!(crate::markdown::is_inert(rest), "{note}");
    }
}
