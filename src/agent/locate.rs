//! Where a run works and reports: the repository (the git work tree that contains the spec,
//! unless one is named), the report dir (`.hone/reports` at the repository root by default), and
//! the paths hone itself writes there, which are never part of the change.

use super::{Invalid, RunOptions};
use crate::safe_fs::absolute;
use crate::spec::{DEFAULT_REPORT_DIR, Job};
use std::path::{Path, PathBuf};

/// hone's own directory at the repository root: reports, scratch copies, caches.
pub const HONE_DIR: &str = ".hone";

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
pub fn repo_root(job: &Job, cli_repo: Option<PathBuf>) -> Result<PathBuf, Invalid> {
    let named = cli_repo.map(|r| absolute(&r)).or_else(|| job.repo.path.as_deref().map(absolute));
    if job.repo.scratch {
        let src = named.unwrap_or_else(|| spec_dir(job));
        let dest = spec_dir(job).join(HONE_DIR).join("scratch").join(&job.name);
        crate::git::init_scratch(&src, &dest).map_err(|e| Invalid::new(e.code, e.render()))?;
        return Ok(dest);
    }
    let root = match named {
        Some(p) => p,
        None => discover(&spec_dir(job)).unwrap_or_else(|| spec_dir(job)),
    };
    // Nothing is created for a repository that is not there (a mistyped `--repo`).
    if !root.is_dir() {
        return Err(Invalid::new(
            crate::error::Code::Git,
            format!(
                "error[E_GIT]: the repository `{}` does not exist\n  = help: check `--repo` or `repo.path`",
                root.display()
            ),
        ));
    }
    Ok(root)
}

/// `--report-dir`, else `report.dir`, else `.hone/reports` at the repository root (beside the
/// spec for a scratch copy).
pub fn report_dir_path(job: &Job, cli: Option<PathBuf>) -> PathBuf {
    if let Some(d) = cli.or_else(|| job.report_dir.clone()) {
        return absolute(&d);
    }
    let base = if job.repo.scratch { spec_dir(job) } else { job.repo.path.clone().unwrap_or_else(cwd) };
    base.join(DEFAULT_REPORT_DIR)
}

/// Where to report a failure that happened before the job was known: `--report-dir`, else
/// `.hone/reports` in the repository of the spec (or of the current directory).
pub fn fallback_report_dir(opts: &RunOptions) -> Option<crate::report::dir::ReportDir> {
    let start = opts.spec.as_deref().and_then(Path::parent).map(absolute).unwrap_or_else(cwd);
    let root = discover(&start);
    let path = match &opts.report_dir {
        Some(d) => absolute(d),
        None => root.clone().unwrap_or(start).join(DEFAULT_REPORT_DIR),
    };
    let dir = crate::report::dir::ReportDir::new(&path, root.as_deref()).ok()?;
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
