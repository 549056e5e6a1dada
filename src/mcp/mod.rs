//! The job's MCP servers: started together before the first request (stdio ones each in a jail
//! of its own),
//! their tools offered as the policy allows, every call bounded, and what became of each server
//! recorded. A server that fails is left out, unless the job requires it.

pub mod connect;
pub mod convert;
mod error;
pub mod offer;

pub use error::Error;

use crate::bound::Bound;
use crate::error::Code;
use crate::events::Events;
use crate::policy::Policy;
use crate::protocol::{Event, McpServerRecord, McpStatus, McpToolRecord, ToolOutput, ToolSpec};
use crate::spec::{McpServerSpec, McpTransport};
use connect::{Conn, Inputs};
use rmcp::service::ServiceError;
use std::sync::Mutex;
use tokio::time::Instant;

/// The started servers and the tools offered from them.
pub struct Hub {
    servers: Vec<Server>,
    offered: Vec<Offered>,
    events: Events,
    redactor: crate::redact::Redactor,
}

struct Server {
    spec: McpServerSpec,
    conn: Option<Conn>,
    record: Mutex<McpServerRecord>,
}

struct Offered {
    server: usize,
    tool: String,
    spec: ToolSpec,
}

impl Hub {
    /// Start every server at once, each bounded by its start timeout, the deadline and
    /// cancellation; offer the tools the policy allows. `jails` has one entry per spec (a stdio
    /// server's jail, `sandbox::services`). Failures are recorded, not returned.
    pub async fn start(
        specs: &[McpServerSpec],
        jails: Vec<Result<crate::sandbox::Sandbox, crate::sandbox::Error>>,
        policy: &Policy,
        i: &Inputs<'_>,
        b: &Bound,
        events: Events,
    ) -> Hub {
        let opened =
            futures_util::future::join_all(specs.iter().zip(jails).map(|(s, jail)| open_bounded(s, jail, i, b))).await;
        let mut hub = Hub { servers: vec![], offered: vec![], events, redactor: i.redactor.clone() };
        let mut budget = offer::Budget::default();
        for (spec, (result, start_ms)) in specs.iter().zip(opened) {
            let index = hub.servers.len();
            let mut record = McpServerRecord {
                name: spec.name.clone(),
                transport: match spec.transport {
                    McpTransport::Stdio { .. } => "stdio".into(),
                    McpTransport::Http { .. } => "http".into(),
                },
                required: spec.required,
                status: McpStatus::Failed,
                offered: vec![],
                denied: vec![],
                skipped: vec![],
                calls: 0,
                failed_calls: 0,
                error: None,
                start_ms,
            };
            let conn = match result {
                Ok((conn, tools)) => {
                    record.status = McpStatus::Running;
                    let o = offer::select(&spec.name, &tools, policy, i.redactor, &mut budget);
                    (record.denied, record.skipped) = (o.denied, o.skipped);
                    for (tool, spec) in o.offered {
                        record.offered.push(McpToolRecord { tool: tool.clone(), exposed: spec.name.clone() });
                        hub.offered.push(Offered { server: index, tool, spec });
                    }
                    Some(conn)
                }
                Err(e) => {
                    record.error =
                        Some(i.redactor.apply(&format!("the MCP server `{}` did not start: {e}", spec.name)));
                    None
                }
            };
            hub.events.emit(Event::McpServer {
                name: spec.name.clone(),
                status: record.status,
                tools: record.offered.iter().map(|t| t.exposed.clone()).collect(),
                error: record.error.clone(),
            });
            hub.servers.push(Server { spec: spec.clone(), conn, record: Mutex::new(record) });
        }
        hub
    }

