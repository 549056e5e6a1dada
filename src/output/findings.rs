//! Where failing checks point into the repository: the `path:line` positions their output names,
//! kept only when the path is a regular file inside the repository reached without a symlink.
//! GitHub annotations and the GitLab Code Quality report are both made from these.

use crate::record::RunRecord;
use crate::verify::CheckResult;
use std::path::{Component, Path};

/// A position a failing check's output names, with the rest of that line as its message.
/// The texts are as the check printed them: not yet redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<'a> {
    pub check: &'a str,
    /// Relative to the repository root, `/`-separated, without a leading `./`.
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub message: &'a str,
}

/// The checks the run ends with that are not accepted: the last verification round's, or the
/// baseline's when the run never verified.
pub fn failing(r: &RunRecord) -> Vec<&CheckResult> {
    if r.verify.is_empty() {
        r.baseline.iter().filter(|c| !c.accepted).collect()
    } else {
        r.final_checks().into_iter().filter(|c| !c.accepted).collect()
    }
}

/// Every position in the failing checks' output that names a file of the repository at
/// `repo_root` (canonical), in the order printed, without repeats.
pub fn findings<'a>(r: &'a RunRecord, repo_root: &Path) -> Vec<Finding<'a>> {
    let mut out: Vec<Finding<'a>> = Vec::new();
    for c in failing(r) {
        for line in c.output_tail.lines() {
            let Some((file, lineno, msg)) = locate(line) else { continue };
            let Some(path) = repo_file(repo_root, file) else { continue };
            let f = Finding { check: &c.name, path, line: lineno.max(1), message: msg.trim() };
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// `file` as a path relative to `repo_root` when it names a regular file inside the repository
/// reached without following a symlink; `None` otherwise. What a check prints is hostile: an
/// absolute path is kept only when it lies under the root (and is then made relative), and a
/// `..`, a symlinked directory or file, a missing file or a directory are all refused.
pub fn repo_file(repo_root: &Path, file: &str) -> Option<String> {
    let raw = Path::new(file);
    let rel = if raw.is_absolute() { raw.strip_prefix(repo_root).ok()? } else { raw };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => parts.push(n.to_str()?),
            _ => return None,
        }
    }
    let mut at = repo_root.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        let last = i + 1 == parts.len();
        if meta.file_type().is_symlink() || (last && !meta.is_file()) || (!last && !meta.is_dir()) {
            return None;
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Find `path:line[:col]: message` (gcc, ruff, eslint unix), `File "path", line N` (Python),
/// or `--> path:line:col` (rustc) in a line of output.
pub fn locate(line: &str) -> Option<(&str, u32, &str)> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("File \"") {
        let (file, tail) = rest.split_once("\", line ")?;
        let num: String = tail.chars().take_while(char::is_ascii_digit).collect();
        return Some((file, num.parse().ok()?, t));
    }
    let t = t.strip_prefix("--> ").unwrap_or(t);
    let mut parts = t.splitn(4, ':');
    let file = parts.next()?;
    let lineno: u32 = parts.next()?.trim().parse().ok()?;
    if file.is_empty() || file.contains(' ') || !file.contains('.') {
        return None;
    }
    let rest = parts.next().unwrap_or("");
    let msg = match rest.trim().parse::<u32>() {
        Ok(_) => parts.next().unwrap_or(t),
        Err(_) => {
            if rest.is_empty() {
                t
            } else {
                rest
            }
        }
    };
    Some((file, lineno, if msg.trim().is_empty() { t } else { msg }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_files_in_common_formats() {
        assert_eq!(locate("src/app.py:12:5: F401 unused import"), Some(("src/app.py", 12, " F401 unused import")));
        assert_eq!(
            locate("  File \"tests/test_a.py\", line 7, in test_x").map(|l| (l.0, l.1)),
            Some(("tests/test_a.py", 7))
        );
        assert_eq!(locate("   --> src/main.rs:3:9").map(|l| (l.0, l.1)), Some(("src/main.rs", 3)));
        assert_eq!(locate("Ran 2 tests in 0.001s"), None);
        assert_eq!(locate("FAILED (failures=1)"), None);
    }

    #[test]
    fn only_regular_files_inside_the_repository_reached_without_symlinks_are_kept() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::write(root.join("src/pkg/x.py"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("inner")).unwrap();
        let abs_inside = root.join("src/pkg/x.py");
        let abs_outside = outside.path().join("secret.txt");
        let cases: &[(&str, Option<&str>)] = &[
            ("src/pkg/x.py", Some("src/pkg/x.py")),
            ("./src/./pkg/x.py", Some("src/pkg/x.py")),
            (abs_inside.to_str().unwrap(), Some("src/pkg/x.py")),
            (abs_outside.to_str().unwrap(), None),
            ("/etc/passwd", None),
            ("../secret.txt", None),
            ("src/../src/pkg/x.py", None),
            ("linkdir/secret.txt", None),
            ("link.txt", None),
            ("inner/pkg/x.py", None),
            ("src/pkg", None),
            ("src/pkg/missing.py", None),
            ("", None),
            (".", None),
        ];
        for (file, want) in cases {
            assert_eq!(repo_file(&root, file).as_deref(), *want, "{file}");
        }
    }
}
