//! One connection to hone's proxy, through its states: its request head being read, its host
//! resolved and connected to, then a tunnel or a plain-HTTP request under way. In each, `cut`
//! (its commands ended, `clients`) ends it at once, and a client that goes away while its host is
//! being reached ends it too; what had a request is recorded with why it ended.

use super::{CONNECT_TIMEOUT, Config, Connection, HEAD_TIMEOUT, IDLE_TIMEOUT, MAX_BYTES, RESOLVE_TIMEOUT};
use super::{http, pipe, resolve};
use crate::policy::network::{Rule, Target, address_allowed, allowing};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Why a connection cut by its commands' end ended, as recorded.
pub const ENDED: &str = "cut when the command that opened it ended";
/// The most a client may send while its host is being reached (kept, and sent on after).
const MAX_EARLY: usize = 64 * 1024;

/// What happened to a request the proxy could read.
enum Outcome {
    Refused {
        status: u16,
        reason: String,
        body: String,
    },
    Connected {
        server: TcpStream,
        address: SocketAddr,
        rule: String,
    },
    /// Given up before the host was reached, for this reason (its commands ended, its client
    /// went away): allowed, and unanswered.
    Abandoned(String),
}

/// Serve `client` until it is done, refused, idle, or `cut`.
pub async fn serve(mut client: TcpStream, config: &Config, cut: &CancellationToken) {
    let started = Instant::now();
    let head = tokio::select! {
        h = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)) => h,
        // Nothing was asked yet: nothing to record.
        () = cut.cancelled() => return,
    };
    let parsed = match head {
        Ok(Ok((head, rest))) => http::parse(&head).map(|r| (r, rest)),
        Ok(Err(e)) => Err(e),
        // No head in time: closed unanswered.
        Err(_) => return,
    };
    let (request, mut rest) = match parsed {
        Ok(r) => r,
        Err(http::BadRequest::Incomplete) => return,
        Err(http::BadRequest::TooLong) => {
            let answer = http::answer(431, "Request Header Fields Too Large", "");
            return answer_unless_cut(&mut client, &answer, cut).await;
        }
        Err(http::BadRequest::Malformed(why)) => {
            let answer = http::answer(400, "Bad Request", &format!("hone's proxy: {why}\n"));
            return answer_unless_cut(&mut client, &answer, cut).await;
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
    let outcome = tokio::select! {
        // A refusal is decided without waiting: it is answered, whatever else is ready.
        biased;
        o = decide(config, &request.target, request.port) => o,
        () = cut.cancelled() => Outcome::Abandoned(ENDED.into()),
        why = gone(&mut client, &mut rest, request.tunnel) => Outcome::Abandoned(why),
    };
    let mut failed = |allowed: bool, reason: &str| {
        // A host the policy allows that could not be reached is allowed, and failed.
        record.allowed = allowed;
        record.rule = allowing(&config.rules, &request.target, request.port).map(Rule::cite).filter(|_| allowed);
        record.reason = Some(reason.to_string());
        record.duration_ms = started.elapsed().as_millis() as u64;
        // Recorded before the client hears it, so the command's result can tell the model.
        config.ledger.record(record.clone());
    };
    match outcome {
        Outcome::Abandoned(why) => failed(true, &why),
        Outcome::Refused { status, reason, body } => {
            failed(status != 403, &reason);
            answer_unless_cut(&mut client, &http::answer(status, &reason, &body), cut).await;
        }
        Outcome::Connected { server, address, rule } => {
            record.allowed = true;
            record.rule = Some(rule);
            record.address = Some(address.to_string());
            // Every byte sent to the server is counted, the request head hone wrote among them.
            let counters = Arc::new(pipe::Counters::default());
            let live = config.ledger.open(record, counters.clone());
            let first = [if request.tunnel { &[][..] } else { &request.forward }, &rest].concat();
            let ended = tokio::select! {
                e = forward(client, server, request.tunnel, &first, counters) => e,
                () = cut.cancelled() => Some(ENDED.to_string()),
            };
            live.finish(ended);
        }
    }
}

/// Send `answer` to the client, unless cut first.
async fn answer_unless_cut(client: &mut TcpStream, answer: &[u8], cut: &CancellationToken) {
    tokio::select! {
        _ = client.write_all(answer) => {}
        () = cut.cancelled() => {}
    }
}

/// Open the tunnel (or send the request) and move the bytes both ways; why it ended early, if
/// it did.
async fn forward(
    mut client: TcpStream,
    mut server: TcpStream,
    tunnel: bool,
    first: &[u8],
    counters: Arc<pipe::Counters>,
) -> Option<String> {
    if tunnel && let Err(e) = client.write_all(http::TUNNEL_OPEN).await {
        return Some(e.to_string());
    }
    if let Err(e) = server.write_all(first).await {
        return Some(e.to_string());
    }
    counters.sent.fetch_add(first.len() as u64, std::sync::atomic::Ordering::Relaxed);
    pipe::both_ways(client, server, IDLE_TIMEOUT, MAX_BYTES, counters).await
}

/// Returns, with why, once the client has gone (closed or reset) while its host is being
/// reached; what it sends meanwhile (a TLS hello, a request body) is kept in `early`. A
/// plain-HTTP client that stops sending may only have half-closed after its request, and is
/// served; a client that closes before its tunnel is open has gone.
async fn gone(client: &mut TcpStream, early: &mut Vec<u8>, tunnel: bool) -> String {
    let mut chunk = [0u8; 4096];
    while early.len() < MAX_EARLY {
        match client.read(&mut chunk).await {
            Ok(0) if tunnel => return "the client went away before its tunnel was open".into(),
            Ok(0) => break,
            Ok(n) => early.extend_from_slice(&chunk[..n]),
            Err(e) => return format!("the client went away before its request was sent: {e}"),
        }
    }
    std::future::pending().await
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
