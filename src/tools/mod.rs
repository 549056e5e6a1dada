//! The tools the model gets: their schemas, and one dispatch that turns any bad call into an
//! error result for the model rather than a crash.

pub mod beneath;
mod context;
pub mod files;
mod found;
pub mod patch;
pub mod paths;
pub mod search;
pub mod shell;
pub mod walk;

pub use context::ToolContext;

use crate::error::Code;
use crate::protocol::{ToolCall, ToolOutput, ToolSpec};
use paths::PathError;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::time::Instant;

/// Whether a tool changes anything (decides retry and rollback behaviour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Read,
    Write,
    Exec,
}

pub struct ToolDef {
    pub name: &'static str,
    pub effect: Effect,
    pub description: &'static str,
    pub parameters: fn() -> Value,
}

pub const TOOLS: &[ToolDef] = &[
    files::LIST_DIR,
    files::READ_FILE,
    search::GLOB,
    search::GREP,
    files::WRITE_FILE,
    patch::APPLY_PATCH,
    patch::UNDO_PATCH,
    shell::RUN_CMD,
];

pub fn specs() -> Vec<ToolSpec> {
    TOOLS
        .iter()
        .map(|t| ToolSpec { name: t.name.into(), description: t.description.into(), parameters: (t.parameters)() })
        .collect()
}

pub fn effect_of(name: &str) -> Option<Effect> {
    TOOLS.iter().find(|t| t.name == name).map(|t| t.effect)
}

/// Delays before retrying a read tool that failed with a transient I/O error.
pub const READ_RETRY_DELAYS: [std::time::Duration; 3] =
    [std::time::Duration::from_millis(200), std::time::Duration::from_millis(500), std::time::Duration::from_secs(1)];

/// Run one tool call. Never panics and never fails the run: every problem is an error result.
/// Idempotent read tools are retried on transient I/O errors; write and exec tools never are.
/// File and search tools run on the blocking pool, off the async executor.
pub async fn dispatch(ctx: &Arc<ToolContext>, call: &ToolCall) -> ToolOutput {
    let mcp = ctx.mcp.get().filter(|h| h.offers(&call.name));
    let out = match call.name.as_str() {
        name if let Some(hub) = mcp => {
            let bounds = ctx.bound.clone();
            hub.call(name, &call.arguments, &bounds).await
        }
        name if ctx.policy.read_only_repo && effect_of(name) == Some(Effect::Write) => ToolOutput::err(
            Code::PolicyDenied,
            format!(
                "`{name}` is refused: this job is read-only (`change: none`); nothing in the repository may change. Answer with `finish` instead."
            ),
        ),
        "run_cmd" => match parse_args(call) {
            Ok(a) => shell::run_cmd(ctx, a).await,
            Err(e) => e,
        },
        name if effect_of(name) == Some(Effect::Read) => {
            retry_reads(&READ_RETRY_DELAYS, || off_executor(ctx, call, Effect::Read)).await
        }
        _ => off_executor(ctx, call, Effect::Write).await,
    };
    // A last bound on any result: head and tail, with how to read the rest. An MCP tool's
    // result is bounded like a command's output.
    let (cap, hint) = match mcp {
        Some(_) => (ctx.limits.max_output_bytes, "ask the tool for less"),
        None => (
            ctx.limits.max_output_bytes.max(ctx.limits.max_read_bytes) + 4096,
            "read smaller ranges (read_file start_line/end_line) or narrow the search",
        ),
    };
    // Redacted before the cut and again around it, so that no piece of a secret the cut split
    // is left on either side of it.
    let content = ctx.redactor.apply(&out.content);
    let content = if content.len() > cap {
        let mut c = crate::exec::Capture::new(cap);
        c.push(content.as_bytes());
        c.render_with(hint)
    } else {
        content
    };
    ToolOutput { content: ctx.redactor.apply_cut(&content), ..out }
}

