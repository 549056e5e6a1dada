//! Mentions and issue references in text hone posts (`@user`, `@org/team`, `#12`, `GH-12`,
//! `owner/repo#12`, GitLab's `!12`, a URL of an issue, pull or merge request), found so that
//! the forge does not act on them: a mention notifies its people, a reference links the issue
//! and, after a closing keyword ("fixes #12"), closes it on merge, all under hone's name. In
//! markdown each one becomes a code span (`markdown.rs`); in plain text (a commit message, a
//! title) a zero-width space follows its sign. What hone posts then names, and closes, nothing.

use std::ops::Range;

/// Where a reference starts and ends in the text, and the byte before which plain text breaks
/// it (just after its sign, or before a URL's number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub range: Range<usize>,
    pub break_at: usize,
}

/// The zero-width space that breaks a reference in plain text.
pub const BREAK: char = '\u{200B}';

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn name_char(b: u8) -> bool {
    word(b) || b == b'-' || b == b'.'
}

/// The end of the run of bytes from `i` for which `ok` holds.
fn run(s: &[u8], mut i: usize, ok: impl Fn(u8) -> bool) -> usize {
    while i < s.len() && ok(s[i]) {
        i += 1;
    }
    i
}

/// `@name` or `@org/team` at `at` (the `@`), when nothing word-like is before it.
fn mention(s: &[u8], at: usize) -> Option<Found> {
    if at > 0 && (name_char(s[at - 1]) || matches!(s[at - 1], b'@' | b'/')) {
        return None;
    }
    let start = at + 1;
    let mut end = run(s, start, name_char);
    if end == start || !s[start].is_ascii_alphanumeric() {
        return None;
    }
    if s.get(end) == Some(&b'/') {
        let team = run(s, end + 1, name_char);
        if team > end + 1 {
            end = team;
        }
    }
    while end > start + 1 && s[end - 1] == b'.' {
        end -= 1;
    }
    Some(Found { range: at..end, break_at: start })
}

/// `#12`, `!12` or `owner/repo#12` with the sign at `at`.
fn number_ref(s: &[u8], at: usize) -> Option<Found> {
    let end = run(s, at + 1, |b| b.is_ascii_digit());
    if end == at + 1 || s.get(end).is_some_and(|b| word(*b)) {
        return None;
    }
    let before = at.checked_sub(1).map(|i| s[i]);
    match before {
        None => Some(Found { range: at..end, break_at: at + 1 }),
        Some(b) if !name_char(b) && b != b'&' && b != b'/' => Some(Found { range: at..end, break_at: at + 1 }),
        // `owner/repo#12` (and `group/sub/project!12`): a path of names right before the sign.
        Some(_) => {
            let mut start = at;
            while start > 0 && (name_char(s[start - 1]) || s[start - 1] == b'/') {
                start -= 1;
            }
            let path = &s[start..at];
            let ok = path.contains(&b'/') && !path.starts_with(b"/") && !path.ends_with(b"/");
            let clean = start == 0 || !matches!(s[start - 1], b':' | b'@');
            (ok && clean).then(|| Found { range: start..end, break_at: at + 1 })
        }
    }
}

/// `GH-12` at `at`, as a word of its own.
fn gh_ref(s: &[u8], at: usize) -> Option<Found> {
    if at > 0 && name_char(s[at - 1]) || !s[at..].get(..3)?.eq_ignore_ascii_case(b"gh-") {
        return None;
    }
    let end = run(s, at + 3, |b| b.is_ascii_digit());
    (end > at + 3 && !s.get(end).is_some_and(|b| word(*b))).then(|| Found { range: at..end, break_at: at + 2 })
}

/// A URL of an issue, pull or merge request (`…/issues/12`, `…/pull/12`, `…/merge_requests/12`)
/// starting at `at`: the whole URL, broken before its number.
fn issue_url(s: &[u8], at: usize) -> Option<Found> {
    let rest = &s[at..];
    if !(rest.starts_with(b"https://") || rest.starts_with(b"http://")) || at > 0 && name_char(s[at - 1]) {
        return None;
    }
    let end = at + run(rest, 0, |b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"' | b'`' | b')'));
    let url = std::str::from_utf8(&s[at..end]).ok()?;
    let path = url.split(['?', '#']).next().unwrap_or(url).trim_end_matches(['.', ',', ';', ':', '/']);
    let mut parts = path.rsplit('/');
    let (number, kind) = (parts.next()?, parts.next()?);
    let is_ref = !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && matches!(kind, "issues" | "pull" | "pulls" | "merge_requests" | "discussions");
    is_ref.then(|| Found { range: at..end, break_at: at + path.len() - number.len() })
}

/// Every reference in `text`, in order, none overlapping.
pub fn find(text: &str) -> Vec<Found> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let found = match s[i] {
            b'@' => mention(s, i),
            b'#' | b'!' => number_ref(s, i),
            b'g' | b'G' => gh_ref(s, i),
            b'h' => issue_url(s, i),
            _ => None,
        };
        match found {
            // A path before the sign starts earlier than `i`: drop what it overlaps.
            Some(f) => {
                while out.last().is_some_and(|l: &Found| l.range.end > f.range.start) {
                    out.pop();
                }
                i = f.range.end;
                out.push(f);
            }
            None => i += 1,
        }
    }
    out
}

/// Whether `text` holds a reference.
pub fn any(text: &str) -> bool {
    !find(text).is_empty()
}

/// Whether a link's destination is an issue, pull or merge request.
pub fn is_issue_url(url: &str) -> bool {
    issue_url(url.as_bytes(), 0).is_some_and(|f| f.range.end == url.len())
}

/// `text` split into its plain parts (`false`) and its references (`true`), in order. The text
/// after a reference is read as if it began there, as the forge reads the text after a code
/// span: `@a@b` is two mentions once `@a` is one.
pub fn split(text: &str) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(f) = find(rest).into_iter().next() {
        if f.range.start > 0 {
            out.push((false, &rest[..f.range.start]));
        }
        out.push((true, &rest[f.range.clone()]));
        rest = &rest[f.range.end..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push((false, rest));
    }
    out
}

/// Plain text (a commit message, a title) with each reference broken by a zero-width space.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for f in find(text) {
        out.push_str(&text[at..f.break_at]);
        out.push(BREAK);
        at = f.break_at;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
