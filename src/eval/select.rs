//! Which tests a task's test command runs: a command may name `{test_files}` (the files the
//! task's test change touches, as SWE-bench's harness runs them) or `{test_dirs}` (their
//! directories, as `go test` takes packages); hone puts in those paths, each quoted for the
//! shell. The agent's own run never learns them: there they stand for nothing, and the command
//! runs the whole suite. A command with neither runs the whole suite always.

/// The placeholders a test command may hold.
pub const FILES: &str = "{test_files}";
pub const DIRS: &str = "{test_dirs}";

/// `command` with its placeholders standing for `files` (paths relative to the work tree).
pub fn command(command: &str, files: &[String]) -> String {
    let mut dirs: Vec<String> = files
        .iter()
        .map(|f| match f.rsplit_once('/') {
            Some((d, _)) => d.to_string(),
            None => ".".to_string(),
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    // Each as `./path` (no name reads as an option), quoted for a POSIX shell.
    let quoted = |list: &[String]| {
        list.iter().map(|f| format!("'./{}'", f.replace('\'', r"'\''"))).collect::<Vec<_>>().join(" ")
    };
    let dirs = quoted(&dirs).replace("'./.'", "'.'");
    command.replace(FILES, &quoted(files)).replace(DIRS, &dirs)
}

/// `command` as the agent's run has it: its placeholders stand for nothing.
pub fn whole_suite(command: &str) -> String {
    command.replace(FILES, "").replace(DIRS, "")
}

/// The paths a patch touches (either side), in order, once each.
pub fn touched(patch: &git2::Diff<'_>) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for d in patch.deltas() {
        for p in [d.old_file().path(), d.new_file().path()].into_iter().flatten() {
            let p = p.to_string_lossy().into_owned();
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholders_become_the_quoted_files_and_their_directories() {
        let files = vec!["tests/test_a.py".to_string(), "tests/it's.py".to_string(), "top_test.go".to_string()];
        assert_eq!(
            command("pytest -q {test_files} --junitxml=j.xml", &files),
            r"pytest -q './tests/test_a.py' './tests/it'\''s.py' './top_test.go' --junitxml=j.xml"
        );
        assert_eq!(command("go test {test_dirs}", &files), "go test '.' './tests'");
        assert_eq!(command("cargo test", &files), "cargo test");
        assert_eq!(whole_suite("pytest {test_files} -q"), "pytest  -q");
    }

    #[test]
    fn a_patch_s_paths_are_listed_once_each() {
        let text = "diff --git a/t/a.py b/t/a.py\n--- a/t/a.py\n+++ b/t/a.py\n@@ -1 +1 @@\n-x\n+y\n\
                    diff --git a/t/b.py b/t/b.py\nnew file mode 100644\n--- /dev/null\n+++ b/t/b.py\n@@ -0,0 +1 @@\n+z\n";
        let diff = git2::Diff::from_buffer(text.as_bytes()).unwrap();
        assert_eq!(touched(&diff), vec!["t/a.py".to_string(), "t/b.py".to_string()]);
    }
}