    /// The specs of the tools offered from servers still answering.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.notice_stopped();
        self.offered.iter().filter(|o| self.alive(o.server)).map(|o| o.spec.clone()).collect()
    }

    /// Mark stopped every running server whose connection has closed (a stdio server that
    /// exited, between calls too).
    fn notice_stopped(&self) {
        for s in &self.servers {
            let Some(conn) = &s.conn else { continue };
            let running = s.record.lock().is_ok_and(|r| r.status == McpStatus::Running);
            if running && (conn.client.is_transport_closed() || conn.client.is_closed()) {
                let why = format!("the MCP server `{}` stopped: its connection closed", s.spec.name);
                self.stopped(s, &connect::with_tail(why, &conn.stderr_tail()));
            }
        }
    }

    /// Whether `name` is an MCP tool this run offered.
    pub fn offers(&self, name: &str) -> bool {
        self.offered.iter().any(|o| o.spec.name == name)
    }

    fn alive(&self, server: usize) -> bool {
        self.servers[server].record.lock().is_ok_and(|r| r.status == McpStatus::Running)
    }

    /// Every server's record, as the report shows it.
    pub fn records(&self) -> Vec<McpServerRecord> {
        self.servers.iter().filter_map(|s| s.record.lock().ok().map(|r| r.clone())).collect()
    }

    /// Why the run cannot go on: a required server that did not start or stopped.
    pub fn required_down(&self) -> Option<String> {
        self.notice_stopped();
        self.servers.iter().find_map(|s| {
            let r = s.record.lock().ok()?;
            (r.required && r.status != McpStatus::Running).then(|| {
                let why = r.error.clone().unwrap_or_default();
                format!("{why}; the job marks it `required`, so the run stops")
            })
        })
    }

    /// Call the offered tool `name` with `arguments` (a JSON object), bounded by the server's
    /// timeout, the deadline and cancellation. Every failure is an error result.
    pub async fn call(&self, name: &str, arguments: &str, b: &Bound) -> ToolOutput {
        let Some(o) = self.offered.iter().find(|o| o.spec.name == name) else {
            return ToolOutput::err(Code::InvalidArgs, format!("unknown tool `{name}`"));
        };
        let server = &self.servers[o.server];
        let out = self.call_on(server, o, arguments, b).await;
        if let Ok(mut r) = server.record.lock() {
            r.calls += 1;
            r.failed_calls += u32::from(!out.ok);
        }
        out
    }

    async fn call_on(&self, server: &Server, o: &Offered, arguments: &str, b: &Bound) -> ToolOutput {
        let sname = &server.spec.name;
        let (Some(conn), true) = (&server.conn, self.alive(o.server)) else {
            return ToolOutput::err(Code::Mcp, format!("the MCP server `{sname}` has stopped; its tools are gone"));
        };
        let raw = if arguments.trim().is_empty() { "{}" } else { arguments };
        let args = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                let msg = format!("the arguments of `{}` must be a JSON object matching its schema", o.spec.name);
                return ToolOutput::err(Code::InvalidArgs, msg);
            }
        };
        let params = rmcp::model::CallToolRequestParams::new(o.tool.clone()).with_arguments(args);
        let timeout = server.spec.timeout;
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, conn.client.call_tool(params)) => r,
            () = b.cancel.cancelled() => return ToolOutput::err(Code::Cancelled, "the run was cancelled"),
            () = tokio::time::sleep_until(b.deadline) => {
                return ToolOutput::err(Code::ToolTimeout, "the run's wall-time budget ran out during this tool");
            }
        };
        match result {
            Err(_) => ToolOutput::err(
                Code::ToolTimeout,
                format!(
                    "the MCP server `{sname}` did not answer within {}; try again with a smaller request, or do without it",
                    crate::spec::duration::format(timeout)
                ),
            ),
            Ok(Ok(r)) => {
                let (ok, text) = convert::render_result(&serde_json::to_value(&r).unwrap_or_default());
                if ok { ToolOutput::ok(text) } else { ToolOutput::err(Code::Mcp, text) }
            }
            Ok(Err(e))
                if matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_))
                    || conn.client.is_transport_closed()
                    || conn.client.is_closed() =>
            {
                let why = connect::with_tail(format!("the MCP server `{sname}` stopped: {e}"), &conn.stderr_tail());
                self.stopped(server, &why);
                ToolOutput::err(Code::Mcp, format!("{why}\nIts tools are withdrawn; carry on without them."))
            }
            Ok(Err(e)) => ToolOutput::err(Code::Mcp, format!("the MCP server `{sname}` failed the call: {e}")),
        }
    }

    fn stopped(&self, server: &Server, why: &str) {
        let why = self.redactor.apply(why);
        if let Ok(mut r) = server.record.lock() {
            r.status = McpStatus::Stopped;
            r.error = Some(why.clone());
        }
        self.events.emit(Event::McpServer {
            name: server.spec.name.clone(),
            status: McpStatus::Stopped,
            tools: vec![],
            error: Some(why),
        });
    }

    /// Stop every server before the run's end is judged: close each connection (a stdio
    /// server's stdin), give a stdio server a moment to exit, then kill its process group, so
    /// that nothing a server does lands after the checks, the guards or the commit.
    pub async fn shutdown(&self) {
        // Every connection closed first, so that the servers exit together, not in turn.
        let conns: Vec<&Conn> = self.servers.iter().filter_map(|s| s.conn.as_ref()).collect();
        for conn in &conns {
            conn.client.cancellation_token().cancel();
        }
        for conn in conns {
            let process = conn.process.lock().ok().and_then(|mut p| p.take());
            if let Some(mut p) = process {
                let _ = tokio::time::timeout(std::time::Duration::from_millis(500), p.child.wait()).await;
                drop(p);
            }
        }
    }
}

/// Open one server within its bounds; with the time it took.
async fn open_bounded(
    spec: &McpServerSpec,
    jail: Result<crate::sandbox::Sandbox, crate::sandbox::Error>,
    i: &Inputs<'_>,
    b: &Bound,
) -> (Result<(Conn, Vec<rmcp::model::Tool>), Error>, u64) {
    let started = Instant::now();
    let limit = (started + spec.start_timeout).min(b.deadline);
    let r = tokio::select! {
        r = tokio::time::timeout_at(limit, connect::open(spec, jail, i)) => {
            r.unwrap_or(Err(Error::StartTimeout(spec.start_timeout)))
        }
        () = b.cancel.cancelled() => Err(Error::Cancelled),
    };
    (r, started.elapsed().as_millis() as u64)
}
