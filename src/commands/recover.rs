//! `hone recover`: only the recovery a run does first: the work a killed run left in this
//! checkout saved on `refs/hone/<job>/killed-<run id>`, and the checkout put back where it
//! started; nothing when no run was killed here; a refusal while a hone run works here now.

use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::git::{Recovered, Workspace};
use std::path::{Path, PathBuf};

/// What `hone recover` did.
#[derive(serde::Serialize)]
pub struct Outcome {
    /// The repository's root.
    pub repo: String,
    /// The killed run recovered (null when there was none).
    pub recovered: Option<Recovered>,
    /// A marker hone would not have written, ignored and removed.
    pub warnings: Vec<String>,
}

/// Recover the checkout at (or containing) `repo`, default the current directory.
pub fn run(repo: Option<PathBuf>, env: &RunEnv) -> Result<Outcome, HoneError> {
    let start = repo.unwrap_or_else(|| PathBuf::from("."));
    let found = git2::Repository::discover(&start).map_err(|_| {
        HoneError::new(Code::Git, format!("{} is not in a git repository", start.display()))
            .hint("run it in the checkout, or name it with `--repo PATH`")
    })?;
    let root =
        found.workdir().map(Path::to_path_buf).ok_or_else(|| HoneError::new(Code::Git, "the repository is bare"))?;
    let ws = Workspace::open_for_run(&root, vec![crate::spec::HONE_DIR.to_string()], env)?;
    let claim = ws.claim_checkout(None)?;
    Ok(Outcome {
        repo: ws.root().display().to_string(),
        recovered: claim.recovered,
        warnings: claim.ignored.into_iter().collect(),
    })
}

/// The result line.
pub fn line(o: &Outcome) -> String {
    match &o.recovered {
        Some(r) => format!("hone: recovered: {}", r.warning()),
        None => format!("hone: nothing to recover in {}: no killed run had left it mid-run", o.repo),
    }
}

/// The exit code of a recovery that failed: 2 while another run works in the checkout or the
/// repository cannot be used as it is; 3 when the recovery itself failed (a file, git).
pub fn exit_code(e: &HoneError) -> i32 {
    match e.code {
        Code::Conflict | Code::Git | Code::Spec => crate::exit::INVALID_INPUT,
        _ => crate::exit::INFRA_FAILURE,
    }
}
