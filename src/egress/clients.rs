//! Whose a proxy's connections are, and so when they end. A proxy serves either commands (the
//! run's, setup's) or one long-lived service (an MCP server, in a jail of its own):
//! - A commands' proxy serves a connection only while a command runs (`Proxy::command`): it
//!   belongs to the commands running when it was accepted, and is cut when the last of them
//!   ends, in whatever state it is (its request head being read, its host being resolved or
//!   connected to, a tunnel or a plain-HTTP request under way). A connection accepted while no
//!   command runs is closed at once, and when the last command ends, the connections still
//!   queued for the proxy are closed unread: what a command opened can never be served for, or
//!   hold a slot against, the next one.
//! - A service's proxy serves its connections for as long as it runs (until its jail is done).
//!
//! Accepting a connection and giving it its commands is one step under the lock that ending a
//! command takes, so no connection falls between a command's end and the next one's start.
//! The accept loop alone holds `Clients` (the listener) for good: once it stops, the listener
//! is closed, whatever commands or connections remain.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, Weak};
use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// What a proxy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serves {
    /// Commands, one after another (or several at once): connections end with them.
    Commands,
    /// One long-lived process: connections live as long as the proxy.
    Service,
}

impl Serves {
    /// An MCP server's proxy (purpose `mcp:NAME`) serves a service; setup's and the run's
    /// (`setup`, `commands`) serve commands.
    pub fn of(purpose: &str) -> Serves {
        if purpose.starts_with("mcp:") { Serves::Service } else { Serves::Commands }
    }
}

/// The proxy's listener and the commands and connections it serves: owned by the accept loop,
/// known to each connection and each running command.
pub struct Clients {
    serves: Serves,
    listener: AsyncFd<std::net::TcpListener>,
    state: Mutex<State>,
    /// Bumped whenever a connection ends (`Command::end` waits on it).
    ended: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// The commands running now.
    running: BTreeSet<u64>,
    /// Connections being served (commands' proxies only): the commands running when each was
    /// accepted, and what cuts it.
    served: BTreeMap<u64, (Vec<u64>, CancellationToken)>,
}

impl State {
    fn orphaned(&self, commands: &[u64]) -> bool {
        !commands.iter().any(|c| self.running.contains(c))
    }
}

/// A connection being served: `cut` is cancelled when the commands it belongs to have ended.
/// Dropped when the connection ends.
pub struct Held {
    clients: Weak<Clients>,
    id: u64,
    pub cut: CancellationToken,
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(clients) = self.clients.upgrade() else { return };
        if let Ok(mut s) = clients.state.lock() {
            s.served.remove(&self.id);
        }
        clients.ended.send_modify(|n| *n += 1);
    }
}

impl Clients {
    /// `listener` must be non-blocking. Needs a Tokio runtime.
    pub fn new(listener: std::net::TcpListener, serves: Serves) -> std::io::Result<Arc<Clients>> {
        // SAFETY: the `AsyncFd` owns the listener, so its descriptor stays open and the same
        // for as long as the `AsyncFd` lives.
        let listener = unsafe { AsyncFd::register(listener) }?;
        let (ended, _) = tokio::sync::watch::channel(0);
        Ok(Arc::new(Clients { serves, listener, state: Mutex::default(), ended }))
    }

    /// The next connection to serve: `None` for one closed at once (no command runs).
    pub async fn next(self: &Arc<Self>) -> std::io::Result<Option<(TcpStream, Held)>> {
        loop {
            let mut ready = self.listener.readable().await?;
            if let Ok(taken) = ready.try_io(|l| self.take(l.get_ref())) {
                return taken;
            }
        }
    }

    /// Accept one connection and give it the commands running now, under the lock.
    fn take(self: &Arc<Self>, listener: &std::net::TcpListener) -> std::io::Result<Option<(TcpStream, Held)>> {
        let mut s = self.state.lock().map_err(|_| std::io::Error::other("the proxy's state is poisoned"))?;
        let (stream, _) = listener.accept()?;
        let commands: Vec<u64> = s.running.iter().copied().collect();
        if self.serves == Serves::Commands && commands.is_empty() {
            return Ok(None);
        }
        stream.set_nonblocking(true)?;
        let stream = TcpStream::from_std(stream)?;
        s.next += 1;
        let (id, cut) = (s.next, CancellationToken::new());
        if self.serves == Serves::Commands {
            s.served.insert(id, (commands, cut.clone()));
        }
        Ok(Some((stream, Held { clients: Arc::downgrade(self), id, cut })))
    }

    /// A command starts: connections accepted from now on are (also) its. (Nothing, once the
    /// proxy has stopped.)
    pub fn command(this: &Weak<Self>) -> Command {
        let id = this.upgrade().and_then(|c| {
            let mut s = c.state.lock().ok()?;
            s.next += 1;
            let id = s.next;
            s.running.insert(id);
            Some(id)
        });
        Command { clients: this.clone(), id: id.unwrap_or(0), ended: false }
    }

    /// Command `id` ended: cut the connections no running command holds, and, if none runs,
    /// close the connections still queued. Returns how many were closed unread.
    fn finish(&self, id: u64) -> usize {
        let Ok(mut s) = self.state.lock() else { return 0 };
        s.running.remove(&id);
        if self.serves != Serves::Commands {
            return 0;
        }
        for (commands, cut) in s.served.values() {
            if s.orphaned(commands) {
                cut.cancel();
            }
        }
        let mut closed = 0;
        if s.running.is_empty() {
            // Queued by the commands that ended: nobody is left to serve them for.
            while let Ok((stream, _)) = self.listener.get_ref().accept() {
                drop(stream);
                closed += 1;
            }
        }
        closed
    }

    /// Whether every connection no running command holds has ended.
    fn settled(&self) -> bool {
        self.state.lock().map(|s| !s.served.values().any(|(c, _)| s.orphaned(c))).unwrap_or(true)
    }
}

/// A command running with the proxy (`Proxy::command`). Its connections end with it: `end`
/// cuts them and waits until they are recorded; dropping it cuts them without waiting.
pub struct Command {
    clients: Weak<Clients>,
    id: u64,
    ended: bool,
}

impl Command {
    /// The command ended (its processes are gone): cut its connections, close what it left
    /// queued, and return once its connections have ended and are in the record.
    pub async fn end(mut self) {
        self.ended = true;
        let Some(clients) = self.clients.upgrade() else { return };
        let mut changes = clients.ended.subscribe();
        let closed = clients.finish(self.id);
        if closed > 0 {
            tracing::debug!("closed {closed} connection(s) a finished command left queued for hone's proxy");
        }
        // (The proxy stopping cuts every connection too.)
        while !clients.settled() {
            if changes.changed().await.is_err() {
                break;
            }
        }
    }
}

impl Drop for Command {
    fn drop(&mut self) {
        if !self.ended
            && let Some(clients) = self.clients.upgrade()
        {
            clients.finish(self.id);
        }
    }
}
