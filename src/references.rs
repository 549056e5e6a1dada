//! Mentions and issue references in text hone posts (`@user`, `@org/team`, `#12`, `GH-12`,
//! `owner/repo#12`, GitLab's `!12` and `project#12`, a URL of an issue, pull or merge request),
//! wherever no word character is right before the sign (`-@user` and `(#12` are references too:
//! both forges look behind for `\w`, GitLab not at all before `#`), found so that
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

/// Whether the byte before `at` is a word character (`\w`): the one thing both forges' patterns
/// look behind for. Any other byte (punctuation, a space, a non-ASCII letter) leaves the sign
/// free, so `-@user`, `.@user` and `&#12` are references there.
fn after_word(s: &[u8], at: usize) -> bool {
    at > 0 && word(s[at - 1])
}

/// The end of the run of bytes from `i` for which `ok` holds.
fn run(s: &[u8], mut i: usize, ok: impl Fn(u8) -> bool) -> usize {
    while i < s.len() && ok(s[i]) {
        i += 1;
    }
    i
}

/// `@name` or `@org/team` at `at` (the `@`), when no word character is before it (GitLab's
/// names may start with `_`).
fn mention(s: &[u8], at: usize) -> Option<Found> {
    if after_word(s, at) {
        return None;
    }
    let start = at + 1;
    let mut end = run(s, start, name_char);
    if end == start || !word(s[start]) {
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

/// `#12`, `!12`, or a project's (`owner/repo#12`, `group/sub/project!12`, and GitLab's
/// `project#12` for a project beside this one) with the sign at `at`.
fn number_ref(s: &[u8], at: usize) -> Option<Found> {
    let end = run(s, at + 1, |b| b.is_ascii_digit());
    if end == at + 1 || s.get(end).is_some_and(|b| word(*b)) {
        return None;
    }
    let mut start = at;
    if after_word(s, at) {
        // A path of names right before the sign, from its first name.
        while start > 0 && (name_char(s[start - 1]) || s[start - 1] == b'/') {
            start -= 1;
        }
        while s[start] == b'/' {
            start += 1;
        }
    }
    Some(Found { range: start..end, break_at: at + 1 })
}

/// `GH-12` at `at`, as a word of its own.
fn gh_ref(s: &[u8], at: usize) -> Option<Found> {
    if after_word(s, at) || !s[at..].get(..3)?.eq_ignore_ascii_case(b"gh-") {
        return None;
    }
    let end = run(s, at + 3, |b| b.is_ascii_digit());
    (end > at + 3 && !s.get(end).is_some_and(|b| word(*b))).then(|| Found { range: at..end, break_at: at + 2 })
}

/// The kinds of page a URL names an issue, pull or merge request (or an epic) by.
const KINDS: &[&str] = &["issues", "pull", "pulls", "merge_requests", "discussions", "work_items", "epics"];

/// Where the number of the issue, pull or merge request `url` names is (`…/issues/12`,
/// `…/pull/12/files`, `…/-/merge_requests/12`), in its path: a relative URL too.
fn issue_number(url: &str) -> Option<usize> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let mut at = 0;
    let mut kind = false;
    for seg in path.split('/') {
        let digits = seg.bytes().take_while(u8::is_ascii_digit).count();
        let number = digits > 0 && seg.as_bytes().get(digits).is_none_or(|b| !word(*b));
        if kind && number {
            return Some(at);
        }
        kind = KINDS.contains(&seg);
        at += seg.len() + 1;
    }
    None
}

/// A URL starting at `at` (`http://`, `https://`, in any case, or `www.`), not right after a
/// word character: where its token ends (at a space, `<`, a quote or a backtick).
fn url_at(s: &[u8], at: usize) -> Option<usize> {
    let rest = &s[at..];
    let scheme = [&b"https://"[..], b"http://", b"www."]
        .iter()
        .any(|p| rest.get(..p.len()).is_some_and(|r| r.eq_ignore_ascii_case(p)));
    if !scheme || after_word(s, at) {
        return None;
    }
    Some(at + run(rest, 0, |b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"' | b'`' | b'\'')))
}

/// A URL of an issue, pull or merge request starting at `at`: the whole URL (but a `)` or
/// trailing punctuation after it), broken before its number.
fn issue_url(s: &[u8], at: usize) -> Option<Found> {
    let token = url_at(s, at)?;
    let url = std::str::from_utf8(&s[at..token]).ok()?;
    let url = &url[..url.find(')').unwrap_or(url.len())];
    let number = issue_number(url)?;
    Some(Found { range: at..at + url.len(), break_at: at + number })
}

/// Where a URL that the forge makes a link (so nothing inside it is a reference) ends, when one
/// starts at `at`: lowercase `http://` or `https://` (or `www.`) with a host name, after the
/// start, a space or `*_~(` (as GFM's autolinks), up to the end of its token less trailing
/// punctuation and an unmatched `)`.
fn linked_url(s: &[u8], at: usize) -> Option<usize> {
    if at > 0 && !(s[at - 1].is_ascii_whitespace() || matches!(s[at - 1], b'*' | b'_' | b'~' | b'(')) {
        return None;
    }
    let token = url_at(s, at)?;
    let after = [&b"https://"[..], b"http://", b"www."].iter().find(|p| s[at..].starts_with(p))?.len();
    let host = run(s, at + after, |b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    let name = std::str::from_utf8(&s[at + after..host]).ok()?;
    let last_two = name.rsplit('.').take(2).any(|seg| seg.contains('_'));
    if name.is_empty() || last_two {
        return None;
    }
    let mut end = token;
    loop {
        let opened = s[at..end].iter().filter(|b| **b == b'(').count();
        let closed = s[at..end].iter().filter(|b| **b == b')').count();
        match s[end - 1] {
            b'?' | b'!' | b'.' | b',' | b':' | b'*' | b'_' | b'~' | b';' => end -= 1,
            b')' if closed > opened => end -= 1,
            _ => break,
        }
    }
    Some(end)
}

/// Every reference in `text`, in order, none overlapping. A URL the forge links is passed over
/// whole: a reference inside it is not one.
pub fn find(text: &str) -> Vec<Found> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let found = match s[i] {
            b'@' => mention(s, i),
            b'#' | b'!' => number_ref(s, i),
            b'g' | b'G' => gh_ref(s, i),
            _ => None,
        };
        let found = found.or_else(|| matches!(s[i], b'h' | b'H' | b'w' | b'W').then(|| issue_url(s, i)).flatten());
        match found {
            // A path before the sign starts earlier than `i`: never inside the reference before.
            Some(mut f) => {
                let after = out.last().map_or(0, |l: &Found| l.range.end);
                f.range.start = f.range.start.max(after);
                i = f.range.end;
                out.push(f);
            }
            None => i = linked_url(s, i).unwrap_or(i + 1),
        }
    }
    out
}

/// Whether `text` holds a reference.
pub fn any(text: &str) -> bool {
    !find(text).is_empty()
}

/// Whether a link's destination is an issue, pull or merge request (a relative one too).
pub fn is_issue_url(url: &str) -> bool {
    issue_number(url).is_some()
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

/// Plain text (a commit message, a title) with each reference broken by a zero-width space. A
/// break can free what the reference held (`@GH-12` broken after its `@` leaves `GH-12`), so
/// the text is broken again until it holds none: each pass breaks a sign for good.
pub fn plain(text: &str) -> String {
    let mut out = text.to_string();
    // Bounded as well: a pass breaks at least one of the text's signs, which has fewer.
    for _ in 0..=text.len() {
        let found = find(&out);
        if found.is_empty() {
            break;
        }
        let mut next = String::with_capacity(out.len() + 3 * found.len());
        let mut at = 0;
        for f in found {
            next.push_str(&out[at..f.break_at]);
            next.push(BREAK);
            at = f.break_at;
        }
        next.push_str(&out[at..]);
        out = next;
    }
    out
}

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
