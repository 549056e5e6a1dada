//! TLS for the test servers: a listener that speaks HTTPS as `localhost`, with the test
//! certificate in `tests/data/tls` (see its README).

use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;

pub struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl TlsListener {
    pub fn new(tcp: tokio::net::TcpListener) -> TlsListener {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls");
        let cert = rustls::pki_types::CertificateDer::from(std::fs::read(dir.join("localhost.crt.der")).unwrap());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
            std::fs::read(dir.join("localhost.key.der")).unwrap(),
        ));
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        TlsListener { tcp, acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else { continue };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
