//! Mermaid's own parser, in Node (tests/data/mermaid/parse.mjs, with the packages .ci/test
//! installs and names in `HONE_TEST_MERMAID`): reads every ```` ```mermaid ```` block of the
//! Markdown hone writes, as GitHub would render it.

use super::require::Need;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mermaid/parse.mjs")
}

/// `HONE_TEST_MERMAID`, else `target/test-tools/mermaid` where `.ci/mermaid.sh` installs it.
fn packages() -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-tools/mermaid");
    std::env::var_os("HONE_TEST_MERMAID").map(PathBuf::from).or_else(|| installed.is_dir().then_some(installed))
}

fn node(args: &[&std::ffi::OsStr]) -> std::io::Result<std::process::Output> {
    let mut cmd = Command::new("node");
    if let Some(dir) = packages() {
        cmd.env("HONE_TEST_MERMAID", dir);
    }
    cmd.arg(script()).args(args).output()
}

/// Ok when `HONE_TEST_MERMAID` names a directory whose packages load.
pub fn available() -> Result<(), String> {
    let why = "(`bash .ci/test` installs mermaid, jsdom and marked with npm into target/test-tools/mermaid, through .ci/mermaid.sh; or set HONE_TEST_MERMAID to a directory that has them)";
    let Some(dir) = packages() else {
        return Err(format!("the Mermaid parser is not installed {why}"));
    };
    match node(&["--check".as_ref()]) {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "the Mermaid parser in {} does not load: {} {why}",
            Path::new(&dir).display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run node: {e} {why}")),
    }
}

/// What Mermaid read from each block of `files` (one JSON object per block: `type`, `title`,
/// `items`), or its error when a block is not valid Mermaid. Assumes the parser is there.
pub fn try_parse(files: &[&Path]) -> Result<Vec<Value>, String> {
    let args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let out = node(&args).map_err(|e| format!("cannot run node: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("one JSON line")).collect())
}

/// Every block of `files` read by Mermaid; fails the test when one is not valid Mermaid.
/// `None` when the parser is missing and waived (`require!`).
#[must_use]
pub fn parse(files: &[&Path]) -> Option<Vec<Value>> {
    if !super::require::require(Need::Mermaid) {
        return None;
    }
    Some(try_parse(files).unwrap_or_else(|e| panic!("not valid Mermaid: {e}")))
}
