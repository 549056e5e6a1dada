//! Mining a repository's history for tasks, first stage: the commits that change source and
//! tests together (the candidates), and why every other commit was left out. Which of a
//! candidate's tests fail without its source change and pass with it is found by running them
//! (the next stage, in the jail); nothing here runs anything. A merge is taken as the whole of
//! what it merged (its diff against its first parent): a merged pull request.

use super::classify::{Kind, kind};
use git2::{Oid, Repository, Sort};

/// Which commits to look at.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Only commits whose source change touches one of these (globs over repository paths).
    pub paths: Option<globset::GlobSet>,
    /// Only commits made at or after / before this time (seconds since the epoch).
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// Only changes of at most this many lines (added and removed); 0: any size.
    pub max_lines: usize,
    /// Stop after this many candidates; 0: no limit.
    pub count: usize,
}

/// A commit that changes source and tests together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub commit: Oid,
    /// Where the task starts: the commit's (first) parent.
    pub parent: Oid,
    /// The task text: the commit's message (a merge's: what its first line introduces, the
    /// pull request's title and body).
    pub message: String,
    /// The test files it changes: held out of the task, applied only for grading.
    pub tests: Vec<String>,
    /// The source files it changes: the fix.
    pub sources: Vec<String>,
    /// The other files it changes (data, configuration, docs): part of the fix, as SWE-bench's
    /// gold patch is everything but the tests.
    pub others: Vec<String>,
    /// Lines added and removed.
    pub lines: usize,
}

/// Why a commit is not a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The first commit: there is nothing to start from.
    Root,
    /// It changes neither source nor tests (docs, configuration).
    NoCode,
    /// It changes source but no test: nothing could tell a fix from a break.
    NoTests,
    /// It changes tests only: there is no fix to ask for.
    NoSource,
    /// Its change is larger than `max_lines` (the count).
    TooLarge(usize),
    /// Its source change touches none of the paths asked for.
    OutsidePaths,
    /// It was made outside the dates asked for.
    OutsideDates,
}

impl Why {
    /// The reason in words, for the mining report.
    pub fn words(self) -> String {
        match self {
            Why::Root => "the first commit: nothing to start from".into(),
            Why::NoCode => "changes neither source nor tests".into(),
            Why::NoTests => "changes source but no test".into(),
            Why::NoSource => "changes tests only".into(),
            Why::TooLarge(n) => format!("changes {n} lines, more than asked for"),
            Why::OutsidePaths => "its source change is outside the paths asked for".into(),
            Why::OutsideDates => "made outside the dates asked for".into(),
        }
    }
}

/// A commit left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub commit: Oid,
    pub why: Why,
}

/// What mining found: the candidates, newest first, and every other commit it looked at.
#[derive(Debug, Default)]
pub struct Mined {
    pub candidates: Vec<Candidate>,
    pub skipped: Vec<Skipped>,
}

/// The candidates among the commits reachable from `from` by first parents, newest first.
pub fn candidates(repo: &Repository, from: Oid, f: &Filters) -> Result<Mined, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.simplify_first_parent()?;
    walk.push(from)?;
    let mut mined = Mined::default();
    for oid in walk {
        if f.count > 0 && mined.candidates.len() >= f.count {
            break;
        }
        let commit = repo.find_commit(oid?)?;
        match judge(repo, &commit, f)? {
            Ok(c) => mined.candidates.push(c),
            Err(why) => mined.skipped.push(Skipped { commit: commit.id(), why }),
        }
    }
    Ok(mined)
}

/// One commit: a candidate, or why not.
fn judge(repo: &Repository, commit: &git2::Commit<'_>, f: &Filters) -> Result<Result<Candidate, Why>, git2::Error> {
    let Ok(parent) = commit.parent(0) else { return Ok(Err(Why::Root)) };
    let when = commit.time().seconds();
    if f.since.is_some_and(|s| when < s) || f.until.is_some_and(|u| when >= u) {
        return Ok(Err(Why::OutsideDates));
    }
    let diff = repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), None)?;
    let (mut tests, mut sources, mut others) = (Vec::new(), Vec::new(), Vec::new());
    for d in diff.deltas() {
        let Some(path) = d.new_file().path().or_else(|| d.old_file().path()) else { continue };
        let path = path.to_string_lossy().into_owned();
        match kind(&path) {
            Kind::Test => tests.push(path),
            Kind::Source => sources.push(path),
            Kind::Other => others.push(path),
        }
    }
    let why = match (tests.is_empty(), sources.is_empty()) {
        (true, true) => Some(Why::NoCode),
        (true, false) => Some(Why::NoTests),
        (false, true) => Some(Why::NoSource),
        (false, false) => None,
    };
    if let Some(why) = why {
        return Ok(Err(why));
    }
    if f.paths.as_ref().is_some_and(|p| !sources.iter().any(|s| p.is_match(s))) {
        return Ok(Err(Why::OutsidePaths));
    }
    let stats = diff.stats()?;
    let lines = stats.insertions() + stats.deletions();
    if f.max_lines > 0 && lines > f.max_lines {
        return Ok(Err(Why::TooLarge(lines)));
    }
    let message = task_text(&String::from_utf8_lossy(commit.message_bytes()), commit.parent_count() > 1);
    Ok(Ok(Candidate { commit: commit.id(), parent: parent.id(), message, tests, sources, others, lines }))
}

/// What a commit's message asks: the whole message; for a merge whose first line is a forge's
/// `Merge pull request #12 from …` or `Merge branch 'x' into 'main'`, what follows it (the pull
/// request's title and body), when there is any.
pub fn task_text(message: &str, merge: bool) -> String {
    let message = message.trim();
    if merge && let Some((first, rest)) = message.split_once('\n') {
        let rest = rest.trim();
        if first.starts_with("Merge ") && !rest.is_empty() {
            return rest.to_string();
        }
    }
    message.to_string()
}

#[cfg(test)]
#[path = "mine_tests.rs"]
mod tests;
