//! A report dir's `transcript.jsonl`: written as JSON lines, redacted; read back as data: a regular file only (never through a
//! symlink, never a FIFO or a device, so the read cannot block), at most `MAX_BYTES`, every line an
//! entry, the header first and of this hone's version.

use crate::error::{Code, HoneError};
use crate::protocol::transcript::{Entry, VERSION};
use std::path::Path;

/// The largest transcript read: far above a long run's (each request holds only what is new,
/// and tool results are capped), far below what would exhaust memory.
pub const MAX_BYTES: u64 = 256 << 20;

/// A transcript's entries, the header first.
pub fn read(dir: &Path) -> Result<Vec<Entry>, HoneError> {
    read_at_most(dir, MAX_BYTES)
}

/// The transcript of try `k` of a run with tries (`try-<k>.transcript.jsonl`).
pub fn read_try(dir: &Path, k: u32) -> Result<Vec<Entry>, HoneError> {
    read_named(dir, &format!("try-{k}.transcript.jsonl"), MAX_BYTES)
}

fn read_at_most(dir: &Path, max: u64) -> Result<Vec<Entry>, HoneError> {
    read_named(dir, "transcript.jsonl", max)
}

fn read_named(dir: &Path, name: &str, max: u64) -> Result<Vec<Entry>, HoneError> {
    let path = dir.join(name);
    let shown = path.display();
    let io = |e: std::io::Error| {
        let (why, help) = match e.raw_os_error() {
            Some(libc::ELOOP) => (
                "it is a symlink".to_string(),
                "hone reads a transcript only as a regular file inside the report dir: copy the file there",
            ),
            Some(libc::ENOENT) => (
                e.to_string(),
                "give the report dir of a run (it holds transcript.jsonl, and try-K.transcript.jsonl for each try of a job with `attempts`)",
            ),
            _ => (e.to_string(), "give the report dir of a run; its transcript.jsonl must be a regular file"),
        };
        HoneError::new(Code::Io, format!("cannot read {shown}: {why}")).hint(help)
    };
    let d = std::fs::File::open(dir).map_err(io)?;
    let bytes = crate::safe_fs::read_regular_at(&d, name, max + 1).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(HoneError::new(
            Code::Spec,
            format!("{shown}: larger than {max} bytes: not a transcript hone wrote"),
        )
        .hint("replay reads transcripts up to that size"));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        HoneError::new(Code::Spec, format!("{shown}: not UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
    })?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let e: Entry = serde_json::from_str(line).map_err(|e| {
            HoneError::new(Code::Spec, format!("{shown}:{}: not a transcript entry: {}", i + 1, plain(e)))
        })?;
        entries.push(e);
    }
    match entries.first() {
        Some(Entry::Header { version, .. }) if *version == VERSION => Ok(entries),
        Some(Entry::Header { version, .. }) => Err(HoneError::new(
            Code::Spec,
            format!("{shown}: transcript version {version}; this hone reads version {VERSION}"),
        )
        .hint("replay it with the hone that wrote it")),
        _ => Err(HoneError::new(Code::Spec, format!("{shown}:1: the first line is not the transcript's header"))),
    }
}

/// The transcript as JSON lines, redacted.
pub fn jsonl(entries: &[Entry], redactor: &crate::redact::Redactor) -> String {
    let mut out = String::new();
    for e in entries {
        if let Ok(line) = serde_json::to_string(e) {
            out.push_str(&redactor.apply(&line));
            out.push('\n');
        }
    }
    out
}

/// `s` with control characters escaped: the parser's message quotes the file's own text.
fn plain(s: impl std::fmt::Display) -> String {
    s.to_string().chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"header","version":1,"hone_version":"x","job":"j","task":"t","run_id":"r","spec":"/r/s","repo":"/r","base_sha":"b","provider":"p","model":"m"}"#;

    #[test]
    fn a_transcript_past_the_limit_is_refused_before_it_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{HEADER}\n");
        std::fs::write(dir.path().join("transcript.jsonl"), &text).unwrap();
        assert_eq!(read_at_most(dir.path(), text.len() as u64).unwrap().len(), 1);
        let e = read_at_most(dir.path(), text.len() as u64 - 1).unwrap_err();
        assert!(e.message.contains("larger than"), "{}", e.message);
    }

    #[test]
    fn another_version_no_header_and_bad_bytes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("transcript.jsonl");
        std::fs::write(&t, HEADER.replace("\"version\":1", "\"version\":2")).unwrap();
        assert!(read(dir.path()).unwrap_err().message.contains("transcript version 2; this hone reads version 1"));
        std::fs::write(&t, r#"{"type":"tool_result","turn":1,"call_id":"c","tool":"t","ok":true,"content":""}"#)
            .unwrap();
        assert!(read(dir.path()).unwrap_err().message.contains("the first line is not the transcript's header"));
        std::fs::write(&t, "{\"type\":\"x\\r::error::forged\"}\n").unwrap();
        let e = read(dir.path()).unwrap_err().message;
        assert!(e.contains("not a transcript entry") && !e.contains('\r'), "{e:?}");
        std::fs::write(&t, b"\xff\xfe").unwrap();
        assert!(read(dir.path()).unwrap_err().message.contains("not UTF-8"));
    }
}
