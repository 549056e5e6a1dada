//! The fleet workspace's layout: a safe id per repository (one plain file name, unique in the
//! fleet) and its two directories, `repos/<id>` (the clone) and `reports/<id>`. Every removal
//! hone does in the workspace is of one such entry, reached without following a symlink: nothing
//! outside them is ever removed.

use crate::forge::credential::without_userinfo;
use crate::safe_fs;
use std::io::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The longest id, in bytes.
pub const MAX_ID: usize = 64;

/// Whether `id` is one safe path component: ASCII letters, digits, `.`, `_` and `-`, at most
/// [`MAX_ID`] bytes, not starting with `.` or `-` (so never `.`, `..`, a hidden name or an
/// option).
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && !id.starts_with(['.', '-'])
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A safe id from a URL or path: its last two components, without credentials, query, `.git`,
/// `.` or `..` (`https://github.com/acme/app.git` -> `acme__app`); `repo` when nothing is left.
pub fn id_from(source: &str) -> String {
    let shown = without_userinfo(source);
    let s = shown.split(['?', '#']).next().unwrap_or("");
    let parts: Vec<&str> = s.split(['/', ':', '\\']).filter(|p| !p.is_empty() && *p != "." && *p != "..").collect();
    let mut tail: Vec<&str> = parts.iter().rev().take(2).rev().copied().collect();
    if let Some(last) = tail.last_mut() {
        *last = last.strip_suffix(".git").filter(|l| !l.is_empty()).unwrap_or(last);
    }
    let raw = tail.join("__");
    let clean: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let mut id = clean.trim_start_matches(['.', '-']).to_string();
    id.truncate(MAX_ID);
    if id.is_empty() { "repo".into() } else { id }
}

/// Make `ids` unique, ignoring case (as a case-insensitive file system would): a clash gets
/// `-2`, `-3`, … in list order.
pub fn make_unique<'a>(ids: impl IntoIterator<Item = &'a mut String>) {
    let mut used = std::collections::HashSet::new();
    for id in ids {
        let base = id.clone();
        let mut n = 1;
        while !used.insert(id.to_ascii_lowercase()) {
            n += 1;
            let suffix = format!("-{n}");
            *id = format!("{}{suffix}", &base[..base.len().min(MAX_ID - suffix.len())]);
        }
    }
}

fn check(id: &str) -> Result<()> {
    if is_safe_id(id) {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::InvalidInput, format!("`{id}` is not a safe fleet id")))
    }
}

/// The fleet's memory of its repositories (`hone memory --dir`): kept in the workspace, so a
/// fleet that keeps its workspace between runs keeps what it learned.
pub fn memory_dir(workspace: &Path) -> PathBuf {
    workspace.join("memory")
}

/// `workspace/reports/<id>`.
pub fn report_dir(workspace: &Path, id: &str) -> PathBuf {
    workspace.join("reports").join(id)
}

/// Empty the report dir of `id` before its run: `reports` is reached without following a
/// symlink (one in its place is replaced), and `<id>` is removed whole without following any.
pub fn clear_report_dir(workspace: &Path, id: &str) -> Result<PathBuf> {
    check(id)?;
    let reports = safe_fs::open_dir_below(workspace, Path::new("reports"))?;
    safe_fs::remove_tree_at(&reports, id)?;
    Ok(report_dir(workspace, id))
}

/// `workspace/repos/<id>`, where `id`'s clone lives: `repos` is reached without following a
/// symlink, and a symlink in the clone's place is removed (never followed), so git works on
/// hone's own directory only.
pub fn clone_dir(workspace: &Path, id: &str) -> Result<PathBuf> {
    check(id)?;
    let repos = safe_fs::open_dir_below(workspace, Path::new("repos"))?;
    let dir = workspace.join("repos").join(id);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        safe_fs::remove_at(&repos, id)?;
    }
    Ok(dir)
}

