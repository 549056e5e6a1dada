//! Progress for people watching a log (stderr): one line per state change, turn, tool call,
//! check, retry, rollback and commit. Under GitHub Actions each phase is a collapsible group.
//! Every line is neutral for the CI runner (`ci_text`), whatever the model or a check put in it.

use crate::ci_text::{Command, Out};
use crate::protocol::{Event, McpStatus};
use crate::redact::Redactor;
use std::collections::HashMap;

pub struct Progress {
    out: Out,
    /// Print `::group::`/`::endgroup::` around phases.
    actions: bool,
    group_open: bool,
    /// What each tool call was about (its command or path), by call id, until it completes.
    pending: HashMap<String, String>,
    /// The try the event being shown belongs to (`[try k]` before its lines), if any.
    on_try: Option<u32>,
}

/// The part of a tool call's arguments worth a log line: its command, path or pattern.
fn subject(args: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(args).unwrap_or_default();
    // A patch's files, from its `+++` headers (also in arguments cut short, as the event's are).
    let patched = || {
        let files: Vec<String> = args
            .split("+++ ")
            .skip(1)
            .map(|rest| rest.split(['\\', '\n', '"']).next().unwrap_or("").trim_start_matches("b/").to_string())
            .filter(|f| !f.is_empty())
            .collect();
        (!files.is_empty()).then(|| files.join(", "))
    };
    let planned = || args.contains("\"steps\"").then(|| "(the plan)".to_string());
    let s = ["command", "path", "pattern", "outcome"]
        .iter()
        .find_map(|k| v.get(*k).and_then(|x| x.as_str()).map(str::to_string))
        .or_else(patched)
        .or_else(planned)
        .unwrap_or_else(|| args.to_string());
    let one_line = s.replace('\n', " ⏎ ");
    if one_line.chars().count() > 120 { one_line.chars().take(117).collect::<String>() + "..." } else { one_line }
}

/// A setup command's line: its name, how it ended, how long it took.
fn setup_line(e: &Event) -> String {
    let Event::SetupCompleted { name, passed, exit_code, timed_out, cancelled, duration_ms } = e else {
        return String::new();
    };
    // A setup command is held to `pass`: its verdict is worded as a check's is.
    let facts = crate::verify::Facts {
        passed: *passed,
        accepted: *passed,
        timed_out: *timed_out,
        cancelled: *cancelled,
        exit_code: *exit_code,
        ..Default::default()
    };
    let how = crate::verify::Verdict::of(facts).to_string();
    format!("setup `{name}`: {how} ({})", secs(*duration_ms))
}

/// A check's line: which run of it, its verdict (`verify::Verdict`, as every report says it), how
/// long it took.
fn check_line(e: &Event) -> String {
    let Event::VerifyCompleted {
        attempt,
        check,
        passed,
        accepted,
        new_failures,
        exit_code,
        timed_out,
        cancelled,
        junit_error,
        duration_ms,
    } = e
    else {
        return String::new();
    };
    let when = if *attempt == 0 { "baseline".to_string() } else { format!("attempt {attempt}") };
    let verdict = crate::verify::Verdict::of(crate::verify::Facts {
        passed: *passed,
        accepted: *accepted,
        timed_out: *timed_out,
        cancelled: *cancelled,
        exit_code: *exit_code,
        new_failures,
        junit_error: junit_error.as_deref(),
    });
    format!("check `{check}` ({when}): {verdict} ({})", secs(*duration_ms))
}

/// How a tool call ended: a command's exit code, an error code, or ok.
fn outcome(exit_code: Option<i32>, code: Option<crate::error::Code>, ok: bool) -> String {
    match (exit_code, code, ok) {
        (Some(c), _, _) => format!("exit {c}"),
        (None, Some(code), _) => code.to_string(),
        (None, None, true) => "ok".into(),
        (None, None, false) => "failed".into(),
    }
}

