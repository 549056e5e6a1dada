//! Name resolution for hone's proxy: the system's resolver, bounded by a timeout. Debug builds
//! (the test suite's) also read `HONE_TEST_RESOLVE` (`name=address,...`), the test harness's
//! stand-in for public DNS; a release build never reads it, and no policy or job can set it.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The addresses of `name` at `port`, and whether they came from the test harness's table
/// (whose loopback answers stand for public addresses).
pub async fn lookup(name: &str, port: u16, timeout: Duration) -> std::io::Result<(Vec<SocketAddr>, bool)> {
    if let Some(ips) = overridden(name) {
        return Ok((ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect(), true));
    }
    let found = tokio::time::timeout(timeout, tokio::net::lookup_host((name, port)))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "name resolution timed out"))??;
    Ok((found.collect(), false))
}

#[cfg(debug_assertions)]
fn overridden(name: &str) -> Option<Vec<IpAddr>> {
    let table = std::env::var("HONE_TEST_RESOLVE").ok()?;
    let ips: Vec<IpAddr> = table
        .split(',')
        .filter_map(|e| e.split_once('='))
        .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .filter_map(|(_, a)| a.trim().parse().ok())
        .collect();
    (!ips.is_empty()).then_some(ips)
}

#[cfg(not(debug_assertions))]
fn overridden(_: &str) -> Option<Vec<IpAddr>> {
    None
}
