//! The fuzz targets (fuzz/, docs/fuzzing.md) stay in step: every `[[bin]]` of fuzz/Cargo.toml is
//! a file that calls its own door in `hone::fuzz_entry`, has seeds in fuzz/corpus/, and is named
//! by scripts/fuzz.sh; and every target the script names is a `[[bin]]`. Reads files only: no
//! build.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The (name, path) of every `[[bin]]` in fuzz/Cargo.toml.
fn bins() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("fuzz/Cargo.toml")).unwrap();
    let value = |line: &str, key: &str| {
        let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?;
        Some(rest.trim().trim_matches('"').to_string())
    };
    let mut out = Vec::new();
    for block in text.split("[[bin]]").skip(1) {
        let name = block.lines().find_map(|l| value(l, "name")).expect("a [[bin]] without a name");
        let path = block.lines().find_map(|l| value(l, "path")).expect("a [[bin]] without a path");
        out.push((name, path));
    }
    out
}

/// The names in the script's `TARGETS=(…)` line.
fn scripted() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("scripts/fuzz.sh")).unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix("TARGETS=(")).expect("scripts/fuzz.sh has no TARGETS=(…)");
    line.trim_end_matches(')').split_whitespace().map(str::to_string).collect()
}

#[test]
fn every_fuzz_target_is_a_file_with_seeds_and_the_script_runs_each() {
    let bins = bins();
    assert!(bins.len() >= 9, "fewer fuzz targets than parsers of hostile input: {bins:?}");
    let script = scripted();
    for (name, path) in &bins {
        let file = root().join("fuzz").join(path);
        let code = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(code.contains("fuzz_target!"), "{} is not a fuzz target", file.display());
        let door = format!("hone::fuzz_entry::{name}(");
        assert!(code.contains(&door), "{} does not call {door}", file.display());
        let seeds = root().join("fuzz/corpus").join(name);
        let count = std::fs::read_dir(&seeds).map(|d| d.count()).unwrap_or(0);
        assert!(count > 0, "no seeds in {}", seeds.display());
        assert!(script.contains(name), "scripts/fuzz.sh does not run {name}: {script:?}");
    }
    for name in &script {
        assert!(bins.iter().any(|(b, _)| b == name), "scripts/fuzz.sh names {name}, not a [[bin]] of fuzz/Cargo.toml");
    }
}

#[test]
fn the_fuzz_crate_is_outside_the_workspace_and_locked() {
    let manifest = std::fs::read_to_string(root().join("fuzz/Cargo.toml")).unwrap();
    assert!(manifest.lines().any(|l| l.trim() == "[workspace]"), "fuzz/Cargo.toml must be its own workspace");
    assert!(root().join("fuzz/Cargo.lock").is_file(), "fuzz/Cargo.lock is committed");
}
