//! The bytes of one allowed connection, both ways: counted, capped, and ended when nothing has
//! moved either way for the idle timeout.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// Each direction's buffer: large enough that a fast link is not bound by system calls.
const BUF: usize = 64 * 1024;

/// The bytes a connection has moved so far, each way (read by the ledger while it is open).
#[derive(Debug, Default)]
pub struct Counters {
    /// From the client to the server.
    pub sent: AtomicU64,
    /// From the server to the client.
    pub received: AtomicU64,
}

/// Copy both ways between `client` and `server` until both sides close, nothing moves for
/// `idle`, or more than `max_bytes` have moved in all; counted into `counters` as it goes.
/// Returns why it ended early (idle, too many bytes, an error), if it did.
pub async fn both_ways<C, S>(
    client: C,
    server: S,
    idle: Duration,
    max_bytes: u64,
    counters: Arc<Counters>,
) -> Option<String>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let start = Instant::now();
    let shared = Arc::new(Shared { last: AtomicU64::new(0), total: AtomicU64::new(0), max: max_bytes, start });
    let mut client = Counted { inner: client, sent: true, counters: counters.clone(), shared: shared.clone() };
    let mut server = Counted { inner: server, sent: false, counters: counters.clone(), shared: shared.clone() };
    tokio::select! {
        r = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, BUF, BUF) => r.err().map(|e| e.to_string()),
        () = idle_for(&shared, idle) => Some(format!("nothing moved for {} s", idle.as_secs())),
    }
}

struct Shared {
    /// Milliseconds after `start` of the last byte read either way.
    last: AtomicU64,
    total: AtomicU64,
    max: u64,
    start: Instant,
}

/// Returns once nothing has been read either way for `idle`.
async fn idle_for(shared: &Shared, idle: Duration) {
    loop {
        let last = shared.start + Duration::from_millis(shared.last.load(Ordering::Relaxed));
        let due = last + idle;
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

/// A stream whose reads are counted (as sent when it is the client, else as received, and into
/// the shared total) and stamped.
struct Counted<T> {
    inner: T,
    sent: bool,
    counters: Arc<Counters>,
    shared: Arc<Shared>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            let c = &self.counters;
            if self.sent { &c.sent } else { &c.received }.fetch_add(n, Ordering::Relaxed);
            let s = &self.shared;
            s.last.store(s.start.elapsed().as_millis() as u64, Ordering::Relaxed);
            if s.total.fetch_add(n, Ordering::Relaxed) + n > s.max {
                return Poll::Ready(Err(std::io::Error::other(format!("more than {} bytes moved", s.max))));
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn bytes_are_counted_each_way_until_both_sides_close() {
        let (client, mut c_far) = tokio::io::duplex(64);
        let (server, mut s_far) = tokio::io::duplex(64);
        let n: Arc<Counters> = Arc::default();
        let run = tokio::spawn(both_ways(client, server, Duration::from_secs(60), 1 << 20, n.clone()));
        c_far.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        s_far.read_exact(&mut got).await.unwrap();
        s_far.write_all(b"hi there").await.unwrap();
        let mut back = [0u8; 8];
        c_far.read_exact(&mut back).await.unwrap();
        drop((c_far, s_far));
        assert_eq!(run.await.unwrap(), None);
        let (sent, received) = (n.sent.load(Ordering::Relaxed), n.received.load(Ordering::Relaxed));
        assert_eq!((sent, received, &got, &back), (5, 8, b"hello", b"hi there"));
    }

    #[tokio::test]
    async fn a_connection_past_its_byte_cap_is_cut() {
        let (client, mut c_far) = tokio::io::duplex(1 << 16);
        let (server, _s_far) = tokio::io::duplex(1 << 16);
        let run = tokio::spawn(both_ways(client, server, Duration::from_secs(60), 1000, Arc::default()));
        c_far.write_all(&[0u8; 4000]).await.unwrap();
        assert!(run.await.unwrap().unwrap().contains("more than 1000 bytes"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_where_nothing_moves_ends_at_the_idle_timeout() {
        let (client, _c_far) = tokio::io::duplex(64);
        let (server, _s_far) = tokio::io::duplex(64);
        let cut = both_ways(client, server, Duration::from_secs(300), 1000, Arc::default()).await;
        assert_eq!(cut.as_deref(), Some("nothing moved for 300 s"));
    }
}
