//! Data flows one way: the command line → the run (`run`) → its outputs, over leaves that know
//! nothing of what uses them. A module below the run (everything but the run itself and the
//! commands that start it) that imports the run, or a command, fails this test, naming the line.
//! Inside the run, a stage (intake, environment, session, land, ship) that imports a sibling
//! stage fails it too: stages hand their results forward through `run::handoff`.

use std::path::{Path, PathBuf};

/// The run and what stands above it: the command line, the commands, and the commands that start
/// runs (fleets, replay, validate, init); and the fuzz targets' doors (`fuzz_entry`), which reach
/// each parser where the run reads its input.
const ABOVE: &[&str] =
    &["run", "commands", "cli", "fleet", "replay", "eval", "validate", "bench", "schema", "fuzz_entry"];
/// Files at the top that are above the run too.
const TOP: &[&str] = &["main", "lib"];

/// Every `.rs` file under `dir`, into `out`.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every line of code under `src/dir` that names a module path `bad` refuses, given the module
/// the line is in (comments left out), as `src/FILE:LINE: text`.
fn lines_naming(src: &Path, dir: &str, bad: impl Fn(&[String], &[String]) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    sources(&src.join(dir), &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let module = module_of(rel);
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if named_modules(code, &module).iter().any(|path| bad(&module, path)) {
                found.push(format!("src/{}:{}: {}", rel.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

/// Every line of a module below the run, under `src`, that names a module above it.
fn violations(src: &Path) -> Vec<String> {
    let above = |m: &str| ABOVE.contains(&m) || TOP.contains(&m);
    lines_naming(src, "", |module, path| {
        let below = module.first().is_some_and(|top| !above(top));
        below && path.first().is_some_and(|m| ABOVE.contains(&m.as_str()))
    })
}

#[test]
fn nothing_below_the_run_imports_the_run_or_a_command() {
    let found = violations(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.is_empty(), "modules below the run import it (or a command):\n{}", found.join("\n"));
}

#[test]
fn an_import_of_the_run_from_below_is_found_however_it_is_written() {
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("git")).unwrap();
    std::fs::create_dir_all(src.path().join("run")).unwrap();
    std::fs::write(src.path().join("git/a.rs"), "use crate::run::intake::locate::HONE_DIR;\n").unwrap();
    std::fs::write(src.path().join("git/b.rs"), "use crate::{spec, fleet::resume};\n").unwrap();
    std::fs::write(src.path().join("sandbox.rs"), "fn f() { crate::replay::read(d); }\n// crate::run:: in a comment\n")
        .unwrap();
    // The run may import what is below it, and itself.
    std::fs::write(src.path().join("run/x.rs"), "use crate::run::state; use crate::git;\n").unwrap();
    std::fs::write(src.path().join("git/c.rs"), "use crate::spec::HONE_DIR; use crate::{git, redact};\n").unwrap();
    let found = violations(src.path());
    assert_eq!(found.len(), 3, "{found:#?}");
    for f in ["src/git/a.rs:1:", "src/git/b.rs:1:", "src/sandbox.rs:1:"] {
        assert!(found.iter().any(|l| l.starts_with(f)), "{f} not found: {found:#?}");
    }
}

/// The stages of a run, in order.
const STAGES: &[&str] = &["intake", "environment", "session", "land", "ship"];

/// The module path of a source file under `src`: `run/session/turns.rs` → run::session::turns,
/// `run/session/mod.rs` → run::session.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// The identifiers of a path at the start of `s`: `a::b::{c}` → a, b.
fn path_segments(s: &str) -> Vec<String> {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(s.len());
    s[..end].split("::").filter(|x| !x.is_empty()).map(str::to_string).collect()
}

/// The absolute module paths a line names through `super::` (any number) or `crate::`, with brace
/// lists expanded one level: `super::super::{a, b::c}` from run::session::turns → run::a, run::b::c.
fn named_modules(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let supers = code.match_indices("super::").map(|(i, _)| i);
    let starts: Vec<usize> = supers.chain(code.match_indices("crate::").map(|(i, _)| i)).collect();
    let mut found = Vec::new();
    for i in starts {
        // Only the first `super::` of a chain starts a path.
        if code[..i].ends_with("super::") {
            continue;
        }
        let mut rest = &code[i..];
        let base: Vec<String> = match rest.strip_prefix("crate::") {
            Some(r) => {
                rest = r;
                vec![]
            }
            None => {
                let mut m = module.to_vec();
                while let Some(r) = rest.strip_prefix("super::") {
                    m.pop();
                    rest = r;
                }
                m
            }
        };
        // `prefix::{a, b::c}`: the prefix, then each item of the list.
        let prefix = path_segments(rest);
        let after = rest.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        let items: Vec<Vec<String>> = match after.strip_prefix('{') {
            Some(list) => list.split('}').next().unwrap_or("").split(',').map(|p| path_segments(p.trim())).collect(),
            None => vec![vec![]],
        };
        for item in items {
            found.push(base.iter().chain(&prefix).chain(&item).cloned().collect());
        }
    }
    found
}

/// Every line of a stage of the run that names a sibling stage.
fn sibling_imports(src: &Path) -> Vec<String> {
    lines_naming(src, "run", |module, path| {
        let stage = |p: &[String]| p.get(1).filter(|m| p[0] == "run" && STAGES.contains(&m.as_str())).cloned();
        matches!((stage(module), stage(path)), (Some(own), Some(other)) if own != other)
    })
}

#[test]
fn no_stage_of_the_run_imports_a_sibling_stage() {
    let found = sibling_imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.is_empty(), "stages of the run import a sibling stage:\n{}", found.join("\n"));
}

#[test]
fn an_import_of_a_sibling_stage_is_found_however_it_is_written() {
    let src = tempfile::tempdir().unwrap();
    let run = src.path().join("run");
    std::fs::create_dir_all(run.join("land")).unwrap();
    std::fs::create_dir_all(run.join("session")).unwrap();
    let files = [
        ("land/mod.rs", "use super::session::Opening;\n"),
        ("land/commit.rs", "use super::super::{state::Run, ship};\n"),
        ("session/turns.rs", "fn f() { crate::run::intake::load_policy(j); }\n"),
        ("ship.rs", "use super::environment;\n"),
        // Allowed: the run's shared parts, the stage's own modules, and leaves.
        ("session/mod.rs", "use super::handoff::Scope; use super::state::Run; mod turns;\n"),
        ("session/budget.rs", "use super::turns::Loop; use super::super::checks::Checks; use crate::git;\n"),
        ("land/guards.rs", "use super::commit; // super::session in a comment\n"),
    ];
    for (name, text) in files {
        std::fs::write(run.join(name), text).unwrap();
    }
    let found = sibling_imports(src.path());
    assert_eq!(found.len(), 4, "{found:#?}");
    for f in
        ["src/run/land/mod.rs:1:", "src/run/land/commit.rs:1:", "src/run/session/turns.rs:1:", "src/run/ship.rs:1:"]
    {
        assert!(found.iter().any(|l| l.starts_with(f)), "{f} not found: {found:#?}");
    }
}
