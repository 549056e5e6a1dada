//! The event stream: each event is stamped, redacted, appended to `events.jsonl`, optionally
//! written to stdout (`--json`) and rendered as progress on stderr, and kept in memory for the
//! reports built at the end. Each JSON line is neutral for the CI runner (`ci_text::json`: the
//! same JSON, with what the runner could read as a command escaped).

use crate::progress::Progress;
use crate::protocol::{Event, EventRecord, SCHEMA_VERSION};
use crate::redact::Redactor;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A handle on one run's event stream; clones share it.
#[derive(Clone)]
pub struct Events {
    shared: Arc<Shared>,
    /// The try whose events these are (`attempts:`), stamped on each.
    try_no: Option<u32>,
}

struct Shared {
    run_id: String,
    repo: Option<String>,
    redactor: Redactor,
    inner: Mutex<Inner>,
}

struct Inner {
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// The first failure to append to `events.jsonl`; the file is rewritten whole at the end.
    file_error: Option<String>,
    stdout: Option<crate::ci_text::Out>,
    /// The first failure to write the `--json` stream (a closed pipe): the stream stops there.
    stdout_error: Option<String>,
    progress: Option<Progress>,
    records: Vec<EventRecord>,
}

impl Events {
    /// `stdout`: the `--json` stream; `repo`: tag every event with it (fleet runs); `progress`:
    /// render every event for people (stderr).
    pub fn new(
        run_id: String,
        redactor: Redactor,
        stdout: Option<Box<dyn Write + Send>>,
        repo: Option<String>,
        progress: Option<Progress>,
    ) -> Self {
        let stdout = stdout.map(crate::ci_text::Out::new);
        let inner = Inner { file: None, file_error: None, stdout, stdout_error: None, progress, records: Vec::new() };
        Events { shared: Arc::new(Shared { run_id, repo, redactor, inner: Mutex::new(inner) }), try_no: None }
    }

    /// Append events to `file` (a fresh `events.jsonl`), starting with those emitted so far.
    pub fn attach_file(&self, file: std::fs::File) -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(file);
        let Ok(mut inner) = self.shared.inner.lock() else {
            return Ok(());
        };
        for r in &inner.records {
            writeln!(f, "{}", self.line(r))?;
        }
        f.flush()?;
        inner.file = Some(f);
        Ok(())
    }

    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    fn line(&self, r: &EventRecord) -> String {
        crate::ci_text::json(&self.shared.redactor.apply(&serde_json::to_string(r).unwrap_or_default()))
    }

    /// The same stream, each event stamped as try `k`'s.
    pub fn for_try(&self, k: u32) -> Events {
        Events { shared: self.shared.clone(), try_no: Some(k) }
    }

    pub fn emit(&self, event: Event) {
        let record = EventRecord {
            schema_version: SCHEMA_VERSION,
            ts: now_rfc3339(),
            run_id: self.shared.run_id.clone(),
            repo: self.shared.repo.clone(),
            try_no: self.try_no,
            event,
        };
        let line = self.line(&record);
        tracing::trace!(target: "hone::events", "{line}");
        let Ok(mut inner) = self.shared.inner.lock() else {
            return;
        };
        if let Some(f) = inner.file.as_mut()
            && let Err(e) = writeln!(f, "{line}").and_then(|()| f.flush())
        {
            inner.file = None;
            inner.file_error = Some(e.to_string());
        }
        if let Some(out) = inner.stdout.as_mut()
            && let Err(e) = out.json(&line)
        {
            inner.stdout = None;
            inner.stdout_error = Some(e.to_string());
        }
        if let Some(p) = inner.progress.as_mut() {
            p.on_try(record.try_no);
            p.on(&record.event, &self.shared.redactor);
        }
        inner.records.push(record);
    }

    /// Every event so far, as `events.jsonl` text (redacted).
    pub fn jsonl(&self) -> String {
        let Ok(inner) = self.shared.inner.lock() else { return String::new() };
        inner.records.iter().map(|r| self.line(r) + "\n").collect()
    }

    /// What failed to write during the run: appending to `events.jsonl` (rewritten whole at the
    /// end), or the `--json` stream on stdout (stopped at the failure). Each as a warning.
    pub fn write_errors(&self) -> Vec<String> {
        let Ok(i) = self.shared.inner.lock() else { return vec![] };
        let file = i.file_error.as_ref().map(|e| {
            format!("appending to events.jsonl failed during the run ({e}); it was rewritten whole at the end")
        });
        let stdout = i.stdout_error.as_ref().map(|e| {
            format!("writing the --json event stream to stdout failed ({e}); the stream stopped there, events.jsonl has every event")
        });
        file.into_iter().chain(stdout).collect()
    }

    /// Stop writing the live `events.jsonl` (before it is rewritten whole).
    pub fn detach_file(&self) {
        if let Ok(mut i) = self.shared.inner.lock() {
            i.file = None;
        }
    }
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stdout whose reader went away.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_event_stream_is_reported_not_swallowed() {
        let ev = Events::new("r".into(), Redactor::new(), Some(Box::new(ClosedPipe)), None, None);
        ev.emit(Event::RunCompleted { status: "success".into(), exit_code: 0, duration_ms: 1 });
        ev.emit(Event::RunCompleted { status: "success".into(), exit_code: 0, duration_ms: 2 });
        let errors = ev.write_errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("--json event stream") && errors[0].contains("pipe"), "{errors:?}");
        assert_eq!(ev.jsonl().lines().count(), 2, "every event is still kept for events.jsonl");
    }
}