/// Run a file or search tool on the blocking pool. A read (a grep over a large tree) is given
/// up at cancellation or the run's deadline; a write is always awaited to its end, so the work
/// tree is never restored while a write is still under way. A panic is an error result.
async fn off_executor(ctx: &Arc<ToolContext>, call: &ToolCall, effect: Effect) -> ToolOutput {
    let cancelled = || ToolOutput::err(Code::Cancelled, "the run was cancelled");
    let late = || ToolOutput::err(Code::ToolTimeout, "the run's wall-time budget ran out during this tool");
    if effect == Effect::Read && ctx.bound.cancel.is_cancelled() {
        return cancelled();
    }
    if effect == Effect::Read && Instant::now() >= ctx.bound.deadline {
        return late();
    }
    let (c, owned) = (ctx.clone(), call.clone());
    let task = tokio::task::spawn_blocking(move || run_sync(&c, &owned));
    let joined = |r: Result<ToolOutput, tokio::task::JoinError>| {
        r.unwrap_or_else(|e| ToolOutput::err(Code::Io, format!("the tool `{}` failed: {e}", call.name)))
    };
    if effect != Effect::Read {
        return joined(task.await);
    }
    tokio::select! {
        () = ctx.bound.cancel.cancelled() => cancelled(),
        () = tokio::time::sleep_until(ctx.bound.deadline) => late(),
        r = task => joined(r),
    }
}

/// Call `f` again after each delay while it fails with `E_IO`.
pub async fn retry_reads<F: std::future::Future<Output = ToolOutput>>(
    delays: &[std::time::Duration],
    mut f: impl FnMut() -> F,
) -> ToolOutput {
    let mut out = f().await;
    for d in delays {
        if out.code != Some(Code::Io) {
            break;
        }
        tokio::time::sleep(*d).await;
        out = f().await;
    }
    out
}

fn run_sync(ctx: &ToolContext, call: &ToolCall) -> ToolOutput {
    match call.name.as_str() {
        "list_dir" => with_args(call, |a| files::list_dir(ctx, a)),
        "read_file" => with_args(call, |a| files::read_file(ctx, a)),
        "glob_file_search" => with_args(call, |a| search::glob(ctx, a)),
        "grep" => with_args(call, |a| search::grep(ctx, a)),
        "write_file" => with_args(call, |a| files::write_file(ctx, a)),
        "apply_patch" => with_args(call, |a| patch::apply(ctx, a)),
        "undo_patch" => with_args(call, |a| patch::undo(ctx, a)),
        other => {
            let names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
            let hint = crate::spec::diag::did_you_mean(other, &names)
                .map(|s| format!(" Did you mean `{s}`?"))
                .unwrap_or_default();
            ToolOutput::err(
                Code::InvalidArgs,
                format!("unknown tool `{other}`.{hint} Available tools: {}", names.join(", ")),
            )
        }
    }
}

fn with_args<A: DeserializeOwned>(call: &ToolCall, f: impl FnOnce(A) -> ToolOutput) -> ToolOutput {
    match parse_args(call) {
        Ok(a) => f(a),
        Err(e) => e,
    }
}

/// Parse and check arguments against the tool's argument type (which mirrors its schema).
fn parse_args<A: DeserializeOwned>(call: &ToolCall) -> Result<A, ToolOutput> {
    let raw = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
    let v: Value = serde_json::from_str(raw).map_err(|e| {
        ToolOutput::err(
            Code::InvalidArgs,
            format!(
                "the arguments of `{}` are not valid JSON ({e}); send a JSON object that matches the tool's schema",
                call.name
            ),
        )
    })?;
    serde_json::from_value(v).map_err(|e| {
        ToolOutput::err(Code::InvalidArgs, format!("the arguments of `{}` do not match its schema: {e}", call.name))
    })
}

impl From<PathError> for ToolOutput {
    fn from(e: PathError) -> Self {
        ToolOutput::err(e.code, e.message)
    }
}

/// Helper for schemas: an object with these properties, `required` listed, nothing else allowed.
pub(crate) fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

