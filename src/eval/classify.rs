//! Which files of a commit are tests, which are source, and which are neither, by the
//! conventions of the ecosystems `hone init` knows (Python, Node, Rust, Go). Pure, by path only.

/// What a changed path is to the miner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A test file: its change is held out of the task and applied only for grading.
    Test,
    /// Program source: its change is the fix the task asks for.
    Source,
    /// Docs, configuration, data: neither.
    Other,
}

/// Extensions of program source hone mines tasks for.
const SOURCE: &[&str] = &["py", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "rs", "go"];

/// Directories whose files are tests.
const TEST_DIRS: &[&str] = &["tests", "test", "__tests__", "testing"];

/// `path` (repository-relative, `/`-separated) as a test, source or other file.
pub fn kind(path: &str) -> Kind {
    let (dirs, name) = path.rsplit_once('/').map_or(("", path), |(d, n)| (d, n));
    let Some((stem, ext)) = name.rsplit_once('.') else { return Kind::Other };
    if !SOURCE.contains(&ext) {
        return Kind::Other;
    }
    let in_test_dir = dirs.split('/').any(|d| TEST_DIRS.contains(&d));
    let named_test = match ext {
        "py" => stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest",
        "go" => stem.ends_with("_test"),
        "rs" => false,
        _ => stem.ends_with(".test") || stem.ends_with(".spec"),
    };
    if in_test_dir || named_test { Kind::Test } else { Kind::Source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ecosystem_s_tests_are_told_from_its_source() {
        let cases = [
            ("calc.py", Kind::Source),
            ("tests/test_calc.py", Kind::Test),
            ("pkg/test_calc.py", Kind::Test),
            ("pkg/calc_test.py", Kind::Test),
            ("conftest.py", Kind::Test),
            ("src/app.ts", Kind::Source),
            ("src/app.test.ts", Kind::Test),
            ("src/app.spec.js", Kind::Test),
            ("src/__tests__/app.js", Kind::Test),
            ("src/lib.rs", Kind::Source),
            ("tests/cli.rs", Kind::Test),
            ("server.go", Kind::Source),
            ("server_test.go", Kind::Test),
            ("README.md", Kind::Other),
            ("docs/test/guide.md", Kind::Other),
            ("Makefile", Kind::Other),
            ("package.json", Kind::Other),
        ];
        for (path, want) in cases {
            assert_eq!(kind(path), want, "{path}");
        }
    }
}
