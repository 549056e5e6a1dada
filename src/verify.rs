//! Runs the job's verify commands (the repo's own lint, test and build), and turns failures
//! into a compact message for the model: the failing command and the lines that matter.

use crate::spec::VerifySpec;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Output kept per check in reports and sent to the model.
pub const OUTPUT_CAP: usize = 64 * 1024;
const TAIL_LINES: usize = 40;
const FEEDBACK_CHARS: usize = 4000;

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub attempt: u32,
    pub name: String,
    pub command: String,
    pub passed: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration_ms: u64,
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
    sandbox: &crate::sandbox::Sandbox,
) -> CheckResult {
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
    CheckResult {
        attempt,
        name: check.name.clone(),
        command: check.run.clone(),
        passed,
        exit_code,
        timed_out,
        cancelled,
        duration_ms: duration.as_millis() as u64,
        output_tail,
        key_lines: key_lines(&output),
    }
}

pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Lines that usually carry the cause: errors, failed assertions, tracebacks, file:line refs.
fn key_lines(text: &str) -> Vec<String> {
    const MARKERS: &[&str] =
        &["error", "fail", "assert", "traceback", "panicked", "exception", "expected", "warning:", "FAILED", "E   "];
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let low = line.to_lowercase();
        if MARKERS.iter().any(|m| low.contains(&m.to_lowercase())) && !out.iter().any(|o| o == line) {
            out.push(line.chars().take(300).collect());
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
        "hone ran the verify commands and some failed (fix attempt {attempt} of {max}). Fix the cause, then stop calling tools when done; hone will verify again.\n"
    );
    for r in results.iter().filter(|r| !r.passed) {
        let how = if r.timed_out {
            "timed out".to_string()
        } else {
            r.exit_code.map_or("was killed".into(), |c| format!("exited with {c}"))
        };
        msg.push_str(&format!("\n## check `{}` {how}\n$ {}\n", r.name, r.command));
        if !r.key_lines.is_empty() {
            msg.push_str("Lines that look relevant:\n");
            msg.push_str(&r.key_lines.join("\n"));
            msg.push('\n');
        }
        msg.push_str("Last lines of output:\n");
        msg.push_str(&r.output_tail);
        msg.push('\n');
    }
    if msg.len() > FEEDBACK_CHARS * 2 {
        let cut: String = msg.chars().take(FEEDBACK_CHARS * 2).collect();
        return cut + "\n[... cut; run the failing command with run_cmd to see more ...]";
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, run: &str) -> VerifySpec {
        VerifySpec { name: name.into(), run: run.into(), timeout: Duration::from_secs(30) }
    }

    #[tokio::test]
    async fn failing_check_feedback_names_the_command_and_key_lines() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![("PATH".to_string(), std::env::var("PATH").unwrap_or_default())];
        let deadline = Instant::now() + Duration::from_secs(60);
        let cancel = CancellationToken::new();
        let script = "for i in $(seq 1 100); do echo noise $i; done; echo 'AssertionError: 3 != 4'; for i in $(seq 1 100); do echo more $i; done; exit 1";
        let bad = run_check(&check("test", script), 1, dir.path(), &env, deadline, &cancel, &Default::default()).await;
        let good = run_check(&check("lint", "true"), 1, dir.path(), &env, deadline, &cancel, &Default::default()).await;
        assert!(!bad.passed && good.passed);
        assert_eq!(bad.output_tail.lines().count(), TAIL_LINES);
        let fb = feedback(&[good, bad], 1, 3);
        assert!(fb.contains("## check `test` exited with 1"), "{fb}");
        assert!(fb.contains("AssertionError: 3 != 4"));
        assert!(!fb.contains("`lint`"));
        assert!(!fb.contains("noise 50\n"));
    }

    #[tokio::test]
    async fn the_deadline_cuts_a_check_short() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![("PATH".to_string(), std::env::var("PATH").unwrap_or_default())];
        let r = run_check(
            &check("slow", "sleep 60"),
            1,
            dir.path(),
            &env,
            Instant::now() + Duration::from_millis(300),
            &CancellationToken::new(),
            &Default::default(),
        )
        .await;
        assert!(r.timed_out && !r.passed);
    }
}
