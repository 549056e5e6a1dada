//! Why a sandbox (a jail, and the proxy that is its way out) could not be made: the sandbox
//! layer's error, with its `Code`.

use crate::error::{Code, HoneError};
use crate::jail::StartError;
use std::sync::Arc;

/// Why a sandbox could not be made. The text is what the run (or the MCP server's record) says.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The proxy's listener inside the jail could not be made.
    #[error("the jail's network proxy could not be set up: {0}")]
    ProxySetup(std::io::Error),
    /// The proxy could not serve the listener.
    #[error("the jail's network proxy could not start: {0}")]
    ProxyStart(std::io::Error),
    /// The copy of the repository the servers' jails show could not be made (one error shared
    /// by every server).
    #[error("the copy of the repository it would see could not be made: {0}")]
    Snapshot(Arc<std::io::Error>),
    /// A server's jail could not be made.
    #[error("its jail could not be made: {0}")]
    Jail(StartError),
    /// The task making the servers' jails failed (it panicked, or was cancelled).
    #[error("its jail could not be made: {0}")]
    Task(Arc<tokio::task::JoinError>),
    /// A server that needs a jail was given none: a fault in hone.
    #[error("it has no jail")]
    NoJail,
}

impl Error {
    /// A host that refuses what a jail needs is a setting of the machine (`E_POLICY`, as a run's
    /// own jail says); a failing file system is `E_IO`; anything else is a fault in hone.
    pub fn code(&self) -> Code {
        match self {
            Error::ProxySetup(_) | Error::ProxyStart(_) | Error::Snapshot(_) => Code::Io,
            Error::Jail(StartError::Refused(_)) => Code::Policy,
            Error::Jail(StartError::Fault(_)) | Error::Task(_) | Error::NoJail => Code::Internal,
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

    #[tokio::test]
    async fn each_failure_has_its_code_and_its_text() {
        let io = || std::io::Error::other("no room");
        let task = tokio::spawn(std::future::pending::<()>());
        task.abort();
        let join = task.await.unwrap_err();
        let cases = [
            (Error::ProxySetup(io()), Code::Io, "the jail's network proxy could not be set up: no room"),
            (Error::ProxyStart(io()), Code::Io, "the jail's network proxy could not start: no room"),
            (
                Error::Snapshot(Arc::new(io())),
                Code::Io,
                "the copy of the repository it would see could not be made: no room",
            ),
            (
                Error::Jail(StartError::Refused("no userns".into())),
                Code::Policy,
                "its jail could not be made: no userns",
            ),
            (Error::Jail(StartError::Fault("bug".into())), Code::Internal, "its jail could not be made: bug"),
            (Error::NoJail, Code::Internal, "it has no jail"),
        ];
        for (e, code, text) in cases {
            assert_eq!((e.code(), e.to_string().as_str()), (code, text));
            let h = HoneError::from(e);
            assert_eq!((h.code, h.message.as_str()), (code, text));
        }
        let e = Error::Task(Arc::new(join));
        assert_eq!(e.code(), Code::Internal);
        assert!(e.to_string().starts_with("its jail could not be made: task "), "{e}");
    }
}
