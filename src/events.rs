//! The event stream: each event is stamped, redacted, appended to `events.jsonl`, optionally
//! written to stdout (`--json`) and rendered as progress on stderr, and kept in memory for the
//! reports built at the end.

use crate::progress::Progress;
use crate::protocol::{Event, EventRecord, SCHEMA_VERSION};
use crate::redact::Redactor;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A handle on one run's event stream; clones share it.
#[derive(Clone)]
pub struct Events {
    shared: Arc<Shared>,
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
    stdout: Option<Box<dyn Write + Send>>,
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
        let inner = Inner { file: None, file_error: None, stdout, progress, records: Vec::new() };
        Events { shared: Arc::new(Shared { run_id, repo, redactor, inner: Mutex::new(inner) }) }
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
        self.shared.redactor.apply(&serde_json::to_string(r).unwrap_or_default())
    }

    pub fn emit(&self, event: Event) {
        let record = EventRecord {
            schema_version: SCHEMA_VERSION,
            ts: now_rfc3339(),
            run_id: self.shared.run_id.clone(),
            repo: self.shared.repo.clone(),
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
        if let Some(out) = inner.stdout.as_mut() {
            // One write per line, so that concurrent runs (a fleet) never interleave mid-line.
            let _ = out.write_all(format!("{line}\n").as_bytes()).and_then(|()| out.flush());
        }
        if let Some(p) = inner.progress.as_mut() {
            p.on(&record.event, &self.shared.redactor);
        }
        inner.records.push(record);
    }

    /// Every event so far, as `events.jsonl` text (redacted).
    pub fn jsonl(&self) -> String {
        let Ok(inner) = self.shared.inner.lock() else { return String::new() };
        inner.records.iter().map(|r| self.line(r) + "\n").collect()
    }

    /// Why appending to `events.jsonl` failed during the run, if it did.
    pub fn file_error(&self) -> Option<String> {
        self.shared.inner.lock().ok().and_then(|i| i.file_error.clone())
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
