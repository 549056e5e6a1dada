//! Opening one MCP server: a stdio server started in the jail with exactly the environment the
//! job names, or a streamable HTTP endpoint with headers filled from the environment; then the
//! handshake and the tool list.

use crate::env::RunEnv;
use crate::exec::Service;
use crate::spec::mcp::expand;
use crate::spec::{McpServerSpec, McpTransport};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use std::path::Path;

/// The largest message hone accepts from a server (one JSON-RPC line or HTTP body).
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// What opening a server needs from the run.
pub struct Inputs<'a> {
    pub sandbox: &'a crate::sandbox::Sandbox,
    pub root: &'a Path,
    /// The environment every command gets.
    pub command_env: &'a [(String, String)],
    /// hone's own environment, for `env` names and header templates.
    pub run_env: &'a RunEnv,
    pub redactor: &'a crate::redact::Redactor,
}

/// A started server: the client, and for stdio the process (killed with its group on drop).
pub struct Conn {
    pub client: RunningService<RoleClient, ClientConfig>,
    pub process: Option<Service>,
}

impl Conn {
    /// The last lines the server wrote to stderr (stdio only), for reports.
    pub fn stderr_tail(&self) -> String {
        self.process.as_ref().map(|p| p.stderr_tail(8)).unwrap_or_default()
    }
}

fn client_info() -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("hone", env!("CARGO_PKG_VERSION")))
}

/// Open `spec`'s server and list its tools. Not bounded here: the caller bounds it by the
/// server's start timeout, the deadline and cancellation (dropping this kills a stdio server).
pub async fn open(spec: &McpServerSpec, i: &Inputs<'_>) -> Result<(Conn, Vec<Tool>), String> {
    let conn = match &spec.transport {
        McpTransport::Stdio { command, args, env } => stdio(command, args, env, i).await?,
        McpTransport::Http { url, headers } => http(url, headers, i).await?,
    };
    match conn.client.list_all_tools().await {
        Ok(tools) => Ok((conn, tools)),
        Err(e) => Err(with_tail(format!("listing its tools failed: {e}"), &conn.stderr_tail())),
    }
}

/// `msg`, and the server's stderr tail when there is one.
pub fn with_tail(msg: String, tail: &str) -> String {
    if tail.trim().is_empty() { msg } else { format!("{msg}; its stderr ended with:\n{tail}") }
}

async fn stdio(command: &str, args: &[String], names: &[String], i: &Inputs<'_>) -> Result<Conn, String> {
    let mut env = i.command_env.to_vec();
    for name in names {
        let Some(v) = i.run_env.var(name) else {
            return Err(format!("the environment variable `{name}` (in its `env`) is not set"));
        };
        if crate::agent::setup::is_secret_name(name) {
            i.redactor.add(v);
        }
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), v.to_string()));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut process = Service::spawn(command, &argv, i.root, &env, i.sandbox)
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let (Some(out), Some(inp)) = (process.child.stdout.take(), process.child.stdin.take()) else {
        return Err("its stdin and stdout could not be piped".into());
    };
    let transport = AsyncRwTransport::new_client(out, inp).with_max_line_length(MAX_MESSAGE);
    match client_info().serve(transport).await {
        Ok(client) => Ok(Conn { client, process: Some(process) }),
        Err(e) => {
            // Give a crashing server a moment to finish writing why.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), process.child.wait()).await;
            Err(with_tail(format!("the MCP handshake failed: {e}"), &process.stderr_tail(8)))
        }
    }
}

async fn http(url: &str, headers: &[(String, String)], i: &Inputs<'_>) -> Result<Conn, String> {
    let mut custom = std::collections::HashMap::new();
    for (k, template) in headers {
        let value =
            expand(template, |n| i.run_env.var(n).map(str::to_string)).map_err(|e| format!("its header `{k}`: {e}"))?;
        // Header values carry credentials: never shown anywhere.
        for name in crate::spec::mcp::template_vars(template).unwrap_or_default() {
            if let Some(v) = i.run_env.var(name) {
                i.redactor.add(v);
            }
        }
        let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("its header `{k}`: {e}"))?;
        let mut value = http::HeaderValue::from_str(&value).map_err(|e| format!("its header `{k}`: {e}"))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let client = crate::agent::setup::http_client(url)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = custom;
    config.max_json_response_size = MAX_MESSAGE;
    config.max_sse_event_size = MAX_MESSAGE;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let client = client_info().serve(transport).await.map_err(|e| format!("the MCP handshake failed: {e}"))?;
    Ok(Conn { client, process: None })
}
