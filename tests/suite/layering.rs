//! Data flows one way: the command line → the run (`agent`) → its outputs, over leaves that know
//! nothing of what uses them. A module below the run (everything but the run itself and the
//! commands that start it) that imports the run, or a command, fails this test, naming the line.

use std::path::{Path, PathBuf};

/// The run and what stands above it: the command line, the commands, and the commands that start
/// runs (fleets, replay, validate, init).
const ABOVE: &[&str] = &["agent", "commands", "cli", "fleet", "replay", "validate", "init", "bench", "schema"];
/// Files at the top that are above the run too.
const TOP: &[&str] = &["main", "lib"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules a line of code names through `crate::`: `crate::a::b` and `crate::{a, b::c}`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let list = list.split('}').next().unwrap_or("");
            names.extend(list.split(',').map(|p| p.trim().split("::").next().unwrap_or("").to_string()));
        } else {
            names.push(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_string());
        }
    }
    names
}

/// Every line of a module below the run, under `src`, that names a module above it.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if ABOVE.contains(&top.as_str()) || TOP.contains(&top.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if crate_paths(code).iter().any(|m| ABOVE.contains(&m.as_str())) {
                found.push(format!("src/{}:{}: {}", rel.display(), i + 1, line.trim()));
            }
        }
    }
    found
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
    std::fs::create_dir_all(src.path().join("agent")).unwrap();
    std::fs::write(src.path().join("git/a.rs"), "use crate::agent::locate::HONE_DIR;\n").unwrap();
    std::fs::write(src.path().join("git/b.rs"), "use crate::{spec, fleet::resume};\n").unwrap();
    std::fs::write(
        src.path().join("sandbox.rs"),
        "fn f() { crate::replay::read(d); }\n// crate::agent:: in a comment\n",
    )
    .unwrap();
    // The run may import what is below it, and itself.
    std::fs::write(src.path().join("agent/x.rs"), "use crate::agent::turns; use crate::git;\n").unwrap();
    std::fs::write(src.path().join("git/c.rs"), "use crate::spec::HONE_DIR; use crate::{git, redact};\n").unwrap();
    let found = violations(src.path());
    assert_eq!(found.len(), 3, "{found:#?}");
    for f in ["src/git/a.rs:1:", "src/git/b.rs:1:", "src/sandbox.rs:1:"] {
        assert!(found.iter().any(|l| l.starts_with(f)), "{f} not found: {found:#?}");
    }
}
