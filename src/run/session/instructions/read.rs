//! One instruction file at the base commit: a regular blob found by its path in the commit's
//! tree (never a link, a submodule or a directory, and never the work tree), as UTF-8 text with
//! LF line ends.

use git2::{Repository, Tree};
use std::path::Path;

/// Blobs larger than this are not loaded (the size comes from the object's header).
const MAX_BLOB: usize = 16 << 20;

/// What the base commit holds at a path.
#[derive(Debug, PartialEq)]
pub(super) enum Blob {
    /// Nothing (or nothing reached without going through a link).
    Absent,
    /// Something that is not read, and why.
    Refused(String),
    /// A regular file's text (its start, when `whole` is false); `bytes` its size; `lossy` when
    /// it was not UTF-8.
    Text { text: String, bytes: u64, lossy: bool, whole: bool },
}

/// The blob at `path` in `tree`, decoded up to what `limit` bytes of text can need (twice that
/// of raw bytes, for CRLF line ends): a large file is never copied whole.
pub(super) fn read(repo: &Repository, tree: &Tree<'_>, path: &str, limit: usize) -> Blob {
    let Ok(entry) = tree.get_path(Path::new(path)) else { return Blob::Absent };
    match entry.filemode() {
        0o100644 | 0o100755 => {}
        0o120000 => return Blob::Refused("it is a symbolic link, which hone does not follow".into()),
        0o160000 => return Blob::Refused("it is a submodule".into()),
        _ => return Blob::Refused("it is not a file".into()),
    }
    let size = match repo.odb().and_then(|o| o.read_header(entry.id())) {
        Ok((size, _)) => size,
        Err(e) => return Blob::Refused(format!("it cannot be read: {}", e.message())),
    };
    if size > MAX_BLOB {
        return Blob::Refused(format!("it is {size} bytes, more than the {MAX_BLOB} hone reads"));
    }
    let blob = match repo.find_blob(entry.id()) {
        Ok(b) => b,
        Err(e) => return Blob::Refused(format!("it cannot be read: {}", e.message())),
    };
    let all = blob.content();
    let bytes = &all[..all.len().min(limit.saturating_mul(2).saturating_add(4))];
    if bytes.contains(&0) {
        return Blob::Refused("it is binary (it holds a NUL byte)".into());
    }
    let whole = bytes.len() == all.len();
    // A prefix may end inside a character: only what is valid before that counts as lossy.
    let end = if whole { bytes.len() } else { utf8_end(bytes) };
    let text = String::from_utf8_lossy(&bytes[..end]);
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    Blob::Text { text: text.replace("\r\n", "\n"), bytes: size as u64, lossy, whole }
}

/// Where `bytes` ends without a character cut short (at most three bytes before its end).
fn utf8_end(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=3.min(n) {
        let b = bytes[n - back];
        if b & 0xC0 != 0x80 {
            // The start of the last character: complete if its length fits in what is left.
            let len = if b < 0x80 {
                1
            } else if b >= 0xF0 {
                4
            } else if b >= 0xE0 {
                3
            } else {
                2
            };
            return if len <= back { n } else { n - back };
        }
    }
    n
}

/// `text` cut to at most `limit` bytes, at a character boundary; whether it was cut.
pub(super) fn cut(text: &str, limit: usize) -> (&str, bool) {
    if text.len() <= limit {
        return (text, false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}
