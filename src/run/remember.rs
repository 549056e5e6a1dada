//! The run's side of hone's memory (`crate::memory`): where this repository's memory is, settled
//! at intake (outside the work tree, hidden from every jail); the entries given to the model when
//! the session starts; and what the run observed, recorded when it ends. The model has no way to
//! write it: only the run record, after the fact, is read.

use super::handoff::Scope;
use super::request::Request;
use crate::git::Workspace;
use crate::memory::{self, Query, RepoKey, RunStamp, Store};
use crate::policy::Policy;
use crate::record::RunRecord;
use crate::record::memory::{MemoryReport, MemoryUsed};
use crate::spec::Job;
use crate::spec::answer::Change;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Where the run's memory is, or why the run has none.
pub enum Settled {
    On {
        store: Store,
        key: RepoKey,
        /// The directory as given and its real path (the same, unless a link leads to it).
        dirs: Vec<PathBuf>,
        /// A review or read-only job: it reads memory and records nothing.
        reads_only: bool,
    },
    Off(String),
}

impl Settled {
    /// The paths every jail hides (the directory exists by now: a later one would not be).
    pub fn dirs(&self) -> &[PathBuf] {
        match self {
            Settled::On { dirs, .. } => dirs,
            Settled::Off(_) => &[],
        }
    }

    /// The report's start: on, of which repository, in which file; or off, and why.
    pub fn report(&self) -> MemoryReport {
        match self {
            Settled::On { store, key, reads_only, .. } => MemoryReport {
                enabled: true,
                note: reads_only
                    .then(|| "this job reads memory and records nothing (review and read-only jobs)".into()),
                key: key.as_str().to_string(),
                file: store.path_of(key).display().to_string(),
                ..Default::default()
            },
            Settled::Off(why) => MemoryReport { enabled: false, note: Some(why.clone()), ..Default::default() },
        }
    }
}

/// Settle the memory for this run: off when the job or the command line says so; else the
/// directory (`--memory-dir`, a fleet's workspace, or the environment's default), which no
/// command may be able to write: never in or above the work tree, never under a tree the policy
/// makes writable, never with the sandbox off. Both its path as given and its real path are
/// hidden from every jail (a home reached through a link shows the former).
pub fn settle(job: &Job, req: &Request, ws: &Workspace, policy: &Policy) -> Settled {
    if !job.memory.enabled {
        return Settled::Off("memory is off for this job (`memory: {enabled: false}` or `--no-memory`)".into());
    }
    if !policy.sandbox {
        return Settled::Off("memory is off: with `sandbox: off` the model's commands could write it".into());
    }
    let Some(dir) = req.memory_dir.clone().or_else(|| memory::default_dir(&req.env)) else {
        return Settled::Off("no place for memory: set HONE_MEMORY_DIR, XDG_STATE_HOME or HOME".into());
    };
    let given = crate::safe_fs::lexical(&dir);
    let root = ws.root();
    let reachable = |p: &Path| {
        p.starts_with(root) || root.starts_with(p) || policy.sandbox_writable.iter().any(|w| p.starts_with(w))
    };
    let refuse = |p: &Path| {
        Settled::Off(format!(
            "the memory directory {} is in, above or under a tree the model's commands can write (the work tree, `paths.sandbox_writable`): memory is off",
            p.display()
        ))
    };
    if reachable(&given) {
        return refuse(&given);
    }
    // Made now, before any jail is built: a directory made later would not be hidden from it.
    if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&given) {
        return Settled::Off(format!("cannot use {} for memory: {e}", given.display()));
    }
    let real = given.canonicalize().unwrap_or_else(|_| given.clone());
    if reachable(&real) {
        return refuse(&real);
    }
    let Some(key) = key_for(job, req, ws) else {
        return Settled::Off("the repository has no remote and no commit to name it by: memory is off".into());
    };
    let reads_only = job.change != Change::Commit;
    Settled::On { store: Store::at(real.clone()), key, dirs: vec![given, real], reads_only }
}

