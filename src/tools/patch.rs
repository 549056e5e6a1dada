//! `apply_patch` (unified diff, one or many files) and `undo_patch`. Hunks are located by their
//! content, not only their line numbers, so the slightly-off patches models write still apply
//! when the intended place is unambiguous; otherwise the result is `E_CONFLICT` with a hint.

use super::beneath;
use super::{Effect, ToolContext, ToolDef, object};
use crate::error::Code;
use crate::policy::Access;
use crate::protocol::ToolOutput;
use serde::Deserialize;
use serde_json::json;

pub const APPLY_PATCH: ToolDef = ToolDef {
    name: "apply_patch",
    effect: Effect::Write,
    description: "Apply a unified diff (as `git diff` or `diff -u` print it) to one or more files. Use `--- /dev/null` to create a file and `+++ /dev/null` to delete one. Include a few unchanged context lines around each change.",
    parameters: || {
        object(
            json!({"patch": {"type": "string", "description": "The unified diff text, with ---/+++ headers and @@ hunks"}}),
            &["patch"],
        )
    },
};

pub const UNDO_PATCH: ToolDef = ToolDef {
    name: "undo_patch",
    effect: Effect::Write,
    description: "Revert the most recent change made by apply_patch or write_file. Call again to go further back.",
    parameters: || object(json!({}), &[]),
};

type FileChange = (String, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every change the file tools made, newest last, with the content before and after.
#[derive(Default, Debug)]
pub struct ChangeLog {
    changes: Vec<(u32, Vec<FileChange>)>,
    next_id: u32,
}

impl ChangeLog {
    pub fn record(&mut self, files: Vec<FileChange>) -> u32 {
        self.next_id += 1;
        self.changes.push((self.next_id, files));
        self.next_id
    }

    /// The files the newest change touched.
    pub fn last_paths(&self) -> Vec<String> {
        self.changes.last().map(|(_, files)| files.iter().map(|f| f.0.clone()).collect()).unwrap_or_default()
    }

    /// The files the newest change left in place (not deleted or moved away).
    pub fn last_written(&self) -> Vec<String> {
        let files = self.changes.last().map(|(_, f)| f.as_slice()).unwrap_or_default();
        files.iter().filter(|(_, _, after)| after.is_some()).map(|f| f.0.clone()).collect()
    }

    /// Something else (a hook) rewrote `path` right after the newest change: that content is the
    /// change's result, so that undoing it still finds the file as the change left it.
    pub fn amend_last(&mut self, path: &str, content: Option<Vec<u8>>) {
        if let Some((_, files)) = self.changes.last_mut()
            && let Some(f) = files.iter_mut().find(|f| f.0 == path)
        {
            f.2 = content;
        }
    }

    /// Whether the newest change altered any file's content (writing a file as it was does not).
    pub fn last_altered(&self) -> bool {
        self.changes.last().is_some_and(|(_, files)| files.iter().any(|(_, before, after)| before != after))
    }
}

/// One file's part of a patch.
#[derive(Debug, PartialEq)]
pub struct FilePatch {
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

#[derive(Debug, PartialEq, Default)]
pub struct Hunk {
    pub old_start: usize,
    pub old: Vec<String>,
    pub new: Vec<String>,
}

/// Why a patch's text is no unified diff; the model reads it in the tool's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchSyntax {
    #[error("a hunk (@@) comes before any ---/+++ file header")]
    HunkFirst,
    #[error("no `--- a/file` / `+++ b/file` header found")]
    NoHeader,
}

impl PatchSyntax {
    /// The patch is the tool's argument.
    pub const fn code(&self) -> Code {
        Code::InvalidArgs
    }
}

/// Parse unified diff text leniently: hunk counts are ignored, blank lines and lines without a
/// prefix inside hunks are context, `diff --git`/`index` lines and `\ No newline` markers are skipped.
pub fn parse(text: &str) -> Result<Vec<FilePatch>, PatchSyntax> {
    let mut files: Vec<FilePatch> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let (Some(old), Some(new)) =
            (line.strip_prefix("--- "), lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")))
        {
            files.push(FilePatch { old_path: header_path(old), new_path: header_path(new), hunks: vec![] });
            i += 2;
            continue;
        }
        if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(PatchSyntax::HunkFirst);
            };
            let mut h = Hunk { old_start: hunk_start(line), ..Default::default() };
            i += 1;
            while i < lines.len() && !lines[i].starts_with("@@") && !is_file_header(&lines, i) {
                let l = lines[i];
                match l.chars().next() {
                    Some('+') => h.new.push(l[1..].to_string()),
                    Some('-') => h.old.push(l[1..].to_string()),
                    Some(' ') => {
                        h.old.push(l[1..].to_string());
                        h.new.push(l[1..].to_string());
                    }
                    None => {
                        h.old.push(String::new());
                        h.new.push(String::new());
                    }
                    Some('\\') => {}
                    Some(_) if l.starts_with("diff --git") || l.starts_with("index ") => break,
                    // A context line whose leading space was lost: still safe, as it must match the file.
                    Some(_) => {
                        h.old.push(l.to_string());
                        h.new.push(l.to_string());
                    }
                }
                i += 1;
            }
            // Trailing blank lines are usually an artifact of how the patch was quoted.
            while h.old.last().is_some_and(String::is_empty)
                && h.new.last().is_some_and(String::is_empty)
                && h.old.len() > 1
            {
                h.old.pop();
                h.new.pop();
            }
            file.hunks.push(h);
            continue;
        }
        i += 1;
    }
    if files.is_empty() {
        return Err(PatchSyntax::NoHeader);
    }
    Ok(files)
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
        || lines[i].starts_with("diff --git ")
}

