//! `hone eval mine`: the repository's history mined for tasks, written as SWE-bench's JSON
//! Lines (`tasks.jsonl`), and why every other commit was left out (`tasks.dropped.jsonl`).
//! The job spec gives the check that runs the tests (with its JUnit report) and the policy its
//! jail is built from.

use super::grade::Graded;
use super::mine::{Candidate, Filters, candidates};
use super::task::Task;
use super::validate::Tester;
use crate::error::{Code, HoneError};
use std::path::{Path, PathBuf};

/// What `hone eval mine` was asked.
pub struct Asked {
    pub job: PathBuf,
    pub repo: Option<PathBuf>,
    pub filters: Filters,
    pub out: PathBuf,
    pub env: std::sync::Arc<crate::env::RunEnv>,
    pub cancel: tokio_util::sync::CancellationToken,
    /// Take a task's text from the issue its fix closes (`Fixes #12`), read from the forge.
    pub issues: bool,
}

/// What mining found: tasks written, commits left out; and how long it took, and how much of
/// that the setup and test commands themselves took.
pub struct Found {
    pub tasks: usize,
    pub dropped: usize,
    pub total_ms: u64,
    pub commands_ms: u64,
    /// Stopped by a cancel: what was judged before it is written, the rest is not.
    pub cancelled: bool,
}

/// Mine, validate and write.
pub async fn mine(a: Asked) -> Result<Found, HoneError> {
    let started = std::time::Instant::now();
    let job = crate::spec::load(&a.job)?;
    let policy = crate::run::intake::load_policy(&job)?;
    let check = job.verify.iter().find(|v| v.junit.is_some()).cloned().ok_or_else(|| {
        HoneError::new(Code::Spec, "`hone eval mine` needs a check with `junit:` in the job's `verify`")
            .hint("give the check that runs the tests `junit: PATH`, the JUnit XML file they write")
    })?;
    let src = crate::run::intake::locate::repo_root(&job, a.repo.clone())?;
    let repo = git2::Repository::open(&src)?;
    let head = repo.head()?.peel_to_commit()?.id();
    let mined = candidates(&repo, head, &a.filters)?;
    let scratch = tempfile::Builder::new()
        .prefix("hone-eval-")
        .tempdir()
        .map_err(|e| HoneError::new(Code::Io, format!("cannot make a scratch dir: {e}")))?;
    let tester = super::jailed::Jailed {
        check,
        policy,
        env: a.env.clone(),
        cancel: a.cancel.clone(),
        report_dir: scratch.path().join("reports"),
        setup: job.setup.clone(),
        spent_ms: Default::default(),
    };
    let mut w = Written::new(&src, mined.skipped.iter().map(|k| line(k.commit, &k.why.words())).collect())?;
    if a.issues {
        w.place = Some(super::issues::place(&repo, &job, &a.env));
    }
    let cancelled = judge_all(&a, &src, &mined.candidates, scratch.path(), &tester, &mut w).await?;
    write(&a.out, &w.tasks)?;
    write(&a.out.with_extension("dropped.jsonl"), &w.dropped)?;
    Ok(Found {
        tasks: w.ids.len(),
        dropped: w.dropped.lines().count(),
        total_ms: started.elapsed().as_millis() as u64,
        commands_ms: tester.spent_ms.load(std::sync::atomic::Ordering::Relaxed),
        cancelled,
    })
}

/// What mining writes, as it goes: the tasks' lines and the left-out commits' lines.
struct Written {
    repo: git2::Repository,
    src: PathBuf,
    /// The repository's name, plain (what `hone eval run` reads back).
    name: String,
    ids: Vec<String>,
    tasks: String,
    dropped: String,
    /// Where the repository's issues are read (`--issues`).
    place: Option<crate::forge::place::Place>,
}

impl Written {
    fn new(src: &Path, dropped: String) -> Result<Written, HoneError> {
        let plain = |n: &std::ffi::OsStr| -> String {
            let n = n.to_string_lossy();
            n.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).take(100).collect()
        };
        let name = src.file_name().map(plain).unwrap_or_else(|| "repo".into());
        let repo = git2::Repository::open(src)?;
        let (ids, tasks, place) = (Vec::new(), String::new(), None);
        Ok(Written { repo, src: src.to_path_buf(), name, ids, tasks, dropped, place })
    }

    fn drop(&mut self, commit: git2::Oid, why: &str) {
        self.dropped.push_str(&line(commit, why));
    }

    /// `c` as a task. Its id is never the fix's (an agent that sees its task's name must learn
    /// nothing of the answer from it): the start's, and a count when two tasks start there.
    fn task(&mut self, c: &Candidate, g: Graded, text: Option<String>) -> Result<(), HoneError> {
        let mut id = format!("{}-{}", self.name, &c.parent.to_string()[..12]);
        let n = self.ids.iter().filter(|i| i.starts_with(&id)).count();
        if n > 0 {
            id = format!("{id}-{}", n + 1);
        }
        self.ids.push(id.clone());
        let mut t = task(&self.repo, &self.src, id, c, g)?;
        if let Some(text) = text {
            t.problem_statement = text;
        }
        self.tasks.push_str(&serde_json::to_string(&t).unwrap_or_default());
        self.tasks.push('\n');
        Ok(())
    }
}

