//! What can go wrong with telemetry: its variables, or the export. Each is one warning in the
//! report; none changes a run's outcome.

use crate::error::{Code, HoneError};

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TelemetryError {
    #[error("`{var}` is `{value}`: hone exports only with `otlp` (or nothing, with `none`)")]
    Exporter { var: String, value: String },
    #[error("`OTEL_EXPORTER_OTLP_PROTOCOL` is `{0}`: hone speaks `http/protobuf` and `grpc`")]
    Protocol(String),
    #[error("the OTLP endpoint `{0}` is not an http(s) URL")]
    Endpoint(String),
    #[error(
        "the OTLP endpoint `{0}` is plain http to another machine, and headers (often a key) would cross the network in clear"
    )]
    PlainHeaders(String),
    #[error("`{var}` is `{value}`, not a number of milliseconds")]
    Timeout { var: String, value: String },
    #[error("the OTLP endpoint `{0}` carries a user or password")]
    Userinfo(String),
    #[error("`{0}` is not a list of `key=value` pairs separated by commas")]
    Pairs(String),
    #[error("the OTLP exporter could not be built: {0}")]
    Build(String),
    #[error("telemetry was not exported: {0}")]
    Export(String),
    #[error("the collector did not answer within {0:?}: what was left is dropped")]
    Flush(std::time::Duration),
}

impl TelemetryError {
    pub const fn code(&self) -> Code {
        Code::Telemetry
    }

    fn hint(&self) -> &'static str {
        match self {
            Self::Export(_) | Self::Flush(_) => {
                "check that the collector `OTEL_EXPORTER_OTLP_ENDPOINT` names is up and reachable from here (through the proxy hone uses)"
            }
            Self::PlainHeaders(_) => "use an https endpoint, or a collector on this machine",
            Self::Userinfo(_) => "give the credential in `OTEL_EXPORTER_OTLP_HEADERS` (a header), not in the URL",
            _ => "see docs/telemetry.md for the variables hone reads",
        }
    }

    /// The warning the report carries.
    pub fn warning(&self) -> String {
        format!("telemetry: {self} ({})", self.hint())
    }
}

impl From<TelemetryError> for HoneError {
    fn from(e: TelemetryError) -> HoneError {
        HoneError::new(e.code(), e.to_string()).hint(e.hint())
    }
}
