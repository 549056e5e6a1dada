//! Every error a user sees carries a stable code (`HoneError` and its `Code`, or a module's own
//! error type with a `code()`): no `Result<_, String>` in `src/` outside tests, but for a few
//! inner steps of parsers, each named below with why. A new one fails this test, naming its line.

use super::layering::sources;
use std::path::Path;

/// `(file under src/, item)`: the `Result<_, String>` this test lets through, each a parser's
/// inner step whose text is the message of a typed error made one step up. At most five; none
/// is needed today (the shell analysis, the policy's rules, the credentials file, the patch
/// parser and the spec's templates each have an error type of their own).
const ALLOWED: &[(&str, &str)] = &[];

/// One `Result<_, String>` found: where, and in which item (the `fn`, `type`, `struct` or `enum`
/// whose text it is in).
#[derive(Debug, PartialEq, Eq)]
struct Hit {
    line: usize,
    item: String,
}

/// `source` with its comments and the insides of its string and character literals blanked
/// (newlines kept), so that only code is left, line for line.
fn blank(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let keep = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                keep(&mut out, c[i]);
                i += 1;
            }
            i += 2;
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && (i == 0 || !c[i - 1].is_alphanumeric()) {
            let hashes = c[i + 1..].iter().take_while(|h| **h == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            out.push('"');
            i += 2 + hashes;
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            while i < c.len() && !c[i..].iter().collect::<String>().starts_with(&close) {
                keep(&mut out, c[i]);
                i += 1;
            }
            out.push('"');
            i += close.len();
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    keep(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    keep(&mut out, c[i]);
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal (`'{'`, `'\''`); a lifetime (`'a`) has no closing quote.
            let end = (i + 2..c.len()).find(|&j| c[j] == '\'' && c[j - 1] != '\\' || j > i + 12).unwrap_or(c.len() - 1);
            out.push_str("' '");
            i = end + 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The lines (0-based) of `#[cfg(test)]` modules written inline (`mod tests { … }`), in code
/// that `blank` has left.
fn test_module_lines(lines: &[&str]) -> Vec<bool> {
    let mut skip = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim().starts_with("#[") {
            j += 1;
        }
        let head = lines.get(j).map_or("", |l| l.trim());
        if !(head.contains("mod ") && head.ends_with('{')) {
            i += 1;
            continue;
        }
        let (mut depth, mut k) = (0i64, j);
        while k < lines.len() {
            depth += lines[k].matches('{').count() as i64 - lines[k].matches('}').count() as i64;
            if depth <= 0 {
                break;
            }
            k += 1;
        }
        let k = k.min(lines.len() - 1);
        skip[i..=k].iter_mut().for_each(|s| *s = true);
        i = k + 1;
    }
    skip
}

/// The top-level arguments of the generics that open just before `open` (after a `<`) in
/// `text`; `->` is not a closing bracket. `None` when they do not close.
fn generic_args(text: &[char], open: usize) -> Option<Vec<String>> {
    let (mut depth, mut args, mut cur) = (0i32, Vec::new(), String::new());
    for i in open..text.len() {
        match text[i] {
            '<' | '(' | '[' => depth += 1,
            '>' if text[i - 1] == '-' => {}
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            '>' => {
                let last: String = cur.split_whitespace().collect();
                if !last.is_empty() {
                    args.push(last); // no trailing comma
                }
                return Some(args);
            }
            ',' if depth == 0 => {
                args.push(cur.split_whitespace().collect::<String>());
                cur.clear();
                continue;
            }
            ';' | '{' => return None,
            _ => {}
        }
        cur.push(text[i]);
    }
    None
}

/// Every `Result<…, String>` in `source` (a file's text) outside its comments, strings and
/// inline test modules, with the item it is in.
fn scan(source: &str) -> Vec<Hit> {
    let code = blank(source);
    let lines: Vec<&str> = code.lines().collect();
    let skip = test_module_lines(&lines);
    let mut text: Vec<char> = Vec::new();
    let mut line_of: Vec<usize> = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        for c in (if skip[n] { "" } else { l }).chars().chain(['\n']) {
            text.push(c);
            line_of.push(n + 1);
        }
    }
    let mut hits = Vec::new();
    let mut item = String::new();
    for i in 0..text.len() {
        if i > 0 && (text[i - 1].is_alphanumeric() || text[i - 1] == '_') {
            continue;
        }
        let starts = |w: &str| w.chars().enumerate().all(|(k, ch)| text.get(i + k) == Some(&ch));
        for kw in ["fn ", "type ", "struct ", "enum "] {
            if starts(kw) {
                item = text[i + kw.len()..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
            }
        }
        if starts("Result<")
            && let Some(args) = generic_args(&text, i + "Result<".len())
            && args.len() == 2
            && matches!(args[1].as_str(), "String" | "std::string::String")
        {
            hits.push(Hit { line: line_of[i], item: item.clone() });
        }
    }
    hits
}

/// Files that are tests in their own right: `tests.rs` and `*_tests.rs`.
fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs")
}

#[test]
fn no_error_is_a_bare_string_outside_the_few_parser_steps_allowed() {
    assert!(ALLOWED.len() <= 5, "at most five `Result<_, String>` may be allowed");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let (mut found, mut used) = (Vec::new(), Vec::new());
    for f in files.iter().filter(|f| !is_test_file(f)) {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        for h in scan(&text) {
            match ALLOWED.iter().find(|(file, item)| *file == rel && *item == h.item) {
                Some(allowed) => used.push(*allowed),
                None => found.push(format!("src/{rel}:{}: in `{}`", h.line, h.item)),
            }
        }
    }
    let stale: Vec<_> = ALLOWED.iter().filter(|a| !used.contains(a)).collect();
    assert!(stale.is_empty(), "allowed, but no longer there (remove them from ALLOWED): {stale:?}");
    assert!(
        found.is_empty(),
        "{} `Result<_, String>` outside the allowed list (return `HoneError` with its `Code`, or a typed \
         error with a `code()`):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_scanner_finds_string_errors_wherever_they_are_written_and_only_there() {
    let fixture = r#"
//! A module. fn commented() -> Result<(), String>
use x::Result;

pub fn one(a: &str) -> Result<Vec<u8>, String> {
    let f = |s: &str| -> std::result::Result<u8, String> { Ok(1) };
}

fn two(
    lookup: impl Fn(&str) -> Option<String>,
) -> std::result::Result<
    HashMap<String, Vec<(u8, u16)>>,
    String,
> {
}

type Parsed<'a> = Result<(&'a str, Option<u16>), String>;

pub struct Field {
    pub base: Result<git2::Oid, String>,
}

fn fine(a: Result<String>, b: Result<String, HoneError>) -> Result<Option<String>, Vec<String>> {
    let url = "https://example.com"; // Result<(), String> in a comment
    let brace = '{';
}

#[cfg(test)]
mod tests {
    fn helper() -> Result<(), String> {
        let s = "}";
    }
}

fn three() -> Result<Option<std::result::Result<(), String>>> {}
"#;
    let found = scan(fixture);
    let hits: Vec<(usize, &str)> = found.iter().map(|h| (h.line, h.item.as_str())).collect();
    assert_eq!(hits, [(5, "one"), (6, "one"), (11, "two"), (17, "Parsed"), (20, "Field"), (35, "three")], "{hits:?}");
}
