//! Search tools: `glob_file_search` and `grep`, walking the repo with the `ignore` crate (so
//! `.gitignore` is respected) and matching with ripgrep's `grep` crates.

use super::{Effect, ToolContext, ToolDef, object};
use crate::error::Code;
use crate::policy::Access;
use crate::protocol::ToolOutput;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use serde::Deserialize;
use serde_json::json;
use std::path::Path;

pub const GLOB: ToolDef = ToolDef {
    name: "glob_file_search",
    effect: Effect::Read,
    description: "Find files by glob pattern (like `**/*.py` or `src/**/test_*.rs`). Ignored files (.gitignore) are skipped.",
    parameters: || {
        object(
            json!({
                "pattern": {"type": "string", "description": "Glob matched against paths relative to the repo root"},
                "path": {"type": "string", "description": "Directory to search under; default the repo root"}
            }),
            &["pattern"],
        )
    },
};

pub const GREP: ToolDef = ToolDef {
    name: "grep",
    effect: Effect::Read,
    description: "Search file contents with a regular expression (Rust regex syntax). Returns `path:line: text` matches. Ignored files are skipped.",
    parameters: || {
        object(
            json!({
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "File or directory to search; default the repo root"},
                "glob": {"type": "string", "description": "Only search files whose path matches this glob, like `*.py`"},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively; default false"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Maximum matches to return; default 100"}
            }),
            &["pattern"],
        )
    },
};

const MAX_FILES: usize = 200;

/// Walk `base` (inside `root`) respecting .gitignore, yielding files with their relative paths.
pub fn walk(root: &Path, base: &Path) -> impl Iterator<Item = (String, std::path::PathBuf)> {
    let root = root.to_path_buf();
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(move |e| {
            let rel = e.path().strip_prefix(&root).ok()?.to_string_lossy().into_owned();
            Some((rel, e.into_path()))
        })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: String,
}

pub fn glob(ctx: &ToolContext, a: GlobArgs) -> ToolOutput {
    let base = match ctx.resolve(&a.path, Access::Read) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let matcher = match globset::GlobBuilder::new(&a.pattern).literal_separator(false).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => {
            return ToolOutput::err(Code::InvalidArgs, format!("bad glob `{}`: {e}", a.pattern));
        }
    };
    let bare = !a.pattern.contains('/');
    let mut hits: Vec<String> = walk(ctx.root.path(), &base.abs)
        .filter(|(rel, _)| {
            matcher.is_match(rel) || (bare && Path::new(rel).file_name().is_some_and(|n| matcher.is_match(n)))
        })
        .map(|(rel, _)| rel)
        .collect();
    hits.sort();
    let total = hits.len();
    hits.truncate(MAX_FILES);
    let mut out = hits.join("\n");
    if total > MAX_FILES {
        out.push_str(&format!("\n[... {} more files; use a narrower pattern ...]", total - MAX_FILES));
    }
    if total == 0 {
        out = format!("no files match `{}`", a.pattern);
    }
    ToolOutput::ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    max_results: Option<usize>,
}

pub fn grep(ctx: &ToolContext, a: GrepArgs) -> ToolOutput {
    let base = match ctx.resolve(&a.path, Access::Read) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let matcher = match RegexMatcherBuilder::new().case_insensitive(a.ignore_case).build(&a.pattern) {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::err(Code::InvalidArgs, format!("bad regular expression: {e}"));
        }
    };
    let filter = match a.glob.as_deref().map(globset::Glob::new) {
        Some(Ok(g)) => Some(g.compile_matcher()),
        Some(Err(e)) => return ToolOutput::err(Code::InvalidArgs, format!("bad glob: {e}")),
        None => None,
    };
    let max = a.max_results.unwrap_or(100).clamp(1, 1000);
    let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let mut hits = Vec::new();
    let mut truncated = false;
    let mut withheld = 0;
    for (rel, abs) in walk(ctx.root.path(), &base.abs) {
        // Only regular files are searched: a FIFO would block the open.
        if !std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_file()) {
            continue;
        }
        if !ctx.readable(&rel) {
            withheld += 1;
            continue;
        }
        if let Some(f) = &filter
            && !(f.is_match(&rel) || Path::new(&rel).file_name().is_some_and(|n| f.is_match(n)))
        {
            continue;
        }
        let _ = searcher.search_path(
            &matcher,
            &abs,
            UTF8(|line, text| {
                if hits.len() >= max {
                    truncated = true;
                    return Ok(false);
                }
                let text = text.trim_end();
                let shown: String = text.chars().take(300).collect();
                hits.push(format!("{rel}:{line}: {shown}"));
                Ok(true)
            }),
        );
        if truncated {
            break;
        }
    }
    let mut out = hits.join("\n");
    if truncated {
        out.push_str(&format!("\n[... stopped at {max} matches; narrow the pattern, path or glob ...]"));
    }
    if hits.is_empty() {
        out = format!("no matches for `{}`", a.pattern);
    }
    if withheld > 0 {
        out.push_str(&format!("\n[{withheld} file(s) not searched: the policy denies reading them]"));
    }
    ToolOutput::ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::dispatch;
    use super::super::testutil::*;
    use serde_json::json;

    #[tokio::test]
    async fn respects_gitignore_and_skips_git() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::create_dir_all(p.join("build")).unwrap();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(p.join(".gitignore"), "build/\n").unwrap();
        std::fs::write(p.join("src/a.py"), "def needle():\n    pass\n").unwrap();
        std::fs::write(p.join("build/a.py"), "def needle(): pass\n").unwrap();
        std::fs::write(p.join(".git/config"), "needle\n").unwrap();
        let c = ctx(p);
        let out = dispatch(&c, &call("grep", json!({"pattern": "needle"}))).await;
        assert_eq!(out.content, "src/a.py:1: def needle():");
        let out = dispatch(&c, &call("glob_file_search", json!({"pattern": "*.py"}))).await;
        assert_eq!(out.content, "src/a.py");
        let out = dispatch(&c, &call("grep", json!({"pattern": "NEEDLE", "ignore_case": true, "glob": "*.rs"}))).await;
        assert!(out.content.starts_with("no matches"));
        let out = dispatch(&c, &call("grep", json!({"pattern": "("}))).await;
        assert!(!out.ok);
    }
}
