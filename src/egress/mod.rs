//! hone's egress proxy: the one way out of a jail whose policy lists hosts
//! (`network: { allow: [...] }`). The jail's network namespace has only loopback; on it listens
//! a socket that hone made there and serves from outside (`jail::Jail::listener`). The proxy
//! reads `CONNECT host:port` or a plain `http://` request, finds the rule that names the host,
//! resolves the name itself, refuses loopback, private, link-local and metadata answers unless
//! the address is listed, connects to the address it checked, and records every connection. A
//! proxy lives as long as its jail's `Sandbox` and serves nothing after it is dropped.

pub mod http;
pub mod ledger;
pub mod pipe;
pub mod resolve;

pub use ledger::{Connection, HostTally, Ledger};

use crate::policy::network::{Rule, Target, address_allowed, allowing};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Connections served at once; past it, a client waits in the listen queue.
const MAX_CONNECTIONS: usize = 64;
/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// A connection where nothing moves either way for this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The most one connection may move, both ways together.
const MAX_BYTES: u64 = 4 << 30;

/// A running proxy; dropping it stops it and every connection it serves.
pub struct Proxy {
    port: u16,
    purpose: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    ledger: Ledger,
}

struct Config {
    purpose: String,
    rules: Vec<Rule>,
    ledger: Ledger,
}

impl Proxy {
    /// Serve `listener` (made inside a jail) for `purpose`, allowing what `rules` name. Needs a
    /// Tokio runtime.
    pub fn start(
        listener: std::net::TcpListener,
        purpose: &str,
        rules: &[Rule],
        ledger: Ledger,
    ) -> std::io::Result<Proxy> {
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let stop = CancellationToken::new();
        let config = Arc::new(Config { purpose: purpose.into(), rules: rules.to_vec(), ledger: ledger.clone() });
        let task = tokio::spawn(accept(listener, config, stop.clone()));
        Ok(Proxy { port, purpose: purpose.into(), stop, task, ledger })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    #[cfg(test)]
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// A mark for `refusals_since`.
    pub fn mark(&self) -> usize {
        self.ledger.mark(&self.purpose)
    }

    /// What this proxy refused after `mark`, as a note for the command's result (empty if
    /// nothing): the model learns what was refused and which rule would allow it.
    pub fn refusals_since(&self, mark: usize) -> String {
        let (shown, count) = self.ledger.refused_since(mark, &self.purpose);
        if count == 0 {
            return String::new();
        }
        let mut note = format!("\nhone's network proxy refused {count} connection(s) during this command:\n");
        for s in &shown {
            note.push_str(&format!("- {s}\n"));
        }
        note.push_str(
            "Only the hosts the policy lists can be reached; say in your summary which host the work needs.\n",
        );
        note
    }

    /// The variables that send tools through the proxy (both spellings; loopback stays direct).
    pub fn env(&self) -> Vec<(String, String)> {
        let url = format!("http://127.0.0.1:{}", self.port);
        let mut v: Vec<(String, String)> = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
            .iter()
            .map(|k| (k.to_string(), url.clone()))
            .collect();
        for k in ["NO_PROXY", "no_proxy"] {
            v.push((k.into(), "localhost,127.0.0.1,::1".into()));
        }
        v
    }

    /// Stop accepting and wait for the connections under way to end.
    #[cfg(test)]
    pub async fn stop(mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
    }

    /// The names `env` sets, and the other proxy variables a command must not inherit.
    pub const VARS: [&'static str; 8] =
        ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"];
}

impl Proxy {
    /// Stop serving now: no new connection, and every one under way is cut (and recorded).
    /// Setup's proxy is closed when setup ends; a run's, when its `Sandbox` goes.
    pub fn close(&self) {
        if !self.stop.is_cancelled() {
            self.stop.cancel();
            self.task.abort();
            tracing::debug!("egress proxy for {} (port {}) closed", self.purpose, self.port);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.close();
    }
}

async fn accept(listener: tokio::net::TcpListener, config: Arc<Config>, stop: CancellationToken) {
    let mut served = tokio::task::JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s,
            () = stop.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        tokio::select! {
            a = listener.accept() => match a {
                Ok((client, _)) => {
                    let config = config.clone();
                    served.spawn(async move {
                        serve(client, &config).await;
                        drop(slot);
                    });
                }
                // Out of descriptors or the like: let connections finish before trying again.
                Err(_) => {
                    let _ = tokio::time::timeout(Duration::from_millis(100), served.join_next()).await;
                }
            },
            () = stop.cancelled() => break,
        }
        while served.try_join_next().is_some() {}
    }
    // Stopped: what is under way finishes (dropping the proxy aborts this task, and with it
    // every connection, at once).
    while served.join_next().await.is_some() {}
}

/// What happened to a request the proxy could read.
enum Outcome {
    Refused { status: u16, reason: String, body: String },
    Connected { server: TcpStream, address: SocketAddr, rule: String },
}

async fn serve(mut client: TcpStream, config: &Config) {
    let started = Instant::now();
    let parsed = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok((head, rest))) => http::parse(&head).map(|r| (r, rest)),
        Ok(Err(e)) => Err(e),
        // No head in time: closed unanswered.
        Err(_) => return,
    };
    let (request, rest) = match parsed {
        Ok(r) => r,
        Err(http::BadRequest::Incomplete) => return,
        Err(http::BadRequest::TooLong) => {
            let _ = client.write_all(&http::answer(431, "Request Header Fields Too Large", "")).await;
            return;
        }
        Err(http::BadRequest::Malformed(why)) => {
            let _ = client.write_all(&http::answer(400, "Bad Request", &format!("hone's proxy: {why}\n"))).await;
            return;
        }
    };
    let mut record = Connection {
        purpose: config.purpose.clone(),
        host: request.target.to_string(),
        port: request.port,
        allowed: false,
        rule: None,
        reason: None,
        address: None,
        bytes_sent: 0,
        bytes_received: 0,
        duration_ms: 0,
    };
    match decide(config, &request.target, request.port).await {
        Outcome::Refused { status, reason, body } => {
            // A host the policy allows that could not be reached is allowed, and failed.
            record.allowed = status != 403;
            record.rule =
                allowing(&config.rules, &request.target, request.port).filter(|_| record.allowed).map(Rule::cite);
            record.reason = Some(reason.clone());
            record.duration_ms = started.elapsed().as_millis() as u64;
            // Recorded before the client hears it, so the command's result can tell the model.
            config.ledger.record(record);
            let _ = client.write_all(&http::answer(status, &reason, &body)).await;
        }
        Outcome::Connected { mut server, address, rule } => {
            record.allowed = true;
            record.rule = Some(rule);
            record.address = Some(address.to_string());
            // Every byte sent to the server is counted, the request head hone wrote among them.
            let counters = Arc::new(pipe::Counters::default());
            let live = config.ledger.open(record, counters.clone());
            let first = [if request.tunnel { &[][..] } else { &request.forward }, &rest].concat();
            let opened = if request.tunnel { client.write_all(http::TUNNEL_OPEN).await } else { Ok(()) };
            let sent = match opened {
                Ok(()) => server.write_all(&first).await,
                Err(e) => Err(e),
            };
            let cut = match sent {
                Ok(()) => {
                    counters.sent.fetch_add(first.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    pipe::both_ways(client, server, IDLE_TIMEOUT, MAX_BYTES, counters).await
                }
                Err(e) => Some(e.to_string()),
            };
            live.finish(cut);
        }
    }
}

/// Read up to the end of the request head: (the head, what came after it).
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), http::BadRequest> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.map_err(|_| http::BadRequest::Incomplete)?;
        if n == 0 {
            return Err(http::BadRequest::Incomplete);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = http::head_end(&buf[from..]).map(|e| e + from) {
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > http::MAX_HEAD {
            return Err(http::BadRequest::TooLong);
        }
    }
}

