//! Where a run works and reports: the repository (the git work tree that contains the spec,
//! unless one is named), the report dir (`.hone/reports` at the repository root by default), and
//! the paths hone itself writes there, which are never part of the change.

use super::super::request::{Request, Source};
use crate::error::{Code, HoneError};
use crate::safe_fs::absolute;
use crate::spec::{DEFAULT_REPORT_DIR, Job};
use std::path::{Path, PathBuf};

pub use crate::spec::HONE_DIR;

/// Keep hone's own directory out of `git status` and `git add -A` in a repository with no
/// `.gitignore` for it: `.hone/.gitignore` holds `*` (itself included). One the user wrote is
/// left as it is. Reached without following a symlink.
pub fn hide_hone_dir(root: &Path) -> std::io::Result<()> {
    let dir = crate::safe_fs::open_dir_below(root, Path::new(HONE_DIR))?;
    let text = b"# hone's own files (reports, jail state): never part of a change\n*\n";
    crate::safe_fs::write_new_at(&dir, ".gitignore", text).map(|_| ())
}

pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The git work tree containing `start` (searched upward, like git), if any.
pub fn discover(start: &Path) -> Option<PathBuf> {
    let start = absolute(start);
    let repo = git2::Repository::discover(&start).ok()?;
    repo.workdir().map(|w| w.canonicalize().unwrap_or_else(|_| w.to_path_buf()))
}

fn spec_dir(job: &Job) -> PathBuf {
    absolute(job.spec_path.parent().unwrap_or(Path::new(".")))
}

/// The repository to work on: `--repo`, else `repo.path`, else the work tree that contains the
/// spec. With `repo.scratch`, that directory is copied into a fresh repository beside the spec.
pub fn repo_root(job: &Job, cli_repo: Option<PathBuf>) -> Result<PathBuf, HoneError> {
    let named = cli_repo.map(|r| absolute(&r)).or_else(|| job.repo.path.as_deref().map(absolute));
    if job.repo.scratch {
        let src = named.unwrap_or_else(|| spec_dir(job));
        let (base, rel) = (spec_dir(job), Path::new(HONE_DIR).join("scratch").join(&job.name));
        crate::git::init_scratch(&src, crate::git::Below { base: &base, rel: &rel })?;
        return Ok(base.join(rel));
    }
    let root = match named {
        Some(p) => p,
        None => discover(&spec_dir(job)).unwrap_or_else(|| spec_dir(job)),
    };
    // Nothing is created for a repository that is not there (a mistyped `--repo`).
    if !root.is_dir() {
        return Err(HoneError::new(Code::Git, format!("the repository `{}` does not exist", root.display()))
            .hint("check `--repo` or `repo.path`"));
    }
    Ok(root)
}

/// `--report-dir`, else `report.dir`, else `.hone/reports` at the repository root (beside the
/// spec for a scratch copy).
pub fn report_dir_path(job: &Job, cli: Option<PathBuf>) -> PathBuf {
    // As written (made absolute): ReportDir resolves only what lies outside the repository.
    if let Some(d) = cli.or_else(|| job.report_dir.clone()) {
        return crate::safe_fs::lexical(&d);
    }
    let base = if job.repo.scratch { spec_dir(job) } else { job.repo.path.clone().unwrap_or_else(cwd) };
    base.join(DEFAULT_REPORT_DIR)
}

/// Where to report a failure that happened before the job was known: `--report-dir`, else
/// `.hone/reports` in the repository of the spec (or of the current directory).
pub fn fallback_report_dir(req: &Request) -> Option<crate::output::dir::ReportDir> {
    let spec = match &req.source {
        Source::Spec(path) => Some(path.as_path()),
        _ => None,
    };
    let start = spec.and_then(Path::parent).map(absolute).unwrap_or_else(cwd);
    let root = discover(&start);
    let path = match &req.report_dir {
        Some(d) => crate::safe_fs::lexical(d),
        None => root.clone().unwrap_or(start).join(DEFAULT_REPORT_DIR),
    };
    let dir = crate::output::dir::ReportDir::new(&path, root.as_deref()).ok()?;
    dir.prepare().ok().map(|()| dir)
}

/// Repo-relative paths that are never part of the change, never make the tree dirty and are never
/// removed by a restore: hone's directory, the report dir, and every check's JUnit file.
pub fn exclusions(root: &Path, report_dir: &Path, job: &Job) -> Vec<String> {
    let root = absolute(root);
    let mut out = vec![HONE_DIR.to_string()];
    if let Ok(rel) = report_dir.strip_prefix(&root) {
        out.push(rel.to_string_lossy().into_owned());
    }
    for v in &job.verify {
        if let Some(j) = &v.junit
            && let Ok(rel) = absolute(&root.join(j)).strip_prefix(&root)
        {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out.retain(|r| !r.is_empty());
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untracked(repo: &git2::Repository) -> Vec<String> {
        let mut o = git2::StatusOptions::new();
        o.include_untracked(true).recurse_untracked_dirs(true);
        repo.statuses(Some(&mut o)).unwrap().iter().filter_map(|s| s.path().ok().map(str::to_string)).collect()
    }

    #[test]
    fn hones_own_dir_never_shows_in_git_status() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join(".hone/reports")).unwrap();
        std::fs::write(dir.path().join(".hone/reports/report.json"), "{}").unwrap();
        std::fs::write(dir.path().join("app.py"), "x = 1\n").unwrap();
        assert!(untracked(&repo).iter().any(|p| p.starts_with(".hone/")), "the control: visible before");
        hide_hone_dir(dir.path()).unwrap();
        assert_eq!(untracked(&repo), ["app.py"], "`git add -A` would pick up only the user's file");
        // A .gitignore the user wrote there is theirs.
        std::fs::write(dir.path().join(".hone/.gitignore"), "reports/\n").unwrap();
        hide_hone_dir(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join(".hone/.gitignore")).unwrap(), "reports/\n");
    }
}
