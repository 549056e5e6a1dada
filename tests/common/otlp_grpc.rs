//! The OTLP/gRPC receiver stand-in: tonic's server with OpenTelemetry's own generated trace and
//! metrics services (`opentelemetry-proto`), recording what arrives (and each call's metadata) in
//! the same `Received` as the HTTP stand-in, so the same helpers read it.

use super::connect_proxy::Task;
use super::otlp::{Received, Receiver};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use prost::Message;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status};

#[derive(Clone)]
struct Collector(Arc<Mutex<Received>>);

fn metadata<T>(r: &Request<T>) -> HashMap<String, String> {
    r.metadata()
        .clone()
        .into_headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect()
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        r: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut g = self.0.lock().unwrap();
        g.headers.push(metadata(&r));
        g.raw.push(r.get_ref().encode_to_vec());
        g.traces.push(r.into_inner());
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        r: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let mut g = self.0.lock().unwrap();
        g.headers.push(metadata(&r));
        g.raw.push(r.get_ref().encode_to_vec());
        g.metrics.push(r.into_inner());
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC collector on a port of 127.0.0.1 (plain HTTP/2); its `url` is `http://127.0.0.1:PORT`.
pub async fn start() -> Receiver {
    let got = Arc::new(Mutex::new(Received::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let c = Collector(got.clone());
    let server = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(c.clone()))
        .add_service(MetricsServiceServer::new(c))
        .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener));
    let task = tokio::spawn(async move {
        let _ = server.await;
    });
    Receiver::of(url, got, Task(task))
}