fn header_path(h: &str) -> Option<String> {
    let p = h.split('\t').next().unwrap_or("").trim();
    if p == "/dev/null" {
        return None;
    }
    let p = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(p);
    Some(p.to_string())
}

fn hunk_start(header: &str) -> usize {
    header
        .split_whitespace()
        .nth(1)
        .and_then(|r| r.trim_start_matches('-').split(',').next()?.parse().ok())
        .unwrap_or(1)
}

/// A hunk whose old lines are nowhere in the file (`hunk` counts from 1; `first` is its first
/// non-blank old line). The text goes to the model as the tool's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "hunk {hunk} does not match the file (looked for the lines starting with {first:?}); re-read the file and make the patch from its current content"
)]
pub struct Mismatch {
    pub hunk: usize,
    pub first: String,
}

impl Mismatch {
    pub fn code(&self) -> Code {
        Code::Conflict
    }
}

/// Apply hunks to `text`. Each hunk is placed where its old lines match, nearest to its stated
/// line, searching exactly first and then ignoring trailing whitespace.
pub fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, Mismatch> {
    let trailing_nl = text.is_empty() || text.ends_with('\n');
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut offset: isize = 0;
    let mut floor = 0usize;
    for (n, h) in hunks.iter().enumerate() {
        let want = (h.old_start as isize - 1 + offset).max(0) as usize;
        let at = if h.old.is_empty() {
            want.min(lines.len())
        } else {
            find(&lines, &h.old, floor, want, |a, b| a == b)
                .or_else(|| find(&lines, &h.old, floor, want, |a, b| a.trim_end() == b.trim_end()))
                .ok_or_else(|| Mismatch {
                    hunk: n + 1,
                    first: h.old.iter().find(|l| !l.trim().is_empty()).cloned().unwrap_or_default(),
                })?
        };
        lines.splice(at..at + h.old.len(), h.new.iter().cloned());
        offset += h.new.len() as isize - h.old.len() as isize;
        floor = at + h.new.len();
    }
    let mut out = lines.join("\n");
    if trailing_nl && !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

fn find(
    lines: &[String],
    needle: &[String],
    floor: usize,
    want: usize,
    eq: impl Fn(&str, &str) -> bool,
) -> Option<usize> {
    if needle.len() > lines.len() {
        return None;
    }
    (floor..=lines.len() - needle.len())
        .filter(|&s| needle.iter().enumerate().all(|(k, l)| eq(&lines[s + k], l)))
        .min_by_key(|&s| s.abs_diff(want))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    patch: String,
}

pub fn apply(ctx: &ToolContext, a: PatchArgs) -> ToolOutput {
    let files = match parse(&a.patch) {
        Ok(f) => f,
        Err(e) => {
            return ToolOutput::err(e.code(), format!("the patch could not be parsed: {e}"));
        }
    };
    // Compute every result first, so a patch applies to all its files or to none.
    // (path, content before, content after; None = absent)
    type Planned = (super::paths::Resolved, Option<Vec<u8>>, Option<Vec<u8>>);
    let mut planned: Vec<Planned> = Vec::new();
    for f in &files {
        let Some(path) = f.new_path.as_ref().or(f.old_path.as_ref()) else {
            return ToolOutput::err(Code::InvalidArgs, "a file section has /dev/null on both sides");
        };
        let r = match ctx.resolve(path, Access::Write) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let before = match beneath::read_before(ctx.root.path(), &r.rel) {
            Ok(b) => b,
            Err(e) => return super::io_err(&format!("cannot patch `{}`", r.rel), &e),
        };
        let after = if f.new_path.is_none() {
            None
        } else {
            let base = if f.old_path.is_none() {
                String::new()
            } else {
                match &before {
                    Some(b) => String::from_utf8_lossy(b).into_owned(),
                    None => {
                        return ToolOutput::err(
                            Code::NotFound,
                            format!("`{}` does not exist; to create it use `--- /dev/null`", r.rel),
                        );
                    }
                }
            };
            match apply_hunks(&base, &f.hunks) {
                Ok(t) => Some(t.into_bytes()),
                Err(e) => return ToolOutput::err(e.code(), format!("`{}`: {e}", r.rel)),
            }
        };
        planned.push((r, before, after));
    }
    let mut summary = Vec::new();
    for (r, _, after) in &planned {
        let res = match after {
            Some(bytes) => beneath::write_atomic(ctx.root.path(), &r.rel, bytes),
            None => beneath::remove(ctx.root.path(), &r.rel),
        };
        if let Err(e) = res {
            return super::io_err(&format!("cannot write `{}`", r.rel), &e);
        }
        summary.push(format!("{} {}", if after.is_some() { "patched" } else { "deleted" }, r.rel));
    }
    let id = ctx
        .changes
        .lock()
        .map(|mut c| c.record(planned.into_iter().map(|(r, b, a)| (r.rel, b, a)).collect()))
        .unwrap_or(0);
    ToolOutput::ok(format!("{}; change #{id} (undo_patch reverts it)", summary.join(", ")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoArgs {}

pub fn undo(ctx: &ToolContext, _a: UndoArgs) -> ToolOutput {
    let Ok(mut log) = ctx.changes.lock() else {
        return ToolOutput::err(Code::Io, "the change log is unavailable");
    };
    let Some((id, files)) = log.changes.pop() else {
        return ToolOutput::err(Code::Conflict, "there is no change to undo");
    };
    for (rel, _, _) in &files {
        if let Err(e) = ctx.resolve(rel, Access::Write) {
            log.changes.push((id, files));
            return e;
        }
    }
    let changed =
        files.iter().find(|(rel, _, after)| beneath::read(ctx.root.path(), rel).ok() != *after).map(|f| f.0.clone());
    if let Some(rel) = changed {
        log.changes.push((id, files));
        return ToolOutput::err(
            Code::Conflict,
            format!(
                "`{rel}` changed after change #{id} (perhaps by a command); fix it with apply_patch or write_file instead"
            ),
        );
    }
    for (rel, before, _) in &files {
        let res = match before {
            Some(b) => beneath::write_atomic(ctx.root.path(), rel, b),
            None => beneath::remove(ctx.root.path(), rel),
        };
        if let Err(e) = res {
            return super::io_err(&format!("cannot restore `{rel}`"), &e);
        }
    }
    ToolOutput::ok(format!(
        "reverted change #{id} ({})",
        files.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests;
