//! Opening one MCP server: a stdio server started in a jail of its own with exactly the
//! environment the job names, or a streamable HTTP endpoint with headers filled from the
//! environment; then the handshake and the tool list.

use super::Error;
use crate::env::RunEnv;
use crate::exec::Capture;
use crate::exec::Service;
use crate::sandbox::Sandbox;
use crate::spec::mcp::expand;
use crate::spec::{McpServerSpec, McpTransport};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, Tool};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The largest message hone accepts from a server (one JSON-RPC line or HTTP body).
const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// The most pages and tools hone reads of a server's tool list (a server that pages forever
/// fails to start instead of filling memory).
pub(super) const MAX_PAGES: usize = 20;
pub(super) const MAX_LISTED: usize = 1000;

/// What opening a server needs from the run.
pub struct Inputs<'a> {
    pub root: &'a Path,
    /// The environment every command gets.
    pub command_env: &'a [(String, String)],
    /// hone's own environment, for `env` names and header templates.
    pub run_env: &'a RunEnv,
    pub redactor: &'a crate::redact::Redactor,
}

/// A started server: the client, and for stdio the process (taken and killed with its group
/// at shutdown), the tail of its stderr and its jail (dropped last).
pub struct Conn {
    pub client: RunningService<RoleClient, ClientConfig>,
    pub process: Mutex<Option<Service>>,
    stderr: Option<Arc<Mutex<Capture>>>,
    _jail: Option<Sandbox>,
}

impl Conn {
    /// The last lines the server wrote to stderr (stdio only), for reports.
    pub fn stderr_tail(&self) -> String {
        self.stderr.as_ref().map(|c| crate::exec::last_lines(c, 8)).unwrap_or_default()
    }
}

fn client_info() -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("hone", env!("CARGO_PKG_VERSION")))
}

/// Open `spec`'s server (a stdio one in `jail`, made for it alone by `sandbox::services`) and
/// list its tools. Not bounded here: the caller bounds it by the server's start timeout, the
/// deadline and cancellation (dropping this kills a stdio server).
pub async fn open(
    spec: &McpServerSpec,
    jail: Result<Sandbox, crate::sandbox::Error>,
    i: &Inputs<'_>,
) -> Result<(Conn, Vec<Tool>), Error> {
    let conn = match &spec.transport {
        McpTransport::Stdio { command, args, env } => stdio(command, args, env, jail?, i).await?,
        McpTransport::Http { url, headers } => http(url, headers, i).await?,
    };
    match list_tools(&conn).await {
        Ok(tools) => Ok((conn, tools)),
        Err(e) => Err(e.with_tail(&conn.stderr_tail())),
    }
}

/// The server's tools, page by page, up to `MAX_PAGES` pages and `MAX_LISTED` tools.
async fn list_tools(conn: &Conn) -> Result<Vec<Tool>, Error> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = conn.client.list_tools(Some(params)).await.map_err(|e| Error::List(Box::new(e)))?;
        tools.extend(page.tools);
        if tools.len() > MAX_LISTED {
            return Err(Error::TooManyTools);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(tools),
        }
    }
    Err(Error::TooManyPages)
}

/// `msg`, and the server's stderr tail when there is one.
pub fn with_tail(msg: String, tail: &str) -> String {
    if tail.trim().is_empty() { msg } else { format!("{msg}; its stderr ended with:\n{tail}") }
}

async fn stdio(command: &str, args: &[String], names: &[String], jail: Sandbox, i: &Inputs<'_>) -> Result<Conn, Error> {
    let mut env = i.command_env.to_vec();
    for name in names {
        let Some(v) = i.run_env.var(name) else {
            return Err(Error::Unset(name.clone()));
        };
        if crate::redact::is_secret_name(name) {
            i.redactor.add(v);
        }
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), v.to_string()));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut process = Service::spawn(command, &argv, i.root, &env, &jail)
        .map_err(|error| Error::Spawn { command: command.to_string(), error })?;
    let (Some(out), Some(inp)) = (process.child.stdout.take(), process.child.stdin.take()) else {
        return Err(Error::Pipes);
    };
    let transport = AsyncRwTransport::new_client(out, inp).with_max_line_length(MAX_MESSAGE);
    let stderr = Some(process.stderr.clone());
    match client_info().serve(transport).await {
        Ok(client) => Ok(Conn { client, process: Mutex::new(Some(process)), stderr, _jail: Some(jail) }),
        Err(e) => {
            // Give a crashing server a moment to finish writing why, and hone to read it.
            process.settle(std::time::Duration::from_millis(500)).await;
            Err(Error::Handshake(Box::new(e)).with_tail(&process.stderr_tail(8)))
        }
    }
}

/// Fill a template (a header value, the URL) from hone's environment. What it takes from there
/// is a credential: it is redacted everywhere.
fn fill(template: &str, what: &str, i: &Inputs<'_>) -> Result<String, Error> {
    let value = expand(template, |n| i.run_env.var(n).map(str::to_string))
        .map_err(|why| Error::Template { what: what.to_string(), why })?;
    for name in crate::spec::mcp::template_vars(template).unwrap_or_default() {
        if let Some(v) = i.run_env.var(name) {
            i.redactor.add(v);
        }
    }
    Ok(value)
}

/// The HTTP client for MCP servers: `crate::net`'s, like the model's (the environment's proxies
/// and CA bundle); it follows no redirect (a redirect would carry the headers, credentials
/// included, to wherever it points).
fn http_client(url: &str) -> Result<reqwest::Client, Error> {
    let b = crate::net::builder(url).map_err(Error::ClientSetup)?;
    b.build().map_err(Error::Client)
}

async fn http(url: &str, headers: &[(String, String)], i: &Inputs<'_>) -> Result<Conn, Error> {
    let url = fill(url, "its `url`", i)?;
    let mut custom = std::collections::HashMap::new();
    for (k, template) in headers {
        let value = fill(template, &format!("its header `{k}`"), i)?;
        let header = |e: &dyn std::fmt::Display| Error::Header { name: k.clone(), why: e.to_string() };
        let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| header(&e))?;
        let mut value = http::HeaderValue::from_str(&value).map_err(|e| header(&e))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let client = http_client(&url)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = custom;
    config.max_json_response_size = MAX_MESSAGE;
    config.max_sse_event_size = MAX_MESSAGE;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let client = client_info().serve(transport).await.map_err(|e| Error::Handshake(Box::new(e)))?;
    Ok(Conn { client, process: Mutex::new(None), stderr: None, _jail: None })
}
