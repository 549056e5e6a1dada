//! Parameters come one by one or as a named type, never as a tuple pattern (`(a, b): (A, B)`): such
//! a pattern only dodges the argument limit and hides which values belong together. A few pairs
//! that are one thing (a range, a position) are allowed by file and function.

use super::layering::sources;
use std::path::Path;

/// The tuple parameters allowed, as (file under `src/`, function), each with its reason.
const ALLOWED: &[(&str, &str)] = &[
    // A range of lines, `(start, end)`: one thing.
    ("forge/review/suggest.rs", "region"),
];

/// `text` with `//` comments blanked out, line numbers kept.
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index just past the bracket that closes the one opening at `open`.
fn close(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return Some(i + 1);
        }
    }
    None
}

/// Whether a parameter list holds a parameter that is a tuple pattern with a type.
fn has_tuple_param(params: &str) -> bool {
    let b = params.as_bytes();
    let mut start = 0;
    while start < b.len() {
        let p = params[start..].trim_start();
        let at = b.len() - p.len();
        let p = p.trim_start_matches('&').trim_start_matches("mut ").trim_start();
        let first = b.len() - p.len();
        if p.starts_with('(') {
            let Some(end) = close(b, first) else { return false };
            if params[end..].trim_start().starts_with(':') {
                return true;
            }
        }
        // On to the next parameter: past the next comma outside brackets.
        let mut i = at;
        let mut depth = 0i32;
        while i < b.len() && !(depth == 0 && b[i] == b',') {
            match b[i] {
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'>' if i == 0 || b[i - 1] != b'-' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        start = i + 1;
    }
    false
}

/// Where a function's parameter list opens, from just past its name: past any generics.
fn params_open(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0i32;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' if b[i - 1] != b'-' => depth -= 1,
            b'(' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Each function or closure in `text` with a tuple-pattern parameter, as (line, function).
fn tuple_params(text: &str) -> Vec<(usize, String)> {
    let code = code(text);
    let b = code.as_bytes();
    let line = |i: usize| code[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (i, _) in code.match_indices("fn ") {
        if code[..i].chars().next_back().is_some_and(ident) {
            continue;
        }
        let name: String = code[i + 3..].chars().take_while(|c| ident(*c)).collect();
        let Some(open) = params_open(b, i + 3 + name.len()) else { continue };
        let Some(end) = close(b, open) else { continue };
        if has_tuple_param(&code[open + 1..end - 1]) {
            out.push((line(i), name));
        }
    }
    // Closures: `|(a, b): (A, B)|`; an untyped `|(a, b)|` over pairs someone else made is fine.
    for (i, _) in code.match_indices('|') {
        let rest = &code[i + 1..];
        if code[..i].ends_with('|') || rest.starts_with('|') || !rest.trim_start().starts_with('(') {
            continue;
        }
        let Some(end) = rest.find('|') else { continue };
        if has_tuple_param(&rest[..end]) {
            out.push((line(i), "a closure".to_string()));
        }
    }
    out.sort();
    out
}

/// Every tuple parameter under `src` that neither list allows, as `src/FILE:LINE: fn NAME`.
fn found(src: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        for (line, name) in tuple_params(&std::fs::read_to_string(&f).unwrap()) {
            if !allowed.iter().any(|(file, func)| *file == rel && *func == name) {
                out.push(format!("src/{rel}:{line}: fn {name}"));
            }
        }
    }
    out
}

#[test]
fn no_function_takes_a_tuple_pattern_parameter_outside_the_allowlist() {
    assert!(ALLOWED.len() <= 4, "the allowlist is for a few pairs that are one thing");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = found(&src, ALLOWED);
    assert!(bad.is_empty(), "tuple-pattern parameters; name the group or split the function:\n{}", bad.join("\n"));
}

#[test]
fn the_scanner_finds_tuple_parameters_in_signatures_and_typed_closures_only() {
    let fixture = r#"
fn plain(a: u8, b: (u8, u8)) {}
fn pair(x: u8, (a, b): (u8, u8)) {}
pub(crate) async fn spread<'a, F: Fn(u8) -> u8>(
    f: F,
    (deadline, cancel): (Instant, &'a Token),
) -> u8 {
    let (a, b) = (1, 2);
    let (c, d): (u8, u8) = (a, b);
    v.iter().map(|(k, v)| k + v);
    let g = |(x, y): (u8, u8)| x + y;
    // fn commented((a, b): (u8, u8)) {}
    a || b | c
}
fn by_ref(&(a, b): &(u8, u8), mut (c, d): (u8, u8)) {}
"#;
    let got = tuple_params(fixture);
    let want = vec![
        (3, "pair".to_string()),
        (4, "spread".to_string()),
        (11, "a closure".to_string()),
        (15, "by_ref".to_string()),
    ];
    assert_eq!(got, want);
}
