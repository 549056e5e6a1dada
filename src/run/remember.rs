//! The run's side of hone's memory (`crate::memory`): where this repository's memory is, settled
//! at intake (outside the work tree, hidden from every jail); the entries given to the model when
//! the session starts; and what the run observed, recorded when it ends. The model has no way to
//! write it: only the run record, after the fact, is read.

use super::handoff::Scope;
use super::request::Request;
use crate::git::Workspace;
use crate::memory::{self, Query, RepoKey, RunStamp, Store};
use crate::record::RunRecord;
use crate::record::memory::{MemoryReport, MemoryUsed};
use crate::spec::Job;
use crate::spec::answer::Change;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Where the run's memory is, or why the run has none.
pub enum Settled {
    On { store: Store, key: RepoKey, dir: PathBuf },
    Off(String),
}

impl Settled {
    /// The directory every jail hides (it exists by now: a later one would not be hidden).
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Settled::On { dir, .. } => Some(dir),
            Settled::Off(_) => None,
        }
    }

    /// The report's start: on, of which repository, in which file; or off, and why.
    pub fn report(&self) -> MemoryReport {
        match self {
            Settled::On { store, key, .. } => MemoryReport {
                enabled: true,
                key: key.as_str().to_string(),
                file: store.path_of(key).display().to_string(),
                ..Default::default()
            },
            Settled::Off(why) => MemoryReport { enabled: false, note: Some(why.clone()), ..Default::default() },
        }
    }
}

/// Settle the memory for this run: off when the job or the command line says so; else the
/// directory (`--memory-dir`, a fleet's workspace, or the environment's default), which must lie
/// outside the work tree, and the repository's key.
pub fn settle(job: &Job, req: &Request, ws: &Workspace) -> Settled {
    if !job.memory.enabled {
        return Settled::Off("memory is off for this job (`memory: {enabled: false}` or `--no-memory`)".into());
    }
    let Some(dir) = req.memory_dir.clone().or_else(|| memory::default_dir(&req.env)) else {
        return Settled::Off("no place for memory: set HONE_MEMORY_DIR, XDG_STATE_HOME or HOME".into());
    };
    let dir = crate::safe_fs::absolute(&dir);
    // Made now, before any jail is built: a directory made later would not be hidden from it.
    if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir) {
        return Settled::Off(format!("cannot use {} for memory: {e}", dir.display()));
    }
    let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
    if real.starts_with(ws.root()) {
        return Settled::Off(format!(
            "the memory directory {} is inside the work tree, where the repository could write it: memory is off",
            dir.display()
        ));
    }
    let Some(key) = key_for(job, req, ws) else {
        return Settled::Off("the repository has no remote and no commit to name it by: memory is off".into());
    };
    Settled::On { store: Store::at(real.clone()), key, dir: real }
}

/// The repository's name for its memory: the forge's name for it where the environment or a
/// fleet file says it (not a checkout's config a repository-side step could have changed), else
/// the remote's URL, else its first commit.
fn key_for(job: &Job, req: &Request, ws: &Workspace) -> Option<RepoKey> {
    let remote_url = ws.remote_url(&job.git.remote);
    let place = crate::forge::place::Place::decide(&crate::forge::place::Input {
        env: &req.env,
        spec: &job.forge,
        token_env: job.git.token_env.as_deref(),
        remote_url: remote_url.as_deref(),
        env_repo: req.env_repo,
        remote_trusted: req.remote_trusted,
    });
    if let (true, Some(repo)) = (place.repo_trusted, &place.repo) {
        let url = place.server.as_ref().map(|f| format!("{}/{repo}", f.url()));
        if let Some(key) = url.and_then(|u| RepoKey::from_url(&u, ws.root())) {
            return Some(key);
        }
    }
    RepoKey::of(ws.repository(), &job.git.remote)
}

/// What the session starts with: the data block for the model's first message, and the
/// entries it holds, for the report.
pub struct Recalled {
    pub block: Option<String>,
    pub used: Vec<MemoryUsed>,
    pub entries: usize,
    pub warnings: Vec<String>,
}

/// The entries relevant to the task (and the checks failing at the baseline) within the job's
/// token budget.
pub fn recall(s: &Scope, settled: &Settled, record: &RunRecord) -> Recalled {
    let Settled::On { store, key, .. } = settled else {
        return Recalled { block: None, used: vec![], entries: 0, warnings: vec![] };
    };
    let (memory, warnings) = store.load(key);
    let failing: Vec<String> = record.baseline.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect();
    let task = format!("{} {}", s.job.task, failing.join(" "));
    let picked = memory.retrieve(&Query { task: &task, files: &[] }, s.job.memory.tokens);
    let used: Vec<MemoryUsed> = picked.iter().map(|e| MemoryUsed { id: e.id.clone(), line: e.line() }).collect();
    let block = (!picked.is_empty()).then(|| memory::render(&picked));
    Recalled { block, used, entries: memory.entries.len(), warnings }
}

/// Record what the run observed. Only a run that may change the repository records: a review of
/// someone's pull request and a read-only job (whose task may be anyone's issue) only read.
pub fn record(s: &Scope, settled: &Settled, record: &RunRecord) -> Result<usize, String> {
    let Settled::On { store, key, .. } = settled else { return Ok(0) };
    if s.job.change != Change::Commit {
        return Ok(0);
    }
    let (mut memory, _) = store.load(key);
    let seen = memory::observed(record);
    let n = seen.len();
    memory.observe(seen, &RunStamp::of(record), &s.redactor);
    store.save(&memory).map_err(|e| e.render())?;
    Ok(n)
}

/// Reviewers' feedback on the PR autofix works on, remembered at once (so this run's retrieval
/// sees it too). Only a run that records memory keeps it.
pub fn feedback(
    s: &Scope,
    settled: &Settled,
    items: &[crate::forge::feedback::Feedback],
    record: &RunRecord,
) -> Result<(), String> {
    let Settled::On { store, key, .. } = settled else { return Ok(()) };
    if items.is_empty() || s.job.change != Change::Commit {
        return Ok(());
    }
    let (mut memory, _) = store.load(key);
    let seen = items
        .iter()
        .map(|f| memory::Observed {
            fact: memory::Fact::Review {
                pr: f.pr,
                reviewer: f.reviewer.clone(),
                state: f.state.clone(),
                body: f.body.clone(),
            },
            files: f.path.iter().cloned().collect(),
        })
        .collect();
    memory.observe(seen, &RunStamp::of(record), &s.redactor);
    store.save(&memory).map(drop).map_err(|e| e.render())
}
