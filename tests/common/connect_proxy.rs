//! A corporate network in miniature: an HTTP proxy on 127.0.0.1 that takes CONNECT tunnels and
//! plain proxied requests, records the `host:port` each one asked for, resolves the test's host
//! names (`model.test`, `api.test`, `git.test`) to local servers, and pipes the bytes; a CA the
//! test makes (`Pki`), with a server certificate for those names; and `tls_front`, which serves
//! that certificate in front of a plain-HTTP stand-in. The names resolve nowhere but in the
//! proxy, so a request that reaches a stand-in went through the proxy.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

/// A CA made for one test, and the certificate it signed for the test's names.
pub struct Pki {
    dir: tempfile::TempDir,
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

impl Pki {
    /// A new CA and a server certificate for `names`, signed by it.
    pub fn new(names: &[&str]) -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, format!("hone proxy test CA {}", names[0]));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = rcgen::CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let mut leaf = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        leaf.distinguished_name.push(DnType::CommonName, names[0]);
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = leaf.signed_by(&key, &ca).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        Pki { dir, cert: cert.der().clone(), key: key.serialize_der() }
    }

    /// The CA certificate, PEM (what `SSL_CERT_FILE` names).
    pub fn ca_pem(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn acceptor(&self, alpn: &[&[u8]]) -> tokio_rustls::TlsAcceptor {
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key.clone().into());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], key)
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

/// A task that is stopped when dropped.
pub struct Task(pub tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serve `pki`'s certificate on a port of 127.0.0.1 and pipe each connection, decrypted, to the
/// plain-HTTP server at `upstream`. Returns the port's address.
pub async fn tls_front(pki: &Pki, upstream: SocketAddr) -> (SocketAddr, Task) {
    tls_front_with(pki, upstream, &[b"http/1.1"]).await
}

/// `tls_front` for an HTTP/2 server (gRPC): the front offers `h2` alone.
pub async fn tls_front_h2(pki: &Pki, upstream: SocketAddr) -> (SocketAddr, Task) {
    tls_front_with(pki, upstream, &[b"h2"]).await
}

async fn tls_front_with(pki: &Pki, upstream: SocketAddr, alpn: &[&[u8]]) -> (SocketAddr, Task) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = pki.acceptor(alpn);
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that does not trust the certificate gives up here.
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let Ok(mut up) = TcpStream::connect(upstream).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    (addr, Task(task))
}

/// The proxy: its URL and what it was asked for.
pub struct ConnectProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    seen: Arc<Mutex<Vec<String>>>,
    _task: Task,
}

impl ConnectProxy {
    /// A proxy that sends `host:port` to the address `routes` gives it (any other to itself).
    pub async fn start(routes: &[(&str, SocketAddr)]) -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<HashMap<String, SocketAddr>> =
            Arc::new(routes.iter().map(|(k, v)| (k.to_ascii_lowercase(), *v)).collect());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else { continue };
                tokio::spawn(serve(client, routes.clone(), log.clone()));
            }
        });
        ConnectProxy { url, seen, _task: Task(task) }
    }

    /// Every request, as `CONNECT host:port` or `GET host:port` (a plain proxied request).
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// Whether some request asked for `host` (any port).
    pub fn saw_host(&self, host: &str) -> bool {
        self.seen().iter().any(|s| s.split(' ').nth(1).and_then(|a| a.rsplit_once(':')).is_some_and(|(h, _)| h == host))
    }
}

/// One client connection: its request head, then a tunnel (CONNECT) or the request forwarded as
/// it is (an absolute-form request, which the stand-ins take).
async fn serve(mut client: TcpStream, routes: Arc<HashMap<String, SocketAddr>>, seen: Arc<Mutex<Vec<String>>>) {
    let mut buf = Vec::new();
    let end = loop {
        let mut chunk = [0u8; 4096];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("").to_string());
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let authority = if connect {
        target.clone()
    } else {
        let rest = target.split_once("://").map_or(target.as_str(), |(_, r)| r);
        let host = rest.split('/').next().unwrap_or("");
        if host.contains(':') { host.to_string() } else { format!("{host}:80") }
    };
    seen.lock().unwrap().push(format!("{method} {authority}"));
    let to = routes.get(&authority.to_ascii_lowercase()).map(|a| a.to_string()).unwrap_or(authority.clone());
    let Ok(mut up) = TcpStream::connect(&to).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n").await;
        return;
    };
    if connect {
        if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
            return;
        }
        if up.write_all(&buf[end..]).await.is_err() {
            return;
        }
    } else if up.write_all(&buf).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut up).await;
}
