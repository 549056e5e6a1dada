//! One host, two servers: a plain-HTTP front that sends each request whose path starts with a
//! prefix to that prefix's stand-in (the prefix taken off) and every other request to the
//! fallback. A GitHub Enterprise Server serves git and its API (`/api/v3`) on one host; the
//! tests put the git stand-in and the API stand-in behind one name this way.

use super::connect_proxy::Task;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use std::net::SocketAddr;
use std::sync::Arc;

struct Routes {
    /// (prefix, upstream base URL without a trailing `/`).
    prefixed: Vec<(String, String)>,
    fallback: String,
    http: reqwest::Client,
}

/// Start the front on a port of 127.0.0.1; returns its address.
pub async fn start(prefixed: &[(&str, &str)], fallback: &str) -> (SocketAddr, Task) {
    let routes = Arc::new(Routes {
        prefixed: prefixed.iter().map(|(p, u)| (p.to_string(), u.trim_end_matches('/').to_string())).collect(),
        fallback: fallback.trim_end_matches('/').to_string(),
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(forward).with_state(routes);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, Task(task))
}

async fn forward(State(r): State<Arc<Routes>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = r
        .prefixed
        .iter()
        .find_map(|(prefix, up)| path.strip_prefix(prefix.as_str()).map(|rest| format!("{up}{rest}")))
        .unwrap_or_else(|| format!("{}{path}", r.fallback));
    let mut req = r.http.request(reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap(), url);
    for (k, v) in headers.iter().filter(|(k, _)| *k != "host" && *k != "content-length") {
        req = req.header(k.as_str(), v.as_bytes());
    }
    let Ok(resp) = req.body(body.to_vec()).send().await else {
        return Response::builder().status(502).body(Body::empty()).unwrap();
    };
    let mut out = Response::builder().status(resp.status().as_u16());
    for (k, v) in resp.headers().iter().filter(|(k, _)| *k != "transfer-encoding" && *k != "content-length") {
        out = out.header(k.as_str(), v.as_bytes());
    }
    out.body(Body::from(resp.bytes().await.unwrap_or_default())).unwrap()
}
