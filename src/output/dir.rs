//! The report dir: reached by descriptor below a trusted base (the repository root when the dir
//! is inside the repository, else its parent), so a symlink a command put in its path is replaced
//! rather than followed; cleared of an earlier run's reports; written only by rename.

use crate::error::{Code, HoneError};
use crate::safe_fs;
use std::fs::File;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Every file a run may leave in its report dir; an earlier run's are removed at the start.
pub const REPORT_FILES: &[&str] = &[
    "report.json",
    "junit.xml",
    "gl-code-quality.json",
    "hone.env",
    "summary.md",
    "events.jsonl",
    "transcript.jsonl",
    "pr.md",
    "change.patch",
];

/// The report dir for a run: made and cleared of an earlier run's reports, with `events.jsonl`
/// opened for the live event log (the inner `Err`: the dir is usable, the log is not).
pub fn open_for_run(
    wanted: &Path,
    repo_root: Option<&Path>,
) -> std::result::Result<(ReportDir, std::result::Result<File, HoneError>), HoneError> {
    let dir = ReportDir::new(wanted, repo_root)
        .and_then(|d| d.prepare().map(|()| d))
        .map_err(|e| HoneError::new(Code::Io, format!("cannot use the report dir {}: {e}", wanted.display())))?;
    let live = dir
        .create("events.jsonl")
        .map_err(|e| HoneError::new(Code::Io, format!("cannot write {}/events.jsonl: {e}", dir.path().display())));
    Ok((dir, live))
}

#[derive(Debug, Clone)]
pub struct ReportDir {
    path: PathBuf,
    base: PathBuf,
    rel: PathBuf,
}

impl ReportDir {
    /// `path` (made absolute); `repo_root` (canonical) anchors a dir that lies inside the repo.
    /// Inside the repository nothing below the root is resolved: a committed `.hone/reports`
    /// symlink is replaced by a directory, never followed to where it points.
    pub fn new(path: &Path, repo_root: Option<&Path>) -> Result<ReportDir> {
        if let Some(root) = repo_root
            && let Some(rel) = safe_fs::beneath_root(path, root)
        {
            if rel.as_os_str().is_empty() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "the report dir is the repository root; use a directory of its own, like .hone/reports",
                ));
            }
            return Ok(ReportDir { base: root.to_path_buf(), path: root.join(&rel), rel });
        }
        let abs = safe_fs::absolute(path);
        let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
            return Err(Error::new(ErrorKind::InvalidInput, format!("`{}` cannot be a report dir", abs.display())));
        };
        Ok(ReportDir { base: parent.to_path_buf(), rel: PathBuf::from(name), path: abs })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory, created when missing; symlinks below the base are replaced by directories.
    fn open(&self) -> Result<OwnedFd> {
        safe_fs::open_dir_below(&self.base, &self.rel)
    }

    /// Create the dir and remove the reports an earlier run left in it.
    pub fn prepare(&self) -> Result<()> {
        let dir = self.open()?;
        for f in REPORT_FILES {
            safe_fs::remove_at(&dir, f)?;
        }
        for k in 1..=crate::spec::attempts::MAX_TRIES {
            safe_fs::remove_at(&dir, &format!("try-{k}.patch"))?;
            safe_fs::remove_at(&dir, &format!("try-{k}.transcript.jsonl"))?;
        }
        Ok(())
    }

    /// Write `name` (replacing whatever has that name, never writing through it).
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        safe_fs::write_at(&self.open()?, name, bytes, 0o644)
    }

    /// A new, empty file `name`, for a stream written as the run goes.
    pub fn create(&self, name: &str) -> Result<File> {
        safe_fs::create_fresh_at(&self.open()?, name)
    }

    /// Read a report back (only a regular file, at most 64 MiB); nothing is created.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let dir = safe_fs::open_existing_dir_below(&self.base, &self.rel)?;
        safe_fs::read_regular_at(&dir, name, 64 << 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_root_is_refused_and_paths_inside_are_anchored_at_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        assert!(ReportDir::new(&root, Some(&root)).is_err());
        let r = ReportDir::new(&root.join(".hone/reports"), Some(&root)).unwrap();
        // A committed `.hone -> elsewhere` does not move a report dir inside the repository.
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("reports")).unwrap();
        std::fs::write(outside.path().join("reports/report.json"), "theirs").unwrap();
        std::fs::create_dir_all(root.join("x")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("x/h")).unwrap();
        let linked = ReportDir::new(&root.join("x/h/reports"), Some(&root)).unwrap();
        assert_eq!(linked.path(), root.join("x/h/reports"));
        linked.prepare().unwrap();
        assert_eq!(std::fs::read_to_string(outside.path().join("reports/report.json")).unwrap(), "theirs");
        assert!(std::fs::symlink_metadata(root.join("x/h")).unwrap().is_dir(), "the link was replaced");
        assert_eq!((r.base.as_path(), r.rel.as_path()), (root.as_path(), Path::new(".hone/reports")));
        r.prepare().unwrap();
        r.write("report.json", b"{}").unwrap();
        r.prepare().unwrap();
        assert!(!root.join(".hone/reports/report.json").exists(), "prepare clears an earlier run's reports");
    }
}
