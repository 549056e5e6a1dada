//! The event stream: each event is stamped, redacted, appended to `events.jsonl`, optionally
//! written to stdout (`--json`), and kept in memory for the reports built at the end.

use crate::protocol::{Event, EventRecord, SCHEMA_VERSION};
use crate::redact::Redactor;
use std::io::Write;
use std::sync::Mutex;

pub struct Events {
    run_id: String,
    repo: Option<String>,
    redactor: Redactor,
    inner: Mutex<Inner>,
}

struct Inner {
    file: Option<std::io::BufWriter<std::fs::File>>,
    stdout: Option<Box<dyn Write + Send>>,
    records: Vec<EventRecord>,
}

impl Events {
    pub fn new(run_id: String, redactor: Redactor, stdout: Option<Box<dyn Write + Send>>) -> Self {
        Events { run_id, repo: None, redactor, inner: Mutex::new(Inner { file: None, stdout, records: Vec::new() }) }
    }

    /// Tag every event with the repository it belongs to (fleet runs).
    pub fn with_repo(mut self, repo: Option<String>) -> Self {
        self.repo = repo;
        self
    }

    /// Start writing `events.jsonl` at `path`, including the events emitted so far.
    pub fn open_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        let Ok(mut inner) = self.inner.lock() else {
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
        &self.run_id
    }

    fn line(&self, r: &EventRecord) -> String {
        self.redactor.apply(&serde_json::to_string(r).unwrap_or_default())
    }

    pub fn emit(&self, event: Event) {
        let record = EventRecord {
            schema_version: SCHEMA_VERSION,
            ts: now_rfc3339(),
            run_id: self.run_id.clone(),
            repo: self.repo.clone(),
            event,
        };
        let line = self.line(&record);
        tracing::debug!(target: "hone::events", "{line}");
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if let Some(f) = inner.file.as_mut() {
            let _ = writeln!(f, "{line}").and_then(|()| f.flush());
        }
        if let Some(out) = inner.stdout.as_mut() {
            // One write per line, so that concurrent runs (a fleet) never interleave mid-line.
            let _ = out.write_all(format!("{line}\n").as_bytes()).and_then(|()| out.flush());
        }
        inner.records.push(record);
    }

    pub fn records(&self) -> Vec<EventRecord> {
        self.inner.lock().map(|i| i.records.clone()).unwrap_or_default()
    }
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