/// The rule for `target:port`, the addresses it may reach, and a connection to the first that
/// answers; or why not. The address connected to is the one checked: no second lookup.
async fn decide(config: &Config, target: &Target, port: u16) -> Outcome {
    let key = match config.purpose.as_str() {
        "setup" => "setup.network.allow",
        p if p.starts_with("mcp:") => "mcp.network.allow",
        _ => "network.allow",
    };
    let Some(rule) = allowing(&config.rules, target, port) else {
        let add = match target {
            Target::Name(n) => format!("`{n}` (or `{n}:{port}`)"),
            Target::Addr(_) => format!("the address `{target}:{port}` (addresses are reached only when listed)"),
        };
        let reason = format!("{target}:{port} is not in the policy's {key}");
        let body = format!(
            "hone refused the connection to {target}:{port}: no rule of `{key}` names it.\nTo allow it, add {add} to `{key}` in the policy.\n"
        );
        return Outcome::Refused { status: 403, reason, body };
    };
    let addresses = match target {
        Target::Addr(ip) => vec![SocketAddr::new(*ip, port)],
        Target::Name(name) => match resolved(config, name, port).await {
            Ok(a) => a,
            Err(refusal) => return refusal,
        },
    };
    let mut last = String::new();
    for address in addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(server)) => return Outcome::Connected { server, address, rule: rule.cite() },
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = format!("no answer in {} s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    let reason = format!("{target}:{port} could not be reached: {last}");
    Outcome::Refused { status: 502, reason: reason.clone(), body: format!("hone's proxy: {reason}\n") }
}

/// The addresses of `name` that may be reached: public ones, and any a rule lists.
async fn resolved(config: &Config, name: &str, port: u16) -> Result<Vec<SocketAddr>, Outcome> {
    let (found, trusted) = resolve::lookup(name, port, RESOLVE_TIMEOUT).await.map_err(|e| {
        let reason = format!("{name} could not be resolved: {e}");
        Outcome::Refused { status: 502, reason: reason.clone(), body: format!("hone's proxy: {reason}\n") }
    })?;
    let (ok, special): (Vec<SocketAddr>, Vec<SocketAddr>) =
        found.into_iter().partition(|a| trusted || address_allowed(&config.rules, a.ip(), port).is_ok());
    match (ok.is_empty(), special.first()) {
        (false, _) => Ok(ok),
        (true, Some(a)) => {
            let why = crate::policy::network::special(a.ip()).unwrap_or("special");
            let reason = format!("{name} resolves to {} ({why}), which is reached only when listed", a.ip());
            let body = format!(
                "hone refused the connection to {name}:{port}: the name resolves to {} ({why}).\nAddresses like it are reached only when the policy lists the address itself.\n",
                a.ip()
            );
            Err(Outcome::Refused { status: 403, reason, body })
        }
        (true, None) => {
            let reason = format!("{name} has no address");
            Err(Outcome::Refused { status: 502, reason: reason.clone(), body: format!("hone's proxy: {reason}\n") })
        }
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "attack_tests.rs"]
mod attack_tests;
