//! Logs on stderr through `tracing`, every line through the redactor.

use crate::redact::Redactor;
use std::io::Write;

/// Progress lines cover what info logs would say, so by default only warnings and errors are
/// logged; `-v` adds debug, `-vv` trace, and `RUST_LOG` overrides both.
pub fn init(verbose: u8, quiet: bool, redactor: Redactor) {
    use tracing_subscriber::EnvFilter;
    let default = match (verbose, quiet) {
        (0, true) => "hone=error",
        (0, false) => "hone=warn",
        (1, _) => "hone=debug",
        _ => "hone=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let make = move || RedactingWriter { inner: std::io::stderr(), redactor: redactor.clone(), buf: Vec::new() };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(make)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Buffers one event, then writes it redacted.
struct RedactingWriter<W: Write> {
    inner: W,
    redactor: Redactor,
    buf: Vec<u8>,
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            // A newline inside a message must not start a GitHub Actions workflow command.
            let text = self.redactor.apply(&String::from_utf8_lossy(&self.buf)).replace("\n::", "\n ::");
            self.buf.clear();
            self.inner.write_all(text.as_bytes())?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_redacted_and_cannot_start_a_workflow_command() {
        let r = Redactor::new();
        r.add("s3cr3t-value-1234");
        let mut out = Vec::new();
        {
            let mut w = RedactingWriter { inner: &mut out, redactor: r, buf: Vec::new() };
            w.write_all(b"token s3cr3t-value-1234\n::error::forged\n").unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("s3cr3t-value-1234"), "{text}");
        assert!(!text.contains("\n::error"), "{text}");
    }
}
