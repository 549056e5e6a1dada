//! No import circle of more than three files, and none through `env.rs`: a circle says two
//! concepts were cut in the wrong place. A file imports another when its code (comments and
//! test modules left out) names a path (`crate::a::b`, `super::x`, `use super::{x, y}`) whose
//! longest module prefix is that file.

use super::layering::sources;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest circle allowed, in files.
const MOST: usize = 3;

/// The module path of a source file (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`).
fn module_of(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap().with_extension("");
    let mut m: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        m.pop();
    }
    m
}

/// The code of `text`: up to its first test module, `//` comments dropped.
fn code(text: &str) -> String {
    let text = text.split("\n#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The module paths a file's code names, each from the crate's root.
fn named(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for root in ["crate::", "super::"] {
        for (i, _) in code.match_indices(root) {
            if code[..i].chars().next_back().is_some_and(|c| ident(c) || c == ':') {
                continue;
            }
            let path: String = code[i..].chars().take_while(|c| ident(*c) || *c == ':').collect();
            let parts: Vec<String> = path.split("::").filter(|p| !p.is_empty()).map(str::to_string).collect();
            let ups = parts.iter().take_while(|p| *p == "super").count();
            // `super` is the parent of the file's own module (`a::w`'s is `a`, `a/mod.rs`'s the root).
            let base = if ups == 0 { Vec::new() } else { module[..module.len().saturating_sub(ups)].to_vec() };
            let rest = &parts[if ups == 0 { 1 } else { ups }..];
            let after = &code[i + path.len()..];
            if after.starts_with('{') {
                for item in after[1..after.find('}').unwrap_or(1)].split(',') {
                    let first = item.trim().split("::").next().unwrap_or("").split(' ').next().unwrap_or("");
                    if !first.is_empty() && first != "self" {
                        out.push([base.as_slice(), rest, &[first.to_string()]].concat());
                    }
                }
            }
            out.push([base.as_slice(), rest].concat());
        }
    }
    out
}

/// Each file's imports of other files.
fn graph(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_of(src, f), f.clone())).collect();
    let resolve = |parts: &[String]| (1..=parts.len()).rev().find_map(|k| modules.get(&parts[..k]).cloned());
    let mut edges = BTreeMap::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        if name.ends_with("_tests.rs") || name == "tests.rs" {
            continue;
        }
        let module = module_of(src, f);
        let text = code(&std::fs::read_to_string(f).unwrap());
        let to: BTreeSet<PathBuf> =
            named(&text, &module).iter().filter_map(|p| resolve(p)).filter(|t| t != f).collect();
        edges.insert(f.clone(), to);
    }
    edges
}

/// The strongly connected parts of more than one file (Tarjan's algorithm).
fn circles(g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct T<'a> {
        g: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a PathBuf) {
        let n = t.index.len();
        t.index.insert(v, (n, n));
        t.stack.push(v);
        for w in t.g.get(v).into_iter().flatten() {
            let Some(w) = t.g.get_key_value(w).map(|(k, _)| k) else { continue };
            if !t.index.contains_key(w) {
                visit(t, w);
                let low = t.index[w].1.min(t.index[v].1);
                t.index.get_mut(v).unwrap().1 = low;
            } else if t.stack.contains(&w) {
                let low = t.index[w].0.min(t.index[v].1);
                t.index.get_mut(v).unwrap().1 = low;
            }
        }
        if t.index[v].0 == t.index[v].1 {
            let mut part = Vec::new();
            while let Some(w) = t.stack.pop() {
                part.push(w.clone());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                t.out.push(part);
            }
        }
    }
    let mut t = T { g, index: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn too_big(src: &Path) -> Vec<String> {
    let show =
        |c: &Vec<PathBuf>| c.iter().map(|f| f.strip_prefix(src).unwrap().display().to_string()).collect::<Vec<_>>();
    circles(&graph(src))
        .iter()
        .filter(|c| c.len() > MOST || c.iter().any(|f| f.ends_with("env.rs")))
        .map(|c| show(c).join(" → "))
        .collect()
}

#[test]
fn no_import_circle_is_longer_than_three_files_or_goes_through_env() {
    let found = too_big(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_circle_of_four_and_one_through_env() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).unwrap();
    write("a/mod.rs", "mod w; mod x; mod y; mod z;\n");
    write("a/w.rs", "use super::x::X;\n");
    write("a/x.rs", "use super::{y::Y, q};\n");
    write("a/y.rs", "fn f() { crate::a::z::go(); }\n");
    write("a/z.rs", "use super::w; // crate::env::Gone\n");
    write("env.rs", "use crate::b::B;\n");
    write("b.rs", "use crate::env::RunEnv;\n#[cfg(test)]\nmod tests { use crate::a::w; }\n");
    let found = too_big(src);
    assert_eq!(found, ["a/w.rs → a/x.rs → a/y.rs → a/z.rs", "b.rs → env.rs"], "{found:#?}");
}
