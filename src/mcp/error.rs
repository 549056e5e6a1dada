//! Why an MCP server did not start: the MCP layer's error (`E_MCP`), its text what the server's
//! record and event say after "the MCP server `NAME` did not start: ".

use super::connect::{MAX_LISTED, MAX_PAGES};
use crate::error::{Code, HoneError};
use std::time::Duration;

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Its jail (`sandbox::services`) could not be made.
    #[error(transparent)]
    Jail(#[from] crate::sandbox::Error),
    /// A variable its `env` names is not set in hone's environment.
    #[error("the environment variable `{0}` (in its `env`) is not set")]
    Unset(String),
    #[error("cannot start `{command}`: {error}")]
    Spawn { command: String, error: std::io::Error },
    #[error("its stdin and stdout could not be piped")]
    Pipes,
    #[error("the MCP handshake failed: {0}")]
    Handshake(Box<rmcp::service::ClientInitializeError>),
    #[error("listing its tools failed: {0}")]
    List(Box<rmcp::ServiceError>),
    #[error("it lists more than {MAX_LISTED} tools")]
    TooManyTools,
    #[error("its tool list goes on past {MAX_PAGES} pages")]
    TooManyPages,
    /// A template (`what`: its `url`, a header) names a variable that is not set.
    #[error("{what}: {why}")]
    Template { what: String, why: crate::spec::mcp::TemplateError },
    /// Its HTTP client could not be set up from hone's environment (its proxies, its CAs).
    #[error("its HTTP client: {}", .0.message)]
    ClientSetup(HoneError),
    /// A header's name or value is not one HTTP allows.
    #[error("its header `{name}`: {why}")]
    Header { name: String, why: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("it did not finish starting within {}", crate::spec::duration::format(*.0))]
    StartTimeout(Duration),
    #[error("the run was cancelled")]
    Cancelled,
    /// `error`, with the last lines the server wrote to stderr.
    #[error("{error}; its stderr ended with:\n{tail}")]
    Tail { error: Box<Error>, tail: String },
}

impl Error {
    /// `self`, and the server's stderr `tail` when there is one.
    pub fn with_tail(self, tail: &str) -> Error {
        if tail.trim().is_empty() { self } else { Error::Tail { error: Box::new(self), tail: tail.to_string() } }
    }

    /// `E_MCP`, but a start cut short by cancellation is `E_CANCELLED`.
    pub fn code(&self) -> Code {
        match self {
            Error::Cancelled => Code::Cancelled,
            Error::Tail { error, .. } => error.code(),
            _ => Code::Mcp,
        }
    }
}

impl From<Error> for HoneError {
    fn from(e: Error) -> Self {
        HoneError::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_start_is_cancelled_and_every_other_failure_is_the_servers() {
        assert_eq!(Error::Cancelled.code(), Code::Cancelled);
        assert_eq!(Error::Cancelled.with_tail("boom\n").code(), Code::Cancelled);
        let unset = Error::Unset("TOKEN".into());
        assert_eq!(unset.code(), Code::Mcp);
        assert_eq!(Error::Jail(crate::sandbox::Error::NoJail).code(), Code::Mcp);
        assert_eq!(Error::StartTimeout(Duration::from_secs(1)).code(), Code::Mcp);
        let h = HoneError::from(Error::Cancelled);
        assert_eq!((h.code, h.message.as_str()), (Code::Cancelled, "the run was cancelled"));
    }

    #[test]
    fn the_stderr_tail_follows_the_error_when_there_is_one() {
        assert_eq!(Error::Pipes.with_tail("  \n").to_string(), "its stdin and stdout could not be piped");
        assert_eq!(
            Error::Unset("K".into()).with_tail("line 1\nline 2").to_string(),
            "the environment variable `K` (in its `env`) is not set; its stderr ended with:\nline 1\nline 2"
        );
        assert_eq!(Error::Jail(crate::sandbox::Error::NoJail).to_string(), "it has no jail");
        assert_eq!(Error::StartTimeout(Duration::from_secs(1)).to_string(), "it did not finish starting within 1s");
        assert_eq!(Error::TooManyPages.to_string(), "its tool list goes on past 20 pages");
    }
}