/// Remove the clone of `id` whole, following no symlink (a clone hone will not reuse).
pub fn remove_clone(workspace: &Path, id: &str) -> Result<()> {
    check(id)?;
    let repos = safe_fs::open_dir_below(workspace, Path::new("repos"))?;
    safe_fs::remove_tree_at(&repos, id).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_single_names() {
        for (source, id) in [
            ("https://github.com/acme/service-a", "acme__service-a"),
            ("git@github.com:acme/app.git", "acme__app"),
            ("/tmp/x/local checkout", "x__local_checkout"),
            ("https://user:s3cret@github.com/acme/app.git", "acme__app"),
            ("https://tok3n@host/app", "host__app"),
            ("https://github.com/acme/app.git?x=1#y", "acme__app"),
            ("../", "repo"),
            ("..", "repo"),
            (".", "repo"),
            ("/", "repo"),
            ("", "repo"),
            ("./../.", "repo"),
            ("../../etc/..", "etc"),
            ("/srv/.git", "srv__.git"),
            ("/srv/.hidden", "srv__.hidden"),
            ("/.hidden", "hidden"),
            ("/-rf", "rf"),
            ("C:\\repos\\app", "repos__app"),
            ("/a/\u{e9}t\u{e9}/x y", "_t___x_y"),
        ] {
            let got = id_from(source);
            assert_eq!(got, id, "{source:?}");
            assert!(is_safe_id(&got), "{got:?}");
        }
        let long = id_from(&format!("/x/{}", "a".repeat(300)));
        assert!(long.len() == MAX_ID && is_safe_id(&long));
        for bad in ["", ".", "..", ".git", "-rf", "a/b", "a\\b", "a b", "\u{e9}", &"a".repeat(MAX_ID + 1)] {
            assert!(!is_safe_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn clashes_get_a_suffix_ignoring_case() {
        let mut ids: Vec<String> = ["x__app", "x__app", "X__App", "x__app-2", "y"].map(String::from).to_vec();
        make_unique(ids.iter_mut());
        assert_eq!(ids, ["x__app", "x__app-2", "X__App-3", "x__app-2-2", "y"]);
        let mut long = vec!["a".repeat(MAX_ID); 2];
        make_unique(long.iter_mut());
        assert!(long[1].ends_with("-2") && long[1].len() == MAX_ID && long[0] != long[1]);
    }

    #[test]
    fn clearing_removes_only_the_ids_own_directory() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::fs::create_dir_all(ws.path().join("reports/app/sub")).unwrap();
        std::fs::write(ws.path().join("reports/app/sub/r.json"), "{}").unwrap();
        std::fs::create_dir_all(ws.path().join("reports/other")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("reports/app/link")).unwrap();
        let dir = clear_report_dir(ws.path(), "app").unwrap();
        assert_eq!(dir, ws.path().join("reports/app"));
        assert!(!dir.exists() && ws.path().join("reports/other").is_dir());
        for bad in ["..", ".", "", "a/../..", "-x"] {
            assert!(clear_report_dir(ws.path(), bad).is_err(), "{bad:?}");
            assert!(clone_dir(ws.path(), bad).is_err(), "{bad:?}");
        }
        assert!(ws.path().join("reports/other").is_dir() && outside.path().join("keep").is_file());
        // A symlinked `reports` is replaced, never followed; so is a symlinked clone dir.
        std::fs::remove_dir_all(ws.path().join("reports")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("reports")).unwrap();
        std::fs::create_dir(outside.path().join("app")).unwrap();
        std::fs::write(outside.path().join("app/x"), "x").unwrap();
        clear_report_dir(ws.path(), "app").unwrap();
        assert!(outside.path().join("app/x").is_file(), "the symlinked `reports` was followed");
        assert!(std::fs::symlink_metadata(ws.path().join("reports")).unwrap().is_dir());
        std::fs::create_dir_all(ws.path().join("repos")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("repos/app")).unwrap();
        let clone = clone_dir(ws.path(), "app").unwrap();
        assert!(!clone.exists() && outside.path().join("app/x").is_file() && outside.path().join("keep").is_file());
    }
}
