//! One forge interface: outside `src/forge/`, no code names a particular forge. A line of code
//! (its comments, string literals and test modules left out) with an identifier that names one
//! (`github`, `gitlab`, `forgejo`, `gitea`, in any case, alone or inside a longer name) fails this
//! test, naming the line. What users write (a YAML key, a URL, a message) is text, not code: the
//! forge layer gives it its meaning. Adding a forge touches its folder and its registration.

use super::layering::sources;
use std::path::Path;

/// The names of forges hone speaks to.
const FORGES: &[&str] = &["github", "gitlab", "forgejo", "gitea"];

/// `text` with its comments and string and character literals blanked, and everything from a
/// `#[cfg(test)]` at the start of a line on left out (test modules sit at the end of a file).
fn code_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut in_str, mut raw_hashes, mut in_block) = (false, None::<usize>, 0usize);
    for line in text.lines() {
        if !in_str && raw_hashes.is_none() && in_block == 0 && line.starts_with("#[cfg(test)]") {
            break;
        }
        let b: Vec<char> = line.chars().collect();
        let mut code = String::new();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if in_block > 0 {
                if c == '*' && b.get(i + 1) == Some(&'/') {
                    in_block -= 1;
                    i += 1;
                } else if c == '/' && b.get(i + 1) == Some(&'*') {
                    in_block += 1;
                    i += 1;
                }
            } else if let Some(h) = raw_hashes {
                if c == '"' && b[i + 1..].iter().take(h).filter(|x| **x == '#').count() == h {
                    raw_hashes = None;
                    i += h;
                }
            } else if in_str {
                if c == '\\' {
                    i += 1;
                } else if c == '"' {
                    in_str = false;
                }
            } else if c == '/' && b.get(i + 1) == Some(&'/') {
                break;
            } else if c == '/' && b.get(i + 1) == Some(&'*') {
                in_block = 1;
                i += 1;
            } else if c == 'r' && matches!(b.get(i + 1), Some('"' | '#')) && !prev_is_ident(&b, i) {
                let h = b[i + 1..].iter().take_while(|x| **x == '#').count();
                if b.get(i + 1 + h) == Some(&'"') {
                    raw_hashes = Some(h);
                    i += 1 + h;
                } else {
                    code.push(c);
                }
            } else if c == '"' {
                in_str = true;
            } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
                i += 2;
            } else if c == '\'' && b.get(i + 1) == Some(&'\\') {
                i += b[i + 1..].iter().position(|x| *x == '\'').map_or(0, |p| p + 1);
            } else {
                code.push(c);
            }
            i += 1;
        }
        out.push(code);
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The identifiers in `code` that name a forge.
fn forge_names(code: &str) -> Vec<String> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .filter(|w| FORGES.iter().any(|f| w.to_ascii_lowercase().contains(f)))
        .map(str::to_string)
        .collect()
}

/// Every line of code under `src`, outside `src/forge/` and test files, that names a forge.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy();
        if rel.starts_with("forge") || name.ends_with("_tests.rs") || name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, code) in code_of(&text).iter().enumerate() {
            let names = forge_names(code);
            if !names.is_empty() {
                found.push(format!("src/{}:{}: {}", rel.display(), i + 1, names.join(", ")));
            }
        }
    }
    found
}

#[test]
fn no_code_outside_the_forge_layer_names_a_forge() {
    let found = violations(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(found.is_empty(), "code outside src/forge/ names a forge:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_forge_in_code_and_not_in_text() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("run")).unwrap();
    std::fs::create_dir_all(src.join("forge")).unwrap();
    let code = "// github in a comment\nlet u = \"https://github.com\"; let r = r#\"gitlab\"#;\n\
                if kind == Kind::Gitlab { x }\nlet c = 'g';\n/* GitHub */ let y = GitHub::new();\n\
                #[cfg(test)]\nmod tests { use crate::forge::github; }\n";
    std::fs::write(src.join("run/a.rs"), code).unwrap();
    std::fs::write(src.join("run/a_tests.rs"), "use crate::forge::gitea;\n").unwrap();
    std::fs::write(src.join("forge/b.rs"), "pub mod forgejo;\n").unwrap();
    std::fs::write(src.join("c.rs"), "let env_github_output = 1;\n").unwrap();
    let mut found = violations(src);
    found.sort();
    assert_eq!(found, ["src/c.rs:1: env_github_output", "src/run/a.rs:3: Gitlab", "src/run/a.rs:5: GitHub"]);
}
