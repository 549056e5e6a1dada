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
    /// A regular file's text; `bytes` its size; `lossy` when it was not UTF-8.
    Text { text: String, bytes: u64, lossy: bool },
}

/// The blob at `path` in `tree`.
pub(super) fn read(repo: &Repository, tree: &Tree<'_>, path: &str) -> Blob {
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
    let bytes = blob.content();
    if bytes.contains(&0) {
        return Blob::Refused("it is binary (it holds a NUL byte)".into());
    }
    let text = String::from_utf8_lossy(bytes);
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    Blob::Text { text: text.replace("\r\n", "\n"), bytes: size as u64, lossy }
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
