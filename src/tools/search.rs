//! Search tools: `glob_file_search` and `grep`, walking the repo with the `ignore` crate (so
//! `.gitignore` is respected) and matching with ripgrep's `grep` crates.

use super::walk::{Entry, Step, Walk};
use super::{Effect, ToolContext, ToolDef, object};
use crate::error::Code;
use crate::policy::Access;
use crate::protocol::ToolOutput;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    let found = Mutex::new(Vec::new());
    walk_parallel(ctx, &base.abs, || {
        let (matcher, found) = (&matcher, &found);
        Box::new(move |rel: String| {
            if (matcher.is_match(&rel) || (bare && Path::new(&rel).file_name().is_some_and(|n| matcher.is_match(n))))
                && let Ok(mut f) = found.lock()
            {
                f.push(rel);
            }
        })
    });
    let mut hits = found.into_inner().unwrap_or_else(|e| e.into_inner());
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
    let matcher =
        match RegexMatcherBuilder::new().case_insensitive(a.ignore_case).line_terminator(Some(b'\n')).build(&a.pattern)
        {
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
    let opener = match super::found::Opener::new(ctx, &base) {
        Ok(o) => o,
        Err(e) => return ToolOutput::err(Code::Io, format!("cannot open the repository: {e}")),
    };
    let max = a.max_results.unwrap_or(100).clamp(1, 1000);
    let found = Mutex::new(Found::new(max));
    let withheld = AtomicUsize::new(0);
    walk_parallel(ctx, &base.abs, || {
        let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
        let matcher = matcher.clone();
        let (filter, found, withheld, opener) = (&filter, &found, &withheld, &opener);
        Box::new(move |rel: String| {
            if let Some(f) = filter
                && !(f.is_match(&rel) || Path::new(&rel).file_name().is_some_and(|n| f.is_match(n)))
            {
                return;
            }
            if !opener.readable(&rel) {
                withheld.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if found.lock().is_ok_and(|mut f| f.skip(&rel)) {
                return;
            }
            // Opened beneath the root, only if regular, and only if what it really is (through
            // a symlinked directory the search started from) may be read.
            let file = match opener.open(&rel) {
                Ok(f) => f,
                Err(e) => {
                    if e.code == Some(Code::PolicyDenied) {
                        withheld.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
            };
            let mut hits = Vec::new();
            let _ = searcher.search_file(
                &matcher,
                &file,
                UTF8(|line, text| {
                    let shown: String = text.trim_end().chars().take(300).collect();
                    hits.push(format!("{rel}:{line}: {shown}"));
                    Ok(hits.len() <= max)
                }),
            );
            if !hits.is_empty()
                && let Ok(mut f) = found.lock()
            {
                f.add(rel, hits);
            }
        })
    });
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    ToolOutput::ok(grep_answer(found, &a.pattern, withheld.into_inner()))
}

/// What `grep` answers: the matches kept, whether it stopped early, and how many files the
/// policy kept it from searching.
fn grep_answer(found: Found, pattern: &str, withheld: usize) -> String {
    let max = found.max;
    let (hits, cut) = found.into_hits();
    let mut out = hits.join("\n");
    if cut {
        out.push_str(&format!(
            "\n[... stopped at {max} matches (the first in path order); narrow the pattern, path or glob ...]"
        ));
    }
    if hits.is_empty() {
        out = format!("no matches for `{pattern}`");
    }
    if withheld > 0 {
        out.push_str(&format!("\n[{withheld} file(s) not searched: the policy denies reading them]"));
    }
    out
}

/// Visit every file beneath `base` (respecting .gitignore, skipping `.git`, not following
/// symlinks) on the walker's threads, with the path relative to the root; each thread gets its
/// own visitor from `make`. Stops early when the run is cancelled.
/// A visitor of files, by path relative to the root.
type Visit<'a> = Box<dyn FnMut(String) + Send + 'a>;

fn walk_parallel<'a>(ctx: &'a ToolContext, base: &Path, mut make: impl FnMut() -> Visit<'a>) {
    let Some(below) = Below::new(base, ctx.root.path()) else { return };
    Walk::new(base).run(|| {
        let (mut visit, below) = (make(), &below);
        move |e: &Entry| {
            if ctx.bound.cancel.is_cancelled() {
                return Step::Quit;
            }
            if e.file_type().is_file()
                && let Some(rel) = below.rel(e.path())
            {
                visit(rel);
            }
            Step::Continue
        }
    });
}

/// Where the walk's paths go: the start as walked, and as a path relative to the root.
struct Below<'p> {
    start: &'p [u8],
    rel: String,
}

impl<'p> Below<'p> {
    fn new(start: &'p Path, root: &Path) -> Option<Below<'p>> {
        use std::os::unix::ffi::OsStrExt;
        let rel = start.strip_prefix(root).ok()?.to_string_lossy().into_owned();
        Some(Below { start: start.as_os_str().as_bytes(), rel })
    }

    /// `path` (the walk's start joined with the names it listed) relative to the root: the
    /// bytes after the start's, without the component-by-component comparison of
    /// `Path::strip_prefix` for every file.
    fn rel(&self, path: &Path) -> Option<String> {
        use std::os::unix::ffi::OsStrExt;
        let rest = path.as_os_str().as_bytes().strip_prefix(self.start)?;
        let rest = String::from_utf8_lossy(rest.strip_prefix(b"/").unwrap_or(rest));
        Some(if self.rel.is_empty() { rest.into_owned() } else { format!("{}/{rest}", self.rel) })
    }
}

/// The matches found so far, by file in path order: at most `max` are kept (the first in path
/// order), so the answer does not depend on which thread finished first, and a file past the
/// last kept one is not searched once `max` are held.
struct Found {
    max: usize,
    files: BTreeMap<String, Vec<String>>,
    held: usize,
    cut: bool,
}

impl Found {
    fn new(max: usize) -> Found {
        Found { max, files: BTreeMap::new(), held: 0, cut: false }
    }

    /// Whether a file at `rel` could not change the answer (only tell that there are more): then
    /// it is not searched, and the answer says that the search stopped.
    fn skip(&mut self, rel: &str) -> bool {
        let past = self.held >= self.max && self.files.keys().next_back().is_some_and(|last| rel > last.as_str());
        self.cut |= past;
        past
    }

    fn add(&mut self, rel: String, hits: Vec<String>) {
        self.held += hits.len();
        self.files.insert(rel, hits);
        while self.held > self.max {
            self.cut = true;
            let Some(mut last) = self.files.last_entry() else { break };
            let over = self.held - self.max;
            if last.get().len() <= over {
                self.held -= last.remove().len();
            } else {
                let keep = last.get().len() - over;
                last.get_mut().truncate(keep);
                self.held = self.max;
            }
        }
    }

    /// The kept matches in path order, and whether any were left out.
    fn into_hits(self) -> (Vec<String>, bool) {
        (self.files.into_values().flatten().collect(), self.cut)
    }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch;
    use super::super::testutil::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_path_below_the_start_relative_to_the_root() {
        let rel =
            |p: &str, start: &str, root: &str| super::Below::new(Path::new(start), Path::new(root))?.rel(Path::new(p));
        assert_eq!(rel("/r/a/b.rs", "/r", "/r").as_deref(), Some("a/b.rs"));
        assert_eq!(rel("/r/./a/b.rs", "/r/.", "/r").as_deref(), Some("a/b.rs"), "the start as the tools give it");
        assert_eq!(rel("/r/src/./a", "/r/src/.", "/r").as_deref(), Some("src/a"));
        assert_eq!(rel("/r/src/a", "/r/src", "/r/").as_deref(), Some("src/a"), "a root written with a slash");
        assert_eq!(rel("/s/a", "/r/src", "/r"), None, "not below the start");
        assert!(super::Below::new(Path::new("/s"), Path::new("/r")).is_none(), "a start outside the root");
    }

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

    /// Many threads search, one answer: the first matches in path order, whichever file was
    /// searched first, and the note says there were more.
    #[tokio::test]
    async fn the_answer_is_the_first_matches_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for (i, f) in ["d/z.txt", "b.txt", "a.txt", "c/a.txt", "e.txt"].iter().enumerate() {
            std::fs::create_dir_all(p.join(f).parent().unwrap()).unwrap();
            std::fs::write(p.join(f), format!("hit {i}a\nmiss\nhit {i}b\nhit {i}c\n")).unwrap();
        }
        let c = ctx(p);
        let out = dispatch(&c, &call("grep", json!({"pattern": "hit", "max_results": 5}))).await.content;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[..5],
            ["a.txt:1: hit 2a", "a.txt:3: hit 2b", "a.txt:4: hit 2c", "b.txt:1: hit 1a", "b.txt:3: hit 1b"],
            "{out}"
        );
        assert!(lines[5].starts_with("[... stopped at 5 matches"), "{out}");
        let all = dispatch(&c, &call("grep", json!({"pattern": "hit", "max_results": 15}))).await.content;
        assert_eq!(all.lines().count(), 15, "exactly max, no note: {all}");
        assert!(all.ends_with("e.txt:4: hit 4c"), "{all}");
        let files = dispatch(&c, &call("glob_file_search", json!({"pattern": "*.txt"}))).await.content;
        assert_eq!(files, "a.txt\nb.txt\nc/a.txt\nd/z.txt\ne.txt");
    }

    /// A symlink (to a file or a directory) is never searched through, and a denied file is
    /// counted, not searched.
    #[tokio::test]
    async fn symlinks_are_not_followed_and_denied_files_are_withheld() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.join("file-link.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path(), p.join("dir-link")).unwrap();
        std::fs::write(p.join(".env"), "needle=secret\n").unwrap();
        std::fs::write(p.join("in.txt"), "needle inside\n").unwrap();
        let c = ctx(p);
        let out = dispatch(&c, &call("grep", json!({"pattern": "needle"}))).await.content;
        assert!(out.starts_with("in.txt:1: needle inside\n"), "{out}");
        assert!(!out.contains("outside") && !out.contains("secret"), "{out}");
        assert!(out.contains("[1 file(s) not searched: the policy denies reading them]"), "{out}");
    }
}
