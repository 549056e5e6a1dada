//! The vocabulary a remembered command is told in: hone's own words (the tools, their
//! subcommands, flags, variables and values: `words`), the job's own commands (setup and checks,
//! as configured) and their words, and the paths the repository had at the commit hone trusts.
//! A command is remembered as those of its words that are in it, each other word `…`: no word
//! the model (or the issue that steered it) chose reaches the next run.

use super::words;
use crate::record::RunRecord;
use std::collections::BTreeSet;

/// What stands for the words of a command that are not remembered (several in a row: one).
pub const ELIDED: &str = "…";

/// The words a run's remembered commands may hold.
pub struct Vocabulary<'a> {
    /// The job's own commands, as configured: remembered as they are.
    commands: BTreeSet<String>,
    /// Their programs, and all their words.
    programs: BTreeSet<String>,
    words: BTreeSet<String>,
    /// Whether the repository had this path (file or directory, relative to its root) at the
    /// commit hone trusts: the base, or in autofix the commit hone was started on.
    tracked: Box<dyn Fn(&str) -> bool + 'a>,
}

impl<'a> Vocabulary<'a> {
    /// The vocabulary of a run: its job's setup and check commands (from the record) and the
    /// paths `tracked` says the repository had.
    pub fn of(record: &RunRecord, tracked: impl Fn(&str) -> bool + 'a) -> Vocabulary<'a> {
        let all = record.setup.iter().chain(&record.baseline).chain(&record.verify);
        Vocabulary::new(all.map(|c| c.command.clone()), tracked)
    }

    /// The vocabulary of a job with these commands.
    pub fn new(commands: impl IntoIterator<Item = String>, tracked: impl Fn(&str) -> bool + 'a) -> Vocabulary<'a> {
        let commands: BTreeSet<String> = commands.into_iter().map(|c| c.trim().to_string()).collect();
        let split = |c: &String| c.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let programs = commands
            .iter()
            .filter_map(|c| super::observe::program(&c.split_whitespace().collect::<Vec<_>>()).map(str::to_string))
            .collect();
        let words = commands.iter().flat_map(split).collect();
        Vocabulary { commands, programs, words, tracked: Box::new(tracked) }
    }

    /// Whether `command` is one of the job's own.
    pub fn is_jobs_command(&self, command: &str) -> bool {
        self.commands.contains(command.trim())
    }

    /// Whether the repository had `path` (relative to its root, as git names it).
    pub fn tracks(&self, path: &str) -> bool {
        !path.is_empty() && (self.tracked)(path)
    }

    /// Whether `word` may be a remembered command's program: a known tool, a program of the
    /// job's commands, or a script the repository had (`./scripts/test.sh`).
    fn is_program(&self, word: &str) -> bool {
        words::is_tool(word) || self.programs.contains(word) || self.path(word, None).is_some()
    }

    /// `word` as a path the repository had, relative to its root or to `dir` (a leading `cd`):
    /// its components (no `..`, not absolute), with its leading `./` and trailing `/`.
    fn path(&self, word: &str, dir: Option<&str>) -> Option<String> {
        let (dot, rest) = match word.strip_prefix("./") {
            Some(r) => ("./", r),
            None => ("", word),
        };
        let (rest, slash) = match rest.strip_suffix('/') {
            Some(r) => (r, "/"),
            None => (rest, ""),
        };
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
            return None;
        }
        let found = self.tracks(rest) || dir.is_some_and(|d| self.tracks(&format!("{d}/{rest}")));
        found.then(|| format!("{dot}{rest}{slash}"))
    }

    /// A word of the vocabulary (a value, a target, a path), as remembered, or `None`.
    fn value(&self, word: &str, dir: Option<&str>) -> Option<String> {
        if words::is_word(word) || self.words.contains(word) {
            return Some(word.to_string());
        }
        if let Some(p) = self.path(word, dir) {
            return Some(p);
        }
        // A test in a file (`tests/test_x.py::test_a`): the file, not the test's name.
        let (file, _) = word.split_once("::")?;
        self.path(file, dir).map(|p| format!("{p}::{ELIDED}"))
    }

    /// A flag as remembered: a known one (a value after `=` on its own), or `None`.
    fn flag(&self, word: &str, dir: Option<&str>) -> Option<String> {
        if self.words.contains(word) {
            return Some(word.to_string());
        }
        let (name, value) = match word.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (word, None),
        };
        if !words::is_flag(name) {
            return None;
        }
        Some(match value {
            None => name.to_string(),
            Some(v) => format!("{name}={}", self.value(v, dir).unwrap_or_else(|| ELIDED.into())),
        })
    }

    /// The command of `words` (its program at `start`, after `VAR=value` words and a leading
    /// `cd DIR &&`) told in this vocabulary; `None` when its program is not one (then nothing of
    /// it is remembered).
    pub fn describe(&self, w: &[&str], start: usize) -> Option<String> {
        let program = w[start];
        if !self.is_program(program) {
            return None;
        }
        let mut out: Vec<String> = Vec::new();
        let mut dir: Option<String> = None;
        let mut i = 0;
        while i < start {
            if w[i] == "cd" && w.get(i + 2) == Some(&"&&") {
                let d = self.path(w[i + 1], None);
                dir = d.as_deref().map(|d| d.trim_start_matches("./").trim_end_matches('/').to_string());
                out.extend(["cd".to_string(), d.unwrap_or_else(|| ELIDED.into()), "&&".to_string()]);
                i += 3;
                continue;
            }
            out.push(self.assignment(w[i], dir.as_deref()).unwrap_or_else(|| ELIDED.into()));
            i += 1;
        }
        out.push(program.to_string());
        let dir = dir.as_deref();
        for (n, word) in w[start + 1..].iter().enumerate() {
            let kept = if n == 0 && words::is_subcommand(program, word) {
                Some(word.to_string())
            } else if word.starts_with('-') {
                self.flag(word, dir)
            } else {
                self.value(word, dir)
            };
            out.push(kept.unwrap_or_else(|| ELIDED.into()));
        }
        out.dedup_by(|a, b| a == ELIDED && b == ELIDED);
        Some(out.join(" "))
    }

    /// `VAR=value` as remembered: a known variable, its value from the vocabulary or `…`.
    fn assignment(&self, word: &str, dir: Option<&str>) -> Option<String> {
        let (name, value) = word.split_once('=')?;
        if !words::is_variable(name) {
            return None;
        }
        let value = if value.is_empty() { Some(String::new()) } else { self.value(value, dir) };
        Some(format!("{name}={}", value.unwrap_or_else(|| ELIDED.into())))
    }
}
