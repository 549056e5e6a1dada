//! SIGINT and SIGTERM: the first cancels the run or fleet (it stops in order and writes its
//! reports); a second exits at once.

use crate::exit;
use tokio_util::sync::CancellationToken;

/// SIGINT/SIGTERM cancel the run (it stops in order and writes its reports); a second exits at once.
pub(super) fn spawn_signal_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            tracing::warn!("cannot install signal handlers");
            return;
        };
        let mut seen = false;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            if seen {
                eprintln!("hone: second signal, exiting now");
                std::process::exit(exit::INTERRUPTED);
            }
            seen = true;
            tracing::warn!("signal received: stopping (a second signal exits at once)");
            cancel.cancel();
        }
    });
}