/// Every candidate's runs, judged, into `w`; whether a cancel stopped it. The next candidate's
/// tree is made and opened while this one's tests run; each is removed once judged. A candidate
/// whose tree cannot be set up or whose tests cannot be judged (they hang, their report is not
/// JUnit) is left out saying so, and mining goes on.
async fn judge_all(
    a: &Asked,
    src: &Path,
    candidates: &[Candidate],
    scratch: &Path,
    tester: &super::jailed::Jailed,
    w: &mut Written,
) -> Result<bool, HoneError> {
    let ready = |c: &Candidate| {
        let (src, c, scratch) = (src.to_path_buf(), c.clone(), scratch.to_path_buf());
        async move {
            let tests = c.tests.clone();
            let made = tokio::task::spawn_blocking(move || super::validate::prepare(&src, &c, &scratch)).await;
            let root = made.map_err(|e| HoneError::new(Code::Io, format!("a task's tree: {e}")))??;
            let opened = tester.open(&root, &tests).await?;
            Ok::<_, HoneError>((root, opened))
        }
    };
    let next = |i: usize| async move {
        match candidates.get(i) {
            Some(n) => Some(ready(n).await),
            None => None,
        }
    };
    let mut pending = next(0).await;
    for (i, c) in candidates.iter().enumerate() {
        let Some(now) = pending.take() else { break };
        let stopped = |e: &HoneError| e.code == Code::Cancelled || a.cancel.is_cancelled();
        let (root, opened) = match now {
            Ok(ready) => ready,
            Err(e) if stopped(&e) => return Ok(true),
            Err(e) => {
                let _ = crate::safe_fs::remove_beneath(scratch, c.commit.to_string());
                w.drop(c.commit, &format!("its tree could not be set up: {}", e.message));
                pending = next(i + 1).await;
                continue;
            }
        };
        if a.cancel.is_cancelled() {
            return Ok(true);
        }
        let (judged, upcoming) = tokio::join!(super::validate::runs(src, c, &root, &opened, tester), next(i + 1));
        pending = upcoming;
        drop(opened);
        crate::safe_fs::remove_beneath(scratch, c.commit.to_string())
            .map_err(|e| HoneError::new(Code::Io, format!("cannot remove {}: {e}", root.display())))?;
        match judged {
            Err(e) if stopped(&e) => return Ok(true),
            Err(e) => w.drop(c.commit, &format!("its tests could not be judged: {}", e.message)),
            Ok(Err(d)) => w.drop(c.commit, &d.words()),
            Ok(Ok(g)) => {
                let text = match &w.place {
                    Some(p) => super::issues::text(p, &c.message, &a.cancel).await,
                    None => None,
                };
                w.task(c, g, text)?
            }
        }
    }
    Ok(false)
}

/// A left-out commit's line.
fn line(commit: git2::Oid, why: &str) -> String {
    format!("{}\n", serde_json::json!({ "commit": commit.to_string(), "why": why }))
}

/// The task a candidate became: it starts at the parent, asks what the message says, and is
/// graded by its test change (the patch of its test files alone).
fn task(repo: &git2::Repository, src: &Path, instance_id: String, c: &Candidate, g: Graded) -> Result<Task, HoneError> {
    let (old, new) = (repo.find_commit(c.parent)?.tree()?, repo.find_commit(c.commit)?.tree()?);
    let mut opts = git2::DiffOptions::new();
    for t in &c.tests {
        opts.pathspec(t);
    }
    opts.disable_pathspec_match(true);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut patch = Vec::new();
    diff.print(git2::DiffFormat::Patch, |_, _, l| {
        if matches!(l.origin(), '+' | '-' | ' ') {
            patch.push(l.origin() as u8);
        }
        patch.extend_from_slice(l.content());
        true
    })?;
    Ok(Task {
        instance_id,
        repo: src.display().to_string(),
        base_commit: c.parent.to_string(),
        problem_statement: c.message.clone(),
        test_patch: String::from_utf8_lossy(&patch).into_owned(),
        fail_to_pass: g.fail_to_pass,
        pass_to_pass: g.pass_to_pass,
        test_cmd: None,
    })
}

fn write(path: &Path, text: &str) -> Result<(), HoneError> {
    std::fs::write(path, text).map_err(|e| HoneError::new(Code::Io, format!("cannot write {}: {e}", path.display())))
}
