//! A host on loopback that answers every HTTP request with the same body and closes: the listed
//! host of the egress tests that does answer, or where a setup step fetches a file from.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve `body` to every request on a fresh loopback port; the port.
pub async fn answering_with(body: &str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// A listed host that answers every request `answered`, and closes.
pub async fn answering() -> u16 {
    answering_with("answered").await
}
