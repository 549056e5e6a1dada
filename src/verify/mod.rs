//! Runs the job's verify commands (the repo's own lint, test and build), judges them against the
//! baseline taken before any change, and turns failures into a compact message for the model:
//! the failing command, new failing tests by name, and the lines that matter.

pub mod junit_in;
pub mod verdict;

pub use verdict::{Facts, Style, Verdict};

use crate::error::{Code, HoneError};
use crate::sandbox::Sandbox;
use crate::spec::{Expect, VerifySpec};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Output kept per check in reports and sent to the model.
pub const OUTPUT_CAP: usize = 64 * 1024;
const TAIL_LINES: usize = 40;
const FEEDBACK_CHARS: usize = 8000;

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CheckResult {
    /// 0 for the baseline, then 1, 2, … per verification round.
    pub attempt: u32,
    pub name: String,
    pub command: String,
    pub expect: Expect,
    /// The command succeeded (exit 0, no timeout).
    pub passed: bool,
    /// The check meets its expectation (`pass`, or `no-regression` against the baseline).
    pub accepted: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration_ms: u64,
    /// When it started, in milliseconds since the run started (for the timeline in `summary.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// Failing test cases read from the check's JUnit file, when it has one (as shown: at
    /// most 1,000, each cut at 300 characters).
    pub failing_tests: Option<Vec<String>>,
    /// All of them, for judging against the baseline (`failing_tests` is only what is shown).
    #[serde(skip)]
    pub failing: Option<std::sync::Arc<junit_in::Failing>>,
    /// The check has `junit:` but its file was missing or unreadable: never accepted.
    pub junit_error: Option<String>,
    /// Failing now but not at the baseline.
    pub new_failures: Vec<String>,
    /// The last lines of the output.
    pub output_tail: String,
    /// Lines that look like errors (from anywhere in the output), for the model.
    #[serde(skip)]
    pub key_lines: Vec<String>,
}

/// Run one check. The timeout is the check's own, cut short by the run's deadline.
pub async fn run_check(
    check: &VerifySpec,
    attempt: u32,
    cwd: &Path,
    env: &[(String, String)],
    deadline: Instant,
    cancel: &CancellationToken,
    sandbox: &Sandbox,
) -> CheckResult {
    let junit_path = check.junit.as_ref().map(|j| cwd.join(j));
    if let Some(j) = &check.junit {
        // A stale report from an earlier run must not count. Nothing is followed to remove it.
        let rel = Path::new(j);
        let (dir, name) = (rel.parent().unwrap_or(Path::new("")), rel.file_name());
        if let (Ok(d), Some(n)) = (crate::safe_fs::open_existing_dir_below(cwd, dir), name) {
            let _ = crate::safe_fs::remove_at(&d, &n.to_string_lossy());
        }
    }
    let timeout = check.timeout.min(deadline.saturating_duration_since(Instant::now()));
    let res = crate::exec::run(&check.run, cwd, env, timeout, OUTPUT_CAP, cancel, sandbox).await;
    let (passed, exit_code, timed_out, cancelled, duration, output) = match res {
        Ok(o) => (o.success(), o.exit_code, o.timed_out, o.cancelled, o.duration, o.output),
        Err(e) => (false, None, false, false, Duration::ZERO, format!("could not start the command: {e}")),
    };
    let mut output_tail = tail_lines(&output, TAIL_LINES);
    if timed_out {
        output_tail
            .push_str(&format!("\n[hone: timed out after {} and was killed]", crate::spec::duration::format(timeout)));
    }
    let (failing, junit_error) = match junit_path.as_ref().map(|p| read_junit(p, cwd)) {
        None => (None, None),
        Some(Ok(cases)) => (Some(std::sync::Arc::new(cases)), None),
        Some(Err(e)) => {
            output_tail.push_str(&format!("\n[hone: {e}]"));
            (None, Some(e.to_string()))
        }
    };
    let failing_tests = failing.as_ref().map(|f| f.shown.clone());
    CheckResult {
        attempt,
        name: check.name.clone(),
        command: check.run.clone(),
        expect: check.expect,
        passed,
        accepted: passed && junit_error.is_none(),
        exit_code,
        timed_out,
        cancelled,
        duration_ms: duration.as_millis() as u64,
        started_ms: None,
        failing_tests,
        failing,
        junit_error,
        new_failures: vec![],
        output_tail,
        key_lines: key_lines(&output),
    }
}