/// The repository's name for its memory: the forge's name for it where the environment or a
/// fleet file says it (not a checkout's config a repository-side step could have changed), else
/// the remote's URL, else its first commit; a scratch repository's, its place.
fn key_for(job: &Job, req: &Request, ws: &Workspace) -> Option<RepoKey> {
    // A scratch repository is made anew for each run (a new first commit), always at one place.
    if job.repo.scratch {
        return RepoKey::from_url(&ws.root().to_string_lossy(), ws.root());
    }
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

/// The most files a retrieval is asked about.
const QUERY_FILES: usize = 50;

/// The files a retrieval is asked about: `pr_files` (the ones a pull request touches), then the
/// repository's files that the checks failing at the baseline name in their output (`path:line`,
/// each checked to be a regular file inside `root` reached without a link), without repeats, at
/// most [`QUERY_FILES`]. So a run with no pull request is still asked about the files its
/// task is likely to change.
pub fn query_files(mut pr_files: Vec<String>, record: &RunRecord, root: &Path) -> Vec<String> {
    for f in crate::output::findings::findings(record, root) {
        if pr_files.len() >= QUERY_FILES {
            break;
        }
        if !pr_files.contains(&f.path) {
            pr_files.push(f.path);
        }
    }
    pr_files.truncate(QUERY_FILES);
    pr_files
}

/// The entries relevant to the task, the checks failing at the baseline and `files`, within the
/// job's token budget.
pub fn recall(s: &Scope, record: &RunRecord, files: &[String]) -> Recalled {
    let Settled::On { store, key, .. } = &s.memory else {
        return Recalled { block: None, used: vec![], entries: 0, warnings: vec![] };
    };
    let (memory, warnings) = store.load(key);
    let failing: Vec<String> = record.baseline.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect();
    let task = format!("{} {}", s.job.task, failing.join(" "));
    let picked = memory.retrieve(&Query { task: &task, files }, s.job.memory.tokens);
    let used: Vec<MemoryUsed> = picked.iter().map(|e| MemoryUsed { id: e.id.clone(), line: e.line() }).collect();
    let block = (!picked.is_empty()).then(|| memory::render(&picked));
    Recalled { block, used, entries: memory.entries.len(), warnings }
}

/// The paths the repository had at `at`, as a test on a path (relative to its root); with no
/// commit, none.
fn tracked_at(ws: &Workspace, at: Option<git2::Oid>) -> impl Fn(&str) -> bool + '_ {
    let tree = at.and_then(|oid| ws.repository().find_commit(oid).ok()).and_then(|c| c.tree().ok());
    move |p: &str| tree.as_ref().is_some_and(|t| t.get_path(Path::new(p)).is_ok())
}

/// Record what the run observed; how many facts (entries added or updated). Only a run that may
/// change the repository records: a review of someone's pull request and a read-only job (whose
/// task may be anyone's issue) only read. The commands are told in hone's vocabulary, whose
/// paths are those the repository had at `paths_at`: the run's base, or in autofix the PR's base
/// as the forge names it (the PR's head is its author's, or hone's earlier work).
pub fn record(s: &Scope, record: &RunRecord, paths_at: Option<git2::Oid>) -> crate::error::Result<usize> {
    let vocab = memory::Vocabulary::of(record, tracked_at(&s.ws, paths_at));
    let seen = memory::observed(record, &vocab);
    let n = seen.iter().map(|o| o.fact.id()).collect::<std::collections::BTreeSet<_>>().len();
    keep(s, seen, record).map(|kept| if kept { n } else { 0 })
}

/// Reviewers' feedback on the PR autofix works on (only trusted reviewers': `forge::feedback`),
/// remembered at once (so this run's retrieval sees it too). A line comment's file is kept only
/// when the PR's base as the forge names it (`trusted`) had it: the PR adds files its author or
/// a model named; with no known base, no file is kept.
pub fn feedback(
    s: &Scope,
    items: &[crate::forge::feedback::Feedback],
    record: &RunRecord,
    trusted: Option<git2::Oid>,
) -> crate::error::Result<()> {
    let tracked = tracked_at(&s.ws, trusted);
    let seen = items
        .iter()
        .map(|f| memory::Observed {
            fact: memory::Fact::Review {
                pr: f.pr,
                reviewer: f.reviewer.clone(),
                state: f.state.clone(),
                body: f.body.clone(),
            },
            files: f.path.iter().filter(|p| tracked(p)).cloned().collect(),
        })
        .collect();
    keep(s, seen, record).map(drop)
}

/// Add `seen` to the repository's memory (redacted, merged, bounded) and save it; whether the
/// run records at all.
fn keep(s: &Scope, seen: Vec<memory::Observed>, record: &RunRecord) -> crate::error::Result<bool> {
    let Settled::On { store, key, reads_only: false, .. } = &s.memory else { return Ok(false) };
    if seen.is_empty() {
        return Ok(true);
    }
    let stamp = RunStamp::of(record);
    let observe = |memory: &mut memory::Memory| {
        memory.observe(seen, &stamp, &s.redactor);
        Ok(())
    };
    store.update(key, observe).map(|_| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_failing_baseline_check_names_are_asked_about_after_the_prs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/calc.py"), "x").unwrap();
        std::fs::write(root.join("src/pr.py"), "x").unwrap();
        let mut record = crate::run::state::test_record("j");
        let tail = "src/calc.py:3: E: bad\n../outside.py:1: no\nsrc/pr.py:9: again\nmissing.py:2: gone";
        record.baseline.push(crate::verify::CheckResult {
            attempt: 0,
            passed: false,
            accepted: false,
            output_tail: tail.into(),
            ..crate::verify::example("lint")
        });
        let files = query_files(vec!["src/pr.py".into()], &record, &root);
        assert_eq!(files, ["src/pr.py", "src/calc.py"]);
        // A check that is accepted at the baseline names nothing.
        record.baseline[0].accepted = true;
        assert_eq!(query_files(vec![], &record, &root), Vec::<String>::new());
        // Bounded.
        let many: Vec<String> = (0..60).map(|i| format!("f{i}.py")).collect();
        record.baseline[0].accepted = false;
        assert_eq!(query_files(many, &record, &root).len(), QUERY_FILES);
    }
}
