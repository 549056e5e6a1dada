//! File tools: `list_dir`, `read_file` (line ranges, size cap) and `write_file` (atomic).

use super::{Effect, ToolContext, ToolDef, io_err, object};
use crate::error::Code;
use crate::policy::Access;
use crate::protocol::ToolOutput;
use serde::Deserialize;
use serde_json::json;

pub const LIST_DIR: ToolDef = ToolDef {
    name: "list_dir",
    effect: Effect::Read,
    description: "List the entries of a directory in the repo. Directories end with `/`.",
    parameters: || {
        object(
            json!({"path": {"type": "string", "description": "Directory relative to the repo root; default `.`"}}),
            &[],
        )
    },
};

pub const READ_FILE: ToolDef = ToolDef {
    name: "read_file",
    effect: Effect::Read,
    description: "Read a text file, with line numbers. Large files are cut; read further with start_line/end_line.",
    parameters: || {
        object(
            json!({
                "path": {"type": "string", "description": "File path relative to the repo root"},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based); default 1"},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read (inclusive); default the end of the file"}
            }),
            &["path"],
        )
    },
};

pub const WRITE_FILE: ToolDef = ToolDef {
    name: "write_file",
    effect: Effect::Write,
    description: "Create or replace a whole file. Prefer apply_patch for small edits to existing files.",
    parameters: || {
        object(
            json!({
                "path": {"type": "string", "description": "File path relative to the repo root; parent directories are created"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            }),
            &["path", "content"],
        )
    },
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    #[serde(default)]
    path: String,
}

pub fn list_dir(ctx: &ToolContext, a: ListArgs) -> ToolOutput {
    let r = match ctx.resolve(&a.path, Access::Read) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let entries = match super::beneath::list(ctx.root.path(), &r.rel) {
        Ok(e) => e,
        Err(e) => return io_err(&format!("cannot list `{}`", r.rel), &e),
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|(n, _)| !(r.target == "." && n == ".git"))
        .map(|(n, dir)| if dir { format!("{n}/") } else { n })
        .collect();
    names.sort();
    const MAX: usize = 500;
    let total = names.len();
    names.truncate(MAX);
    let mut out = names.join("\n");
    if total > MAX {
        out.push_str(&format!("\n[... {} more entries; use glob_file_search to narrow ...]", total - MAX));
    }
    if total == 0 {
        out = format!("`{}` is empty", r.rel);
    }
    ToolOutput::ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

/// The whole of `rel`, if the policy lets the model read what it really is.
fn read_allowed(ctx: &ToolContext, rel: &str) -> Result<Vec<u8>, ToolOutput> {
    let root = super::beneath::open_root(ctx.root.path()).map_err(|e| io_err("cannot open the repository", &e))?;
    let f = ctx.open_readable(&root, rel)?;
    super::beneath::read_whole(f, rel).map_err(|e| io_err(&format!("cannot read `{rel}`"), &e))
}

pub fn read_file(ctx: &ToolContext, a: ReadArgs) -> ToolOutput {
    let r = match ctx.resolve(&a.path, Access::Read) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let bytes = match read_allowed(ctx, &r.rel) {
        Ok(b) => b,
        Err(e) => return e,
    };
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return ToolOutput::err(Code::InvalidArgs, format!("`{}` is a binary file ({} bytes)", r.rel, bytes.len()));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = a.start_line.unwrap_or(1).max(1);
    let end = a.end_line.unwrap_or(total).min(total);
    if total == 0 {
        return ToolOutput::ok(format!("`{}` is empty", r.rel));
    }
    if start > total || start > end {
        return ToolOutput::err(
            Code::InvalidArgs,
            format!("lines {start}-{end} are outside `{}`, which has {total} lines", r.rel),
        );
    }
    let mut out = String::new();
    let mut last = start - 1;
    for (i, line) in lines[start - 1..end].iter().enumerate() {
        let numbered = format!("{:>6}\t{line}\n", start + i);
        if out.len() + numbered.len() > ctx.limits.max_read_bytes && i > 0 {
            break;
        }
        out.push_str(&numbered);
        last = start + i;
    }
    let header = format!("{} (lines {start}-{last} of {total})\n", r.rel);
    if last < end {
        out.push_str(&format!("[... cut at the size limit; read on with start_line={} ...]\n", last + 1));
    }
    ToolOutput::ok(header + &out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    path: String,
    content: String,
}

pub fn write_file(ctx: &ToolContext, a: WriteArgs) -> ToolOutput {
    let r = match ctx.resolve(&a.path, Access::Write) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if r.abs.is_dir() {
        return ToolOutput::err(Code::InvalidArgs, format!("`{}` is a directory", r.rel));
    }
    let before = match super::beneath::read_before(ctx.root.path(), &r.rel) {
        Ok(b) => b,
        Err(e) => return io_err(&format!("cannot replace `{}`", r.rel), &e),
    };
    if let Err(e) = super::beneath::write_atomic(ctx.root.path(), &r.rel, a.content.as_bytes()) {
        return io_err(&format!("cannot write `{}`", r.rel), &e);
    }
    let id = ctx
        .changes
        .lock()
        .map(|mut c| c.record(vec![(r.rel.clone(), before.clone(), Some(a.content.clone().into_bytes()))]))
        .unwrap_or(0);
    let verb = if before.is_some() { "replaced" } else { "created" };
    ToolOutput::ok(format!(
        "{verb} `{}` ({} lines); change #{id} (undo_patch reverts it)",
        r.rel,
        a.content.lines().count()
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{Code, dispatch};
    use serde_json::json;

    #[tokio::test]
    async fn read_ranges_and_cuts() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), body).unwrap();
        let c = ctx(dir.path());
        let out = dispatch(&c, &call("read_file", json!({"path": "big.txt", "start_line": 10, "end_line": 12}))).await;
        assert!(out.content.starts_with("big.txt (lines 10-12 of 2000)\n"), "{}", out.content);
        assert!(out.content.contains("    11\tline 11\n"));
        let out = dispatch(&c, &call("read_file", json!({"path": "big.txt"}))).await;
        assert!(out.content.contains("read on with start_line="), "{}", &out.content[out.content.len() - 100..]);
        let out = dispatch(&c, &call("read_file", json!({"path": "nope.txt"}))).await;
        assert_eq!(out.code, Some(Code::NotFound));
    }

    #[tokio::test]
    async fn write_is_atomic_and_undoable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let c = ctx(dir.path());
        let out = dispatch(&c, &call("write_file", json!({"path": "sub/new.txt", "content": "hi\n"}))).await;
        assert!(out.ok, "{}", out.content);
        assert_eq!(std::fs::read_to_string(dir.path().join("sub/new.txt")).unwrap(), "hi\n");
        dispatch(&c, &call("write_file", json!({"path": "a.txt", "content": "new\n"}))).await;
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".hone-tmp"))
            .collect();
        assert!(leftovers.is_empty());
        let out = dispatch(&c, &call("undo_patch", json!({}))).await;
        assert!(out.ok, "{}", out.content);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "old\n");
    }

    #[tokio::test]
    async fn escapes_are_refused_by_every_file_tool() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let c = ctx(dir.path());
        for (tool, args) in [
            ("read_file", json!({"path": "../x"})),
            ("read_file", json!({"path": "link/x"})),
            ("list_dir", json!({"path": "/etc"})),
            ("write_file", json!({"path": "link/x", "content": ""})),
            ("write_file", json!({"path": ".git/hooks/pre-commit", "content": ""})),
            ("grep", json!({"pattern": "x", "path": "link"})),
            ("glob_file_search", json!({"pattern": "*", "path": "../"})),
        ] {
            let out = dispatch(&c, &call(tool, args.clone())).await;
            assert_eq!(out.code, Some(Code::PolicyDenied), "{tool} {args}: {}", out.content);
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