/// Why a check's JUnit file says nothing: the check cannot be judged (`E_CHECK`).
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    /// No regular file at `path` (relative to the repo) could be read, through no symlink.
    #[error("the check wrote no JUnit file at {}", path.display())]
    Missing { path: PathBuf, source: std::io::Error },
    #[error("the JUnit file {} is {error}", path.display())]
    Invalid { path: PathBuf, error: junit_in::InvalidXml },
}

impl JunitError {
    pub fn code(&self) -> Code {
        Code::Check
    }
}

impl From<JunitError> for HoneError {
    fn from(e: JunitError) -> Self {
        HoneError::new(e.code(), e.to_string())
    }
}

/// Read the check's JUnit file: only a regular file inside the repo, never through a symlink.
fn read_junit(path: &Path, root: &Path) -> Result<junit_in::Failing, JunitError> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let (dir, name) =
        (rel.parent().unwrap_or(Path::new("")), rel.file_name().map(|n| n.to_string_lossy().into_owned()));
    let bytes = name.ok_or_else(|| std::io::Error::other("no file name")).and_then(|n| {
        crate::safe_fs::open_existing_dir_below(root, dir)
            .and_then(|d| crate::safe_fs::read_regular_at(&d, &n, 64 << 20))
    });
    let path = rel.to_path_buf();
    match bytes {
        Ok(b) => {
            junit_in::failing_cases(&String::from_utf8_lossy(&b)).map_err(|error| JunitError::Invalid { path, error })
        }
        Err(source) => Err(JunitError::Missing { path, source }),
    }
}

/// Judge `r` against its expectation and the baseline result of the same check.
pub fn judge(r: &mut CheckResult, baseline: Option<&CheckResult>) {
    if let (Some(now), Some(before)) = (&r.failing, baseline.and_then(|b| b.failing.as_ref())) {
        r.new_failures = now.new_since(before);
    } else if let (Some(now), Some(before)) = (&r.failing_tests, baseline.and_then(|b| b.failing_tests.as_ref())) {
        r.new_failures = now.iter().filter(|t| !before.contains(t)).cloned().collect();
    }
    r.accepted = match (r.expect, baseline) {
        // A check whose test report is missing proved nothing.
        _ if r.junit_error.is_some() => false,
        _ if r.passed => true,
        _ if r.timed_out || r.cancelled => false,
        (Expect::Pass, _) | (Expect::NoRegression, None) => false,
        (Expect::NoRegression, Some(b)) => match (&r.failing_tests, &b.failing_tests) {
            (Some(_), Some(_)) => r.new_failures.is_empty(),
            // Without test-case detail, "no worse" can only mean the baseline failed too.
            _ => !b.passed,
        },
    };
}

/// Why a baseline check cannot run at all (and so can judge nothing): not found or not
/// executable (exit 127 or 126), a Python module that is not installed, or a `junit:` file it
/// never wrote. Such a check stops the run before the model is asked anything. When hone's own
/// jail could not start it, that is said instead (with the code `E_POLICY`): the check is fine.
pub fn unrunnable(baseline: &[CheckResult]) -> Option<(crate::error::Code, String)> {
    if let Some(line) = baseline.iter().flat_map(|r| r.output_tail.lines()).find(|l| l.starts_with("hone: jail: ")) {
        return Some((
            crate::error::Code::Policy,
            format!(
                "hone's jail could not start the checks: {}\n  = help: {}; or set `sandbox: off` in the policy to run commands unconfined on purpose",
                line.trim_start_matches("hone: jail: "),
                crate::sandbox::remedy()
            ),
        ));
    }
    let why = |r: &CheckResult| -> Option<String> {
        if let Some(c @ (126 | 127)) = r.exit_code {
            let what = if c == 127 { "a command in it was not found" } else { "a command in it is not executable" };
            return Some(format!("`{}` exited with {c} ({what})", r.command));
        }
        if let Some(m) = missing_python_module(&r.command, &r.output_tail) {
            return Some(format!(
                "`{}` needs the Python module `{m}`, which is not installed (No module named {m})",
                r.command
            ));
        }
        r.junit_error.as_ref().map(|e| format!("`{}`: {e}", r.command))
    };
    let bad: Vec<String> = baseline
        .iter()
        .filter_map(|r| {
            why(r).map(|w| {
                format!(
                    "the check `{}` cannot run: {w}\nLast lines of its output:\n{}",
                    r.name,
                    tail_lines(&r.output_tail, 10)
                )
            })
        })
        .collect();
    let junit = baseline.iter().any(|r| r.junit_error.is_some() && !matches!(r.exit_code, Some(126 | 127)));
    let help = if junit {
        "fix the command or the `junit:` path in the spec's `verify`; if the code does not build yet, so the tests cannot write their report, drop `junit:` from this check for this job"
    } else {
        "fix the command in the spec's `verify`, or install what it needs before hone runs (for example in an earlier workflow step)"
    };
    (!bad.is_empty()).then(|| (crate::error::Code::Check, format!("{}\n  = help: {help}", bad.join("\n"))))
}

