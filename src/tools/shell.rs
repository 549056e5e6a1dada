//! `run_cmd`: runs a shell command in the repo, with a timeout and capped output.

use super::{Effect, ToolContext, ToolDef, object};
use crate::error::Code;
use crate::protocol::ToolOutput;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;

pub const RUN_CMD: ToolDef = ToolDef {
    name: "run_cmd",
    effect: Effect::Exec,
    description: "Run a shell command in the repo root (non-interactive, no stdin). Returns the exit code, duration and output (long output keeps its head and tail).",
    parameters: || {
        object(
            json!({
                "command": {"type": "string", "description": "The command line, run with bash -c"},
                "timeout_secs": {"type": "integer", "minimum": 1, "description": "Time limit in seconds; capped by the job's tools.cmd_timeout"}
            }),
            &["command"],
        )
    },
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CmdArgs {
    pub command: String,
    pub timeout_secs: Option<u64>,
}

pub async fn run_cmd(ctx: &ToolContext, a: CmdArgs) -> ToolOutput {
    if a.command.trim().is_empty() {
        return ToolOutput::err(Code::InvalidArgs, "the command is empty");
    }
    if let Err(denied) = ctx.check_command(&a.command) {
        return denied;
    }
    let asked = a.timeout_secs.map_or(ctx.limits.cmd_timeout, Duration::from_secs);
    let remaining = ctx.bound.deadline.saturating_duration_since(Instant::now());
    let timeout = asked.min(ctx.limits.cmd_timeout).min(remaining);
    let mark = ctx.sandbox.egress.as_ref().map(|p| p.mark());
    let res = crate::exec::run(
        &a.command,
        ctx.root.path(),
        &ctx.env,
        timeout,
        ctx.limits.max_output_bytes,
        &ctx.bound.cancel,
        &ctx.sandbox,
    )
    .await;
    let o = match res {
        Ok(o) => o,
        Err(e) => return ToolOutput::err(Code::Io, format!("could not start the command: {e}")),
    };
    let secs = o.duration.as_secs_f64();
    let refused = match (&ctx.sandbox.egress, mark) {
        (Some(p), Some(m)) => p.refusals_since(m),
        _ => String::new(),
    };
    if o.timed_out {
        return ToolOutput::err(
            Code::ToolTimeout,
            format!("timed out after {secs:.1}s and was killed (with its whole process group)\n{}{refused}", o.output),
        );
    }
    if o.cancelled {
        return ToolOutput::err(Code::Cancelled, "the run was cancelled while the command ran");
    }
    let code = o.exit_code.map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
    let body = format!("exit code: {code}\nduration: {secs:.1}s\n{}{refused}", o.output);
    ToolOutput { ok: o.success(), code: None, content: body, exit_code: o.exit_code }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch;
    use super::super::testutil::*;
    use super::*;

    #[tokio::test]
    async fn reports_exit_code_and_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let out = dispatch(&c, &call("run_cmd", json!({"command": "echo hi; exit 2"}))).await;
        assert!(!out.ok && out.content.starts_with("exit code: 2\n"), "{}", out.content);
        let out = dispatch(&c, &call("run_cmd", json!({"command": "sleep 30", "timeout_secs": 1}))).await;
        assert_eq!(out.code, Some(Code::ToolTimeout), "{}", out.content);
    }
}
