//! hone's egress proxy: the one way out of a jail whose policy lists hosts
//! (`network: { allow: [...] }`). The jail's network namespace has only loopback; on it listens
//! a socket that hone made there and serves from outside (`jail::Jail::listener`). The proxy
//! reads `CONNECT host:port` or a plain `http://` request, finds the rule that names the host,
//! resolves the name itself, refuses loopback, private, link-local and metadata answers unless
//! the address is listed, connects to the address it checked, and records every connection. A
//! proxy lives as long as its jail's `Sandbox` and serves nothing after it is dropped. A
//! commands' proxy serves a connection only for the commands running when it came, and cuts it
//! when they end (`clients`): a command's network ends with the command.

pub mod clients;
pub mod http;
pub mod ledger;
pub mod pipe;
pub mod resolve;
mod serve;

pub use clients::Command;
pub use ledger::{Connection, HostTally, Ledger};

use crate::policy::network::Rule;
use clients::{Clients, Serves};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Connections served at once; past it, a client waits in the listen queue (and, on a commands'
/// proxy, is closed unread if the commands end first).
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
    clients: std::sync::Weak<Clients>,
}

struct Config {
    purpose: String,
    rules: Vec<Rule>,
    ledger: Ledger,
}

impl Proxy {
    /// Serve `listener` (made inside a jail) for `purpose`, allowing what `rules` name. An MCP
    /// server's proxy (`mcp:NAME`) serves it as long as it runs; setup's and the commands'
    /// serve each command while it runs (`command`). Needs a Tokio runtime.
    pub fn start(
        listener: std::net::TcpListener,
        purpose: &str,
        rules: &[Rule],
        ledger: Ledger,
    ) -> std::io::Result<Proxy> {
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let clients = Clients::new(listener, Serves::of(purpose))?;
        let stop = CancellationToken::new();
        let config = Arc::new(Config { purpose: purpose.into(), rules: rules.to_vec(), ledger: ledger.clone() });
        let weak = Arc::downgrade(&clients);
        let task = tokio::spawn(accept(clients, config, stop.clone()));
        Ok(Proxy { port, purpose: purpose.into(), stop, task, ledger, clients: weak })
    }

    /// A command starts in the jail: the connections it makes are served until it ends
    /// (`Command::end`, once its processes are gone), and then cut and recorded.
    pub fn command(&self) -> Command {
        Clients::command(&self.clients)
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

async fn accept(clients: Arc<Clients>, config: Arc<Config>, stop: CancellationToken) {
    let mut served = tokio::task::JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s,
            () = stop.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        tokio::select! {
            a = clients.next() => match a {
                Ok(Some((client, held))) => {
                    let config = config.clone();
                    served.spawn(async move {
                        serve::serve(client, &config, &held.cut).await;
                        drop((held, slot));
                    });
                }
                // Closed at once: no command runs.
                Ok(None) => {}
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

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "attack_tests.rs"]
mod attack_tests;

#[cfg(test)]
#[path = "command_tests.rs"]
mod command_tests;