/// `python -m MOD ...` whose output says the module is missing.
fn missing_python_module(command: &str, output: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "-m")?;
    let interpreter = words[..i].last()?;
    if !interpreter.rsplit('/').next()?.starts_with("python") {
        return None;
    }
    let module = words.get(i + 1)?.to_string();
    let top = module.split('.').next().unwrap_or(&module);
    [format!("No module named {module}"), format!("No module named {top}"), format!("No module named '{top}'")]
        .iter()
        .any(|needle| output.contains(needle.as_str()))
        .then_some(module)
}

/// The checks that are not accepted, with their new failures: `` `tests` (new failures: a, b) ``.
pub fn failure_summary(results: &[CheckResult]) -> String {
    let parts: Vec<String> = results
        .iter()
        .filter(|r| !r.accepted)
        .map(|r| {
            let how = if let Some(e) = &r.junit_error {
                e.clone()
            } else if r.timed_out {
                "timed out".into()
            } else if !r.new_failures.is_empty() {
                format!("new failures: {}", r.new_failures.join(", "))
            } else {
                r.exit_code.map_or("killed".into(), |c| format!("exit {c}"))
            };
            format!("`{}` ({how})", r.name)
        })
        .collect();
    if parts.is_empty() { "no check failed".into() } else { parts.join(", ") }
}

pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Lines that usually carry the cause: errors, failed assertions, tracebacks, file:line refs.
fn key_lines(text: &str) -> Vec<String> {
    const MARKERS: &[&str] =
        &["error", "fail", "assert", "traceback", "panicked", "exception", "expected", "warning:", "E   "];
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let low = line.to_lowercase();
        if MARKERS.iter().any(|m| low.contains(&m.to_lowercase())) {
            // Compared as kept: a long line that repeats is kept once.
            let kept: String = line.chars().take(300).collect();
            if !out.contains(&kept) {
                out.push(kept);
            }
        }
        if out.len() >= 30 {
            break;
        }
    }
    out
}

/// The user turn sent to the model after a failed verification.
pub fn feedback(results: &[CheckResult], attempt: u32, max: u32) -> String {
    let mut msg = format!(
        "hone ran the verify commands and some did not meet their expectation (fix attempt {attempt} of {max}). Fix the cause, then stop calling tools when done; hone will verify again.\n"
    );
    for r in results.iter().filter(|r| !r.accepted) {
        let how = if r.timed_out {
            "timed out".to_string()
        } else {
            r.exit_code.map_or("was killed".into(), |c| format!("exited with {c}"))
        };
        msg.push_str(&format!("\n## check `{}` {how}\n$ {}\n", r.name, r.command));
        if !r.new_failures.is_empty() {
            msg.push_str(&format!(
                "Tests that fail now but passed before your change: {}\n",
                r.new_failures.join(", ")
            ));
        } else if let Some(f) = r.failing_tests.as_ref().filter(|f| !f.is_empty()) {
            msg.push_str(&format!("Failing tests: {}\n", f.join(", ")));
        }
        if !r.key_lines.is_empty() {
            msg.push_str("Lines that look relevant:\n");
            msg.push_str(&r.key_lines.join("\n"));
            msg.push('\n');
        }
        msg.push_str("Last lines of output:\n");
        msg.push_str(&r.output_tail);
        msg.push('\n');
    }
    if msg.chars().count() > FEEDBACK_CHARS {
        let cut: String = msg.chars().take(FEEDBACK_CHARS).collect();
        return cut + "\n[... cut; run the failing command with run_cmd to see more ...]";
    }
    msg
}

/// A check's result for unit tests: `name` ran as `sh name` (attempt 1, `expect: pass`) and
/// exited with 1, nothing else known.
#[cfg(test)]
pub fn example(name: &str) -> CheckResult {
    CheckResult {
        attempt: 1,
        name: name.into(),
        command: format!("sh {name}"),
        expect: crate::spec::Expect::Pass,
        passed: false,
        accepted: false,
        exit_code: Some(1),
        timed_out: false,
        cancelled: false,
        duration_ms: 1,
        started_ms: None,
        failing_tests: None,
        failing: None,
        junit_error: None,
        new_failures: vec![],
        output_tail: String::new(),
        key_lines: vec![],
    }
}

#[cfg(test)]
mod tests;