/// A connection hone's proxy refused.
fn refused_line(c: &crate::protocol::Connection) -> String {
    format!("  network ({}): refused {}:{}: {}", c.purpose, c.host, c.port, c.reason.as_deref().unwrap_or(""))
}

/// An MCP server's line: started with its tools, failed to start, or stopped.
fn mcp_line(e: &Event) -> String {
    let Event::McpServer { name, status, tools, error } = e else { return String::new() };
    let first = |s: &str| s.lines().next().unwrap_or("").to_string();
    match status {
        McpStatus::Running => format!("MCP server `{name}`: {} tool(s) offered", tools.len()),
        // The error says it all: "the MCP server `x` did not start: …" or "… stopped: …".
        McpStatus::Failed | McpStatus::Stopped => first(error.as_deref().unwrap_or("")),
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

impl Progress {
    #[cfg(test)]
    pub fn new(out: Box<dyn std::io::Write + Send>, actions: bool) -> Self {
        Progress { out: Out::new(out), actions, group_open: false, pending: HashMap::new(), on_try: None }
    }

    /// Progress on stderr, with groups when running under GitHub Actions.
    pub fn stderr(actions: bool) -> Self {
        Progress { out: Out::stderr(), actions, group_open: false, pending: HashMap::new(), on_try: None }
    }

    /// One line, whatever the text holds: a line end in a test name or a model's message is shown
    /// escaped, never a line of its own, and no part of it is a workflow command (`ci_text`).
    /// A tool call's key among those pending: tries may use the same call ids.
    fn call_key(&self, call_id: &str) -> String {
        format!("{}/{call_id}", self.on_try.unwrap_or(0))
    }

    /// The events that follow belong to try `k` (`None`: to the job).
    pub fn on_try(&mut self, k: Option<u32>) {
        self.on_try = k;
    }

    fn line(&mut self, text: &str, redactor: &Redactor) {
        let text = match self.on_try {
            Some(k) => format!("[try {k}] {text}"),
            None => text.to_string(),
        };
        let _ = self.out.text(&crate::ci_text::line(&redactor.apply(&text)));
    }

    fn command(&mut self, c: &Command) {
        let _ = self.out.command(c);
    }

    fn phase(&mut self, to: crate::protocol::State, reason: &str, redactor: &Redactor) {
        let (terminal, to) = (to.is_terminal(), to.as_str());
        if self.actions && self.group_open {
            self.command(&Command::endgroup());
            self.group_open = false;
        }
        if self.actions && !terminal {
            self.command(&Command::group(&redactor.apply(&format!("hone {to}: {reason}"))));
            self.group_open = true;
        } else {
            self.line(&format!("── {to}: {reason}"), redactor);
        }
    }

    /// Render one event (nothing for events that only matter to machines).
    pub fn on(&mut self, e: &Event, r: &Redactor) {
        match e {
            Event::RunStarted { job, repo, branch, provider, model } => {
                self.line(&format!("hone: job `{job}` on {repo} (branch {branch}, {provider} {model})"), r)
            }
            Event::StateChanged { to, reason, .. } => self.phase(*to, reason, r),
            Event::TurnCompleted { turn, tool_calls, usage, duration_ms, .. } => {
                let tokens = usage.map_or("no usage reported".into(), |u| {
                    format!("{} prompt + {} completion tokens", u.prompt_tokens, u.completion_tokens)
                });
                self.line(&format!("turn {turn}: {tool_calls} tool call(s), {tokens}, {}", secs(*duration_ms)), r);
            }
            Event::ToolCallStarted { call_id, args, .. } => {
                self.pending.insert(self.call_key(call_id), subject(args));
            }
            Event::ToolCallCompleted { call_id, tool, ok, code, exit_code, duration_ms, .. } => {
                let what = self.pending.remove(&self.call_key(call_id)).unwrap_or_default();
                let result = outcome(*exit_code, *code, *ok);
                self.line(&format!("  {tool} {what} → {result} ({})", secs(*duration_ms)), r);
            }
            Event::PolicyDecision { subject, allowed: false, rule, .. } => {
                self.line(&format!("  denied by the policy: {subject} ({rule})"), r)
            }
            Event::Egress(c) if !c.allowed => self.line(&refused_line(c), r),
            Event::SetupCompleted { .. } => self.line(&setup_line(e), r),
            Event::McpServer { .. } => self.line(&mcp_line(e), r),
            Event::VerifyCompleted { .. } => self.line(&check_line(e), r),
            Event::ModelRetry { attempt, class, reason, delay_ms, .. } => {
                self.line(&format!("model: {reason} ({class}); retry {attempt} in {}", secs(*delay_ms)), r)
            }
            Event::ModelSwitched { from, to, reason, .. } => {
                self.line(&format!("model: {from} stayed unavailable; going on with {to} ({reason})"), r)
            }
            Event::Rollback { to_checkpoint, reason, .. } => {
                self.line(&format!("rolled back to checkpoint {to_checkpoint}: {reason}"), r)
            }
            Event::Checkpoint { id, label, .. } => self.line(&format!("checkpoint {id} saved after {label}"), r),
            Event::FixRequested { attempt, failing } => {
                self.line(&format!("fix attempt {attempt}: failing {}", failing.join(", ")), r)
            }
            Event::Compacted { before_tokens, after_tokens, .. } => {
                self.line(&format!("history compacted: {before_tokens} → {after_tokens} tokens"), r)
            }
            Event::Commit { sha, branch, files_changed } => {
                self.line(&format!("committed {} on {branch} ({files_changed} file(s))", &sha[..sha.len().min(12)]), r)
            }
            Event::Warning { code, message } => self.line(&format!("warning {code}: {message}"), r),
            Event::RunCompleted { .. } if self.actions && self.group_open => {
                self.command(&Command::endgroup());
                self.group_open = false;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::Mem as Buf;

    #[test]
    fn phases_are_groups_under_actions_and_tool_calls_say_what_they_did() {
        let buf = Buf::default();
        let mut p = Progress::new(Box::new(buf.clone()), true);
        let r = Redactor::new();
        use crate::protocol::State;
        let state = |to: State| Event::StateChanged { from: State::Intake, to, reason: "why".into() };
        p.on(&state(State::Executing), &r);
        p.on(
            &Event::ToolCallStarted {
                turn: 1,
                call_id: "c".into(),
                tool: "run_cmd".into(),
                args: r#"{"command":"ls -la"}"#.into(),
            },
            &r,
        );
        p.on(
            &Event::ToolCallCompleted {
                turn: 1,
                call_id: "c".into(),
                tool: "run_cmd".into(),
                ok: false,
                code: None,
                exit_code: Some(2),
                duration_ms: 1500,
            },
            &r,
        );
        p.on(&state(State::Done), &r);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "::group::hone EXECUTING: why\n  run_cmd ls -la → exit 2 (1.5s)\n::endgroup::\n── DONE: why\n"
        );
    }

    #[test]
    fn text_from_the_model_or_a_check_cannot_start_a_workflow_command() {
        let buf = Buf::default();
        let mut p = Progress::new(Box::new(buf.clone()), true);
        p.on(
            &Event::VerifyCompleted {
                attempt: 1,
                check: "t".into(),
                passed: false,
                accepted: false,
                new_failures: vec![
                    "x\n::error title=INJECTED::boo".into(),
                    "y\r  ::stop-commands::t".into(),
                    "t ##[error]z".into(),
                ],
                exit_code: Some(1),
                timed_out: false,
                cancelled: false,
                junit_error: None,
                duration_ms: 1,
            },
            &Redactor::new(),
        );
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.split(['\n', '\r']).filter(|l| !l.is_empty()).count(), 1, "{text}");
        assert!(!text.trim_start().starts_with("::") && !text.contains("##["), "{text}");
        assert!(text.contains("x\\n::error title=INJECTED::boo, y\\r  ::stop-commands::t, t ##\\[error]z"), "{text}");
    }
}
