//! Logs on stderr through `tracing`, every line through the redactor, then made neutral for the CI
//! runner (`ci_text`): a log message that quotes a model's command or a file name is never a
//! workflow command.

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
    // Each event is made neutral as it is flushed (`RedactingWriter`).
    #[allow(clippy::disallowed_methods)]
    let make = move || RedactingWriter { inner: std::io::stderr(), redactor: redactor.clone(), buf: Vec::new() };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(make)
        .with_target(false)
        // No colours: their escape codes are control characters, which every line has escaped
        // (and a model's text must not drive a terminal either).
        .with_ansi(false)
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
            // Each line of the event, however the message breaks it, neutral for the runner.
            let text = crate::ci_text::lines(&self.redactor.apply(&String::from_utf8_lossy(&self.buf)));
            self.buf.clear();
            // Above a fleet's status line on a terminal, which it clears and draws again.
            let inner = &mut self.inner;
            crate::screen::above_status(|| inner.write_all(text.as_bytes()).and_then(|()| inner.flush()))?;
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
            w.write_all(b"token s3cr3t-value-1234\n  ::error::forged\r::add-mask::x ##[warning]y\n").unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("s3cr3t-value-1234"), "{text}");
        assert_eq!(text, "token [REDACTED]\n  \\::error::forged\\r::add-mask::x ##\\[warning]y\n");
    }
}
