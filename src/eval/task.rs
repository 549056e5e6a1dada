//! An evaluation task, and a file of them in SWE-bench's format (JSON Lines with `instance_id`,
//! `repo`, `base_commit`, `problem_statement`, `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`; other
//! keys, which SWE-bench's files carry many of, are ignored). Mined tasks are written in the same
//! format, so one reader serves both. The file is data from elsewhere: bounded, and every line
//! that is not a task says where and why.

use crate::error::{Code, HoneError};
use serde::{Deserialize, Deserializer, Serialize};

/// The largest task file read, and the largest line in it.
pub const MAX_FILE: usize = 256 << 20;
pub const MAX_LINE: usize = 16 << 20;

/// One task: where it starts, what it asks, and how it is graded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// A name of letters, digits, `_`, `-`, `.` and `/`… as SWE-bench's (`owner__repo-1234`).
    pub instance_id: String,
    /// The repository: a local path or a URL.
    pub repo: String,
    /// The commit the task starts from (40 or 64 hex digits).
    pub base_commit: String,
    /// What the agent is asked.
    pub problem_statement: String,
    /// The held-out test change, as a patch: applied only after the try ends, for grading.
    pub test_patch: String,
    /// Tests that fail at the start and must pass after the agent's change.
    #[serde(rename = "FAIL_TO_PASS", deserialize_with = "test_list")]
    pub fail_to_pass: Vec<String>,
    /// Tests that pass at the start and must still pass.
    #[serde(rename = "PASS_TO_PASS", deserialize_with = "test_list", default)]
    pub pass_to_pass: Vec<String>,
    /// hone's own key: the command that runs this task's tests, in place of the job's (and the
    /// repositories file's); it may name `{test_files}` or `{test_dirs}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_cmd: Option<String>,
}

/// A list of test ids, as a JSON array or, as SWE-bench's published files have it, a string
/// holding one.
fn test_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        List(Vec<String>),
        Text(String),
    }
    match Given::deserialize(d)? {
        Given::List(l) => Ok(l),
        Given::Text(t) => serde_json::from_str(&t).map_err(|e| {
            serde::de::Error::custom(format!("a string of test ids must hold a JSON array of strings ({e})"))
        }),
    }
}

impl Task {
    /// What is wrong with a task that parsed, if anything.
    fn problem(&self) -> Option<String> {
        let id_ok = !self.instance_id.is_empty()
            && self.instance_id.len() <= 200
            && self.instance_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b))
            && !self.instance_id.split('/').any(|p| p.is_empty() || p == "." || p == "..");
        let hex = matches!(self.base_commit.len(), 40 | 64) && self.base_commit.bytes().all(|b| b.is_ascii_hexdigit());
        if !id_ok {
            Some(format!("`instance_id` {:?} is not a plain name (letters, digits, `_-./`)", self.instance_id))
        } else if !hex {
            Some(format!("`base_commit` {:?} is not a commit id (40 or 64 hex digits)", self.base_commit))
        } else if self.fail_to_pass.is_empty() {
            Some("`FAIL_TO_PASS` is empty: nothing would tell a fix from no fix".into())
        } else if self.test_patch.trim().is_empty() {
            Some("`test_patch` is empty: there is nothing to grade with".into())
        } else {
            None
        }
    }
}

/// The tasks in `text` (the file `shown`), in order; every bad line is an error with its number.
pub fn read(shown: &str, text: &str) -> Result<Vec<Task>, HoneError> {
    if text.len() > MAX_FILE {
        return Err(HoneError::new(Code::Spec, format!("{shown}: larger than {MAX_FILE} bytes")));
    }
    let mut tasks: Vec<Task> = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = format!("{shown}:{}", i + 1);
        if line.len() > MAX_LINE {
            problems.push(format!("{at}: a line longer than {MAX_LINE} bytes"));
            continue;
        }
        match serde_json::from_str::<Task>(line) {
            Err(e) => problems.push(format!("{at}: not a task: {e}")),
            Ok(t) => match t.problem() {
                Some(p) => problems.push(format!("{at}: {p}")),
                None if tasks.iter().any(|o| o.instance_id == t.instance_id) => {
                    problems.push(format!("{at}: `instance_id` {:?} is given twice", t.instance_id))
                }
                None => tasks.push(t),
            },
        }
    }
    if !problems.is_empty() {
        let shown_problems: Vec<String> = problems.iter().take(20).cloned().collect();
        return Err(HoneError::new(Code::Spec, shown_problems.join("\n"))
            .hint("each line is one task in SWE-bench's format: instance_id, repo, base_commit, problem_statement, test_patch, FAIL_TO_PASS, PASS_TO_PASS"));
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn line(extra: &str) -> String {
        format!(
            r#"{{"instance_id":"acme__calc-1","repo":"/src/calc","base_commit":"{SHA}","problem_statement":"add subtracts","test_patch":"--- a/t\n+++ b/t\n","FAIL_TO_PASS":"[\"tests/test_calc.py::test_add\"]","PASS_TO_PASS":["tests/test_calc.py::test_mul"],"version":"1.0","hints_text":""{extra}}}"#
        )
    }

    #[test]
    fn swe_bench_s_lines_are_read_with_their_lists_as_strings_or_arrays() {
        let tasks = read("tasks.jsonl", &format!("{}\n\n", line(""))).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].fail_to_pass, ["tests/test_calc.py::test_add"]);
        assert_eq!(tasks[0].pass_to_pass, ["tests/test_calc.py::test_mul"]);
        // Written back and read again, a task is the same (mined tasks use this format too).
        let again = read("t", &serde_json::to_string(&tasks[0]).unwrap()).unwrap();
        assert_eq!(again, tasks);
    }

    #[test]
    fn every_bad_line_is_named_with_its_number_and_why() {
        let bad_sha = line("").replace(SHA, "main");
        let twice = format!("{}\n{}", line(""), line(""));
        let cases = [
            (bad_sha, "tasks.jsonl:1: `base_commit` \"main\" is not a commit id"),
            (line("").replace("acme__calc-1", "../etc"), "is not a plain name"),
            (line("").replace(r#""[\"tests/test_calc.py::test_add\"]""#, r#""[]""#), "`FAIL_TO_PASS` is empty"),
            (line("").replace(r#""[\"tests/test_calc.py::test_add\"]""#, r#""not json""#), "must hold a JSON array"),
            (twice, "tasks.jsonl:2: `instance_id` \"acme__calc-1\" is given twice"),
            ("{".into(), "tasks.jsonl:1: not a task"),
        ];
        for (text, says) in cases {
            let e = read("tasks.jsonl", &text).unwrap_err();
            assert!(e.message.contains(says), "{says}: {}", e.message);
            assert_eq!(e.code, Code::Spec);
        }
    }
}