pub(crate) fn io_err(what: &str, e: &std::io::Error) -> ToolOutput {
    let code = if e.kind() == std::io::ErrorKind::NotFound { Code::NotFound } else { Code::Io };
    ToolOutput::err(code, format!("{what}: {e}"))
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::spec::ToolLimits;

    pub fn ctx(dir: &std::path::Path) -> Arc<ToolContext> {
        let limits = ToolLimits {
            cmd_timeout: std::time::Duration::from_secs(30),
            max_output_bytes: 4000,
            max_read_bytes: 4000,
        };
        let env = vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())];
        Arc::new(ToolContext::standalone(dir, limits, env).unwrap())
    }

    pub fn call(name: &str, args: Value) -> ToolCall {
        ToolCall { id: "t".into(), name: name.into(), arguments: args.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[tokio::test]
    async fn bad_calls_become_error_results() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let out = dispatch(&c, &ToolCall { id: "1".into(), name: "read_fil".into(), arguments: "{}".into() }).await;
        assert_eq!(out.code, Some(Code::InvalidArgs));
        assert!(out.content.contains("Did you mean `read_file`?"), "{}", out.content);
        let out =
            dispatch(&c, &ToolCall { id: "1".into(), name: "read_file".into(), arguments: "{\"path\": ".into() }).await;
        assert_eq!(out.code, Some(Code::InvalidArgs));
        assert!(out.content.contains("not valid JSON"));
        let out = dispatch(&c, &call("read_file", json!({"path": 3}))).await;
        assert!(out.content.contains("do not match its schema"), "{}", out.content);
        let out = dispatch(&c, &call("read_file", json!({"path": "a", "bogus": 1}))).await;
        assert!(out.content.contains("unknown field `bogus`"), "{}", out.content);
    }

    #[tokio::test]
    async fn reads_stop_at_cancellation_and_the_deadline_but_writes_always_finish() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let c = ctx(dir.path());
        let read = call("read_file", json!({"path": "a.txt"}));
        assert!(dispatch(&c, &read).await.content.contains("hello"));
        c.bound.cancel.cancel();
        assert_eq!(dispatch(&c, &read).await.code, Some(Code::Cancelled));
        let grep = call("grep", json!({"pattern": "hello"}));
        assert_eq!(dispatch(&c, &grep).await.code, Some(Code::Cancelled));
        // A write already asked for is carried out to its end, never left half done.
        let out = dispatch(&c, &call("write_file", json!({"path": "b.txt", "content": "x\n"}))).await;
        assert_eq!(out.code, None, "{}", out.content);
        assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "x\n");
        let mut late = ctx(dir.path());
        Arc::get_mut(&mut late).unwrap().bound.deadline = Instant::now();
        assert_eq!(dispatch(&late, &read).await.code, Some(Code::ToolTimeout));
    }

    #[tokio::test]
    async fn reads_are_retried_on_io_errors_only() {
        let delays = [std::time::Duration::ZERO; 3];
        let mut calls = 0;
        let out = retry_reads(&delays, || {
            calls += 1;
            std::future::ready(if calls < 3 { ToolOutput::err(Code::Io, "busy") } else { ToolOutput::ok("data") })
        })
        .await;
        assert_eq!((out.content.as_str(), calls), ("data", 3));
        let mut calls = 0;
        let out = retry_reads(&delays, || {
            calls += 1;
            std::future::ready(ToolOutput::err(Code::NotFound, "no such file"))
        })
        .await;
        assert_eq!((out.code, calls), (Some(Code::NotFound), 1), "a missing file is not transient");
        let mut calls = 0;
        retry_reads(&delays, || {
            calls += 1;
            std::future::ready(ToolOutput::err(Code::Io, "still busy"))
        })
        .await;
        assert_eq!(calls, 4, "one try and three retries");
    }

    #[tokio::test]
    async fn huge_results_are_cut_to_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..2000).map(|i| format!("match line {i}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), body).unwrap();
        let c = ctx(dir.path());
        let out = dispatch(&c, &call("grep", json!({"pattern": "match", "max_results": 1000}))).await;
        assert!(out.content.len() < 13_000, "{}", out.content.len());
        assert!(out.content.contains("bytes omitted from the middle") && out.content.contains("narrow the search"));
        assert!(out.content.starts_with("a.txt:1: match line 0"));
    }

    #[test]
    fn every_tool_has_an_object_schema_with_described_properties() {
        for s in specs() {
            assert_eq!(s.parameters["type"], "object", "{}", s.name);
            for (k, v) in s.parameters["properties"].as_object().unwrap() {
                assert!(v["description"].as_str().is_some_and(|d| !d.is_empty()), "{}.{k}", s.name);
            }
        }
    }
}
